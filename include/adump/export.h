/* SPDX-License-Identifier: Apache-2.0 */
/* adump/export.h: a capture in msprobe's PyTorch layout (step<N>/rank<R>/dump.json,
 * stack.json, construct.json, dump_tensor_data/<data_name>.pt), and the .pt writer it uses. */
#ifndef ADUMP_EXPORT_H
#define ADUMP_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "adump/adump_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * adump_pt_write() - write one tensor as torch.save writes it: an uncompressed zip holding
 * <archive>/data.pkl (pickle protocol 2 rebuilding a contiguous CPU tensor of @dims from the
 * persistent storage "0"), <archive>/data/0 (the raw bytes, 64-byte aligned) and
 * <archive>/version, so torch.load(path, weights_only=True) loads it.
 * @path: the file, created or truncated (mode 0644 before umask).
 * @archive: the zip's top folder (torch uses the file name without .pt); [A-Za-z0-9_.-].
 * @dtype: an enum adump_dtype with a torch storage type (float, float16, bf16, double, int8,
 *         uint8, int16, int32, int64, bool, complex64, complex128).
 * @msg: where a failure is described (may be NULL), @cap its size.
 * Return: 0; -ADUMP_ERR_UNSUPPORTED for a dtype torch has no storage for; -EINVAL for
 * @bytes not matching @dims or a bad archive name; -EFBIG past 4 GiB (no zip64); -errno.
 */
ADUMP_API int adump_pt_write(const char *path, const char *archive, int32_t dtype,
			     const uint64_t *dims, uint32_t dim_count, const void *data,
			     uint64_t bytes, char *msg, size_t cap);

/**
 * adump_pt_check() - check a .pt file as a whole torch zip: every record stored, inside the
 * file and matching its CRC-32, one <archive>/data.pkl.
 * Return: 0; -ADUMP_ERR_CORRUPT (what is wrong in @msg); -errno, -ENOMEM.
 */
ADUMP_API int adump_pt_check(const char *path, char *msg, size_t cap);

/** adump_pt_dtype_name() - torch's name of a dtype ("torch.float32"); NULL if none. */
ADUMP_API const char *adump_pt_dtype_name(int32_t dtype);

enum adump_export_flags {
	ADUMP_EXPORT_MD5 = 1 << 0,      /* each tensor's "md5": CRC-32 of its bytes, as msprobe */
	ADUMP_EXPORT_NO_DATA = 1 << 1,  /* no .pt files: task "statistics" */
};

/**
 * adump_export_msprobe() - convert an adump.torch capture (CANN dump files under
 * @in/step<N>/<rank dir>/...) into msprobe's layout under @out/step<N>/<rank dir>/. Each rank
 * directory's dumps become dump.json entries in dump time order, their tensors .pt files
 * (task "tensor") unless the capture holds statistics (.csv) or ADUMP_EXPORT_NO_DATA; the
 * dfx_message adump.torch wrote says which tensor is which argument; construct.json is the
 * capture's own (adump.torch writes one per step and rank) or, failing it, each op's
 * `module` attribute; stack.json is copied when present, else {}.
 * @in may also be one rank directory, @out then being that rank's output directory.
 * @msg: where a failure is described (may be NULL), @cap its size.
 * Return: the number of entries written (>= 0), or negative: -ENOENT nothing to export,
 * -ADUMP_ERR_CORRUPT an unreadable dump, -errno.
 */
ADUMP_API long adump_export_msprobe(const char *in, const char *out, unsigned flags, char *msg,
				    size_t cap);

#ifdef __cplusplus
}
#endif

#endif
