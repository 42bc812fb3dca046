/* SPDX-License-Identifier: Apache-2.0 */
/* Reading dump files: a parser for the CANN dump layout ([u64 LE header length][DumpData]
 * [payloads]) that locates every tensor's bytes without loading them, whether the file is
 * plain, an LZ4 frame (.lz4) or an entry of a packed capture; per-tensor statistics streamed
 * in bounded memory, the .npy encoding `adump convert` uses, and a chunk assembler that
 * rebuilds whole files from the callback sink's chunks.
 *
 * One file past 600 lines on purpose: it is the reader's installed API, which programs take
 * with one #include <adump/reader.h> and read as one reference, section by section (sources,
 * the reader, names, packed captures, statistics, .npy, chunks); splitting it would change
 * what they include, which issue 34 keeps as it is. */
#ifndef ADUMP_READER_H
#define ADUMP_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump.h"
#include "adump/adump_err.h"
#include "adump/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest DumpData header the reader accepts; anything longer is reported as corrupt before
 * a byte of it is allocated. Real headers are a few hundred bytes per tensor. */
#define ADUMP_READER_HEADER_MAX ((uint64_t)64 << 20)

/* Most tensors (inputs + outputs + buffers + workspaces), and most attributes, one DumpData
 * header may hold; a header claiming more is refused (ADUMP_ERR_TOO_BIG) before it is parsed.
 * Each costs ~0.6 KB once parsed for as little as two header bytes, so this is what bounds an
 * open dump's memory (~40 MB at most for the tensor table) whatever its header claims; real
 * ops hold a few thousand at most. */
#define ADUMP_READER_TENSORS_MAX 65536u

/* ---- Sources: where a dump's bytes come from ---------------------------------------------- */

/* A source reads bytes at absolute offsets of one logical dump file. Files, memory buffers,
 * LZ4 frames and packed entries are built in; other containers plug in by supplying their
 * own ops. The parser reads the length, then the header, and statistics and .npy output
 * read each payload front to back, so a forward-only source (a compressed stream) needs to
 * restart only when a caller reads backwards. */
struct adump_reader_source_ops {
	/* Read up to @len bytes at @offset into @buf. Return: bytes read (short only at the
	 * end of the data), or a negative code. */
	long (*read_at)(void *ctx, uint64_t offset, void *buf, size_t len);
	/* Optional: a pointer to @len bytes at @offset that stays valid until close, or NULL
	 * when the source cannot map (callers then fall back to read_at). */
	const void *(*map)(void *ctx, uint64_t offset, size_t len);
	/* Release @ctx. */
	void (*close)(void *ctx);
};

struct adump_reader_source;

/**
 * adump_reader_source_create() - wrap caller-supplied ops as a source.
 * @ops:  borrowed; must outlive the source.
 * @ctx:  handed to every op; the source takes ownership (ops->close releases it).
 * @size: total bytes the source holds.
 * @out:  receives the source on success; untouched on failure (ctx is not closed then).
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM. Any thread.
 */
ADUMP_API int adump_reader_source_create(const struct adump_reader_source_ops *ops, void *ctx,
					 uint64_t size, struct adump_reader_source **out);

/**
 * adump_reader_source_open_file() - a source reading a regular file with pread.
 * Return: 0, -errno from open/fstat, -EISDIR/-EINVAL when @path is not a regular file.
 */
ADUMP_API int adump_reader_source_open_file(const char *path, struct adump_reader_source **out);

/**
 * adump_reader_source_open_mem() - a source over a memory buffer.
 * @buf:            the bytes; borrowed until the source is destroyed, unless @take_ownership,
 *                  in which case the source free()s it.
 * Return: 0, -ENOMEM (and then @buf is not freed).
 */
ADUMP_API int adump_reader_source_open_mem(const void *buf, size_t len, bool take_ownership,
					   struct adump_reader_source **out);

/**
 * adump_reader_source_open_lz4() - the content of a standard LZ4 frame (a .lz4 dump file) as
 * a source.
 * @compressed: the frame's bytes; the new source takes ownership, also on failure.
 *
 * The frame must record its content size (adump's frames do; `lz4 --content-size` adds it).
 * Reads decode forward with one block (at most 4 MiB) of output held; a read before that
 * block decodes again from the start. A content size beyond what lz4 can encode from the
 * frame's length is refused before anything is allocated for it.
 * Return: 0; -ADUMP_ERR_CORRUPT for a bad frame header; -ADUMP_ERR_UNSUPPORTED when the content
 * size is not recorded; -ENOMEM. adump_reader_open() does this itself for a path ending in
 * .lz4 or starting with the LZ4 magic number.
 */
ADUMP_API int adump_reader_source_open_lz4(struct adump_reader_source *compressed,
					   struct adump_reader_source **out);

/** adump_reader_source_size() - bytes the source holds. */
ADUMP_API uint64_t adump_reader_source_size(const struct adump_reader_source *src);

/**
 * adump_reader_source_read_at() - read exactly @len bytes at @offset.
 * Return: 0, -ADUMP_ERR_INCOMPLETE if the source ends first, or the op's error.
 */
ADUMP_API int adump_reader_source_read_at(struct adump_reader_source *src, uint64_t offset,
					  void *buf, size_t len);

/** adump_reader_source_destroy() - close and free; NULL does nothing. */
ADUMP_API void adump_reader_source_destroy(struct adump_reader_source *src);

/* ---- The reader -------------------------------------------------------------------------- */

/* One tensor of an open dump: what the header says plus where its bytes are. */
struct adump_reader_tensor {
	struct adump_tensor info;       /* kind, dtype, format, sub_format, shapes, size, ... */
	uint32_t index;                 /* position among the tensors of the same kind */
	uint32_t type;                  /* buffer_type of a buffer, type of a workspace */
	uint64_t offset;                /* absolute offset of the payload in the file */
};

struct adump_reader_header {
	const char *version;
	uint64_t dump_time;
	const char *op_name;
	const char *dfx_message;        /* "" when absent */
	uint32_t attr_count;
	const struct adump_attr *attrs;
	/* Inputs, then outputs, buffers and workspaces: the payload order on disk. */
	uint32_t tensor_count;
	const struct adump_reader_tensor *tensors;
	uint32_t kind_count[4];         /* indexed by enum adump_tensor_kind */
	uint64_t header_bytes;          /* length of the DumpData message */
	uint64_t payload_bytes;         /* sum of the tensor sizes */
	uint64_t file_bytes;            /* 8 + header_bytes + payload_bytes */
};

struct adump_reader;

/**
 * adump_reader_create() - a reader object; it opens one dump at a time and keeps the message
 * of its last failure (adump_reader_error()).
 * Return: 0 or -ENOMEM. The caller destroys it with adump_reader_destroy().
 * A reader is used by one thread at a time; separate readers are independent, so threads
 * that read dumps in parallel each create their own.
 */
ADUMP_API int adump_reader_create(struct adump_reader **out);

/** adump_reader_destroy() - close any open dump and free the reader; NULL does nothing. */
ADUMP_API void adump_reader_destroy(struct adump_reader *r);

/**
 * adump_reader_open() - open and parse a dump file.
 * @r:    a reader; a dump it had open is closed first.
 * @path: the file; borrowed.
 *
 * Reads the 8-byte length and the DumpData header only, then checks that the file's size is
 * exactly 8 + header + the sum of the tensor sizes. Payloads are not read.
 * Return: 0; -errno when the file cannot be opened; -ADUMP_ERR_CORRUPT for a header that is
 * too long or does not parse, -ADUMP_ERR_INCOMPLETE for a file shorter than its header says,
 * -ADUMP_ERR_TOO_BIG for sizes that overflow 64 bits; -ADUMP_ERR_CORRUPT also for a file with
 * bytes after its last payload.
 * On failure adump_reader_error() names the file and the problem. One thread at a time.
 */
ADUMP_API int adump_reader_open(struct adump_reader *r, const char *path);

/**
 * adump_reader_open_mem() - parse a dump held in memory.
 * @buf: borrowed until the reader is closed or reopened. @name labels error messages.
 * Return and contract as adump_reader_open().
 */
ADUMP_API int adump_reader_open_mem(struct adump_reader *r, const void *buf, size_t len,
				    const char *name);

/**
 * adump_reader_open_source() - parse a dump from any source.
 * @src:  the reader takes ownership, also on failure.
 * @name: labels error messages; copied.
 * Return and contract as adump_reader_open().
 */
ADUMP_API int adump_reader_open_source(struct adump_reader *r, struct adump_reader_source *src,
				       const char *name);

/**
 * adump_reader_check() - check the open dump's container checksum: for an LZ4 frame, decode to
 * its end (liblz4 compares the content checksum) and refuse bytes after the frame; for a
 * packed entry, compare the CRC32C of its bytes with the index. Plain files and memory have no
 * checksum and return at once.
 * Return: 0; -ADUMP_ERR_CORRUPT or -ADUMP_ERR_INCOMPLETE (message in adump_reader_error(), the
 * dump stays open); -ADUMP_ERR_CONFIG when no dump is open. One thread at a time.
 */
ADUMP_API int adump_reader_check(struct adump_reader *r);

/** adump_reader_close() - release the open dump, if any. */
ADUMP_API void adump_reader_close(struct adump_reader *r);

/**
 * adump_reader_header() - the parsed header of the open dump.
 * Return: a pointer valid until the reader is closed, reopened or destroyed; NULL when no
 * dump is open.
 */
ADUMP_API const struct adump_reader_header *adump_reader_header(const struct adump_reader *r);

/** adump_reader_error() - message of the last failure, "" if none. Owned by the reader. */
ADUMP_API const char *adump_reader_error(const struct adump_reader *r);

/** adump_reader_name() - the name the open dump was opened under, "" if none. */
ADUMP_API const char *adump_reader_name(const struct adump_reader *r);

/**
 * adump_reader_read() - read bytes of one tensor's payload.
 * @tensor: index into header->tensors.
 * @offset: offset within the payload; @len bytes from there must lie inside it.
 * Return: 0, -ADUMP_ERR_CONFIG for a bad index or range, or the source's error.
 */
ADUMP_API int adump_reader_read(struct adump_reader *r, uint32_t tensor, uint64_t offset,
				void *buf, size_t len);

/**
 * adump_reader_map() - a pointer to a tensor's whole payload when the source is in memory.
 * Return: the pointer (valid until close), or NULL when the source cannot map; use
 * adump_reader_read() then.
 */
ADUMP_API const void *adump_reader_map(struct adump_reader *r, uint32_t tensor);

/**
 * adump_reader_tensor_expected_bytes() - bytes the tensor's shape and dtype call for.
 * @out: receives product(dims) * bits / 8 (rounded up for sub-byte types).
 * Return: 0; -ADUMP_ERR_UNSUPPORTED when the dtype has no fixed width or is unknown;
 * -ADUMP_ERR_TOO_BIG when the product overflows.
 */
ADUMP_API int adump_reader_tensor_expected_bytes(const struct adump_tensor *t, uint64_t *out);

/** adump_reader_kind_name() - "input", "output", "buffer" or "workspace". */
ADUMP_API const char *adump_reader_kind_name(enum adump_tensor_kind kind);

/* ---- Dump file names ---------------------------------------------------------------------- */

/* A CANN dump file's name, read as msaccucmp reads it:
 * <op_type>.<op_name>.<task_id>[.<stream_id>].<timestamp>, where an FFTS+ subtask's name goes
 * on .<task_type>.<context_id>.<thread_id>.<device_id>; a trailing .lz4 (adump's compressed
 * files) is ignored. */
struct adump_reader_name {
	char op_type[256];
	char op_name[256];              /* as ops are matched: adump_reader_name_parse() */
	uint64_t task_id;
	uint64_t stream_id;
	bool has_stream_id;             /* false: <op_type>.<op_name>.<task_id>.<timestamp> */
	uint64_t timestamp;             /* us; 0 where the field msaccucmp reads is not 16 digits */
	bool is_ffts;                   /* an FFTS+ subtask's dump (task type 4) */
	uint64_t subtask;               /* FFTS+: the thread id, or the manual slice; else 0 */
	bool is_skipped;                /* msaccucmp skips it: "_lxslice" left in the op name */
};

/**
 * adump_reader_name_parse() - read a dump file's name (or a path: what follows its last '/').
 * Every field after the op name must be digits. The op name loses a trailing
 * "_lxslice<N>" (one slice of an FFTS+ manual-mode op) and everything up to and including
 * the last "sgt_graph_<N>_". An FFTS+ subtask (task type 4 in the fourth field from the end
 * of a name of more than five) has its timestamp in the fifth field; its subtask is the
 * thread id, or for a manual slice the op name field's last digit.
 * Return: 0; -EINVAL for a name that is not a dump's (op type or op name empty, longer than
 * 255 bytes or not made of [A-Za-z0-9_-]; fewer than four fields; a later field not digits).
 */
ADUMP_API int adump_reader_name_parse(const char *name, struct adump_reader_name *out);

/* ---- Packed captures ---------------------------------------------------------------------- */

/* A packed capture (dump_layout "packed") keeps its dump files in <capture>/packed/: segment
 * files w<k>-<n>.seg and one index w<k>.idx per worker, a line per dump file (a later session
 * into the same directory names its own w<k>.<tag>-<n>.seg and w<k>.<tag>.idx):
 *     <device_id>/<file name> TAB <segment> TAB <offset> TAB <length> TAB <crc32c hex> LF
 * An index is read as a list of entries, each opened like a file. */

enum adump_reader_packed_status {
	ADUMP_PACKED_ENTRY = 0,         /* a complete, well-formed line */
	ADUMP_PACKED_LEFTOVER = 1,      /* the index's last line, without its newline: the line a
					 * crash cut short; not an entry, not an error */
	ADUMP_PACKED_MALFORMED = 2,     /* a complete line that does not parse */
};

struct adump_reader_packed_entry {
	enum adump_reader_packed_status status;
	const char *name;               /* "<device_id>/<file name>"; "" unless ENTRY */
	const char *segment;            /* segment file name in the packed directory */
	uint64_t offset;                /* of the dump file in the segment */
	uint64_t length;
	uint32_t crc32c;
	const char *index_path;         /* the index file holding the line */
	uint32_t line;                  /* 1-based */
	const char *message;            /* LEFTOVER, MALFORMED: what is wrong; "" for ENTRY */
};

struct adump_reader_packed;

/**
 * adump_reader_packed_open() - list the entries of a packed capture.
 * @path: a capture directory holding packed/, the packed directory itself, or one index file.
 * @out:  receives the list on success; the caller closes it with adump_reader_packed_close().
 * Reads no index line yet beyond counting them (adump_reader_packed_line_count()).
 * Return: 0; -ADUMP_ERR_NOT_FOUND when @path holds no index file; -errno; -ENOMEM.
 * One thread at a time per list.
 */
ADUMP_API int adump_reader_packed_open(const char *path, struct adump_reader_packed **out);

/** adump_reader_packed_close() - close the list and its segment files; NULL does nothing. */
ADUMP_API void adump_reader_packed_close(struct adump_reader_packed *p);

/** adump_reader_packed_dir() - the packed directory the list reads. */
ADUMP_API const char *adump_reader_packed_dir(const struct adump_reader_packed *p);

/** adump_reader_packed_line_count() - index lines in all, counted at open. */
ADUMP_API uint64_t adump_reader_packed_line_count(const struct adump_reader_packed *p);

/**
 * adump_reader_packed_next() - the next index line: index files in name order, lines in order.
 * @entry: receives a pointer valid until the next call or close.
 * Return: 1 with an entry (check its status), 0 at the end, -errno when an index cannot be read.
 */
ADUMP_API int adump_reader_packed_next(struct adump_reader_packed *p,
				       const struct adump_reader_packed_entry **entry);

/**
 * adump_reader_open_packed() - open one entry in @r as a dump named "<packed dir>/<entry name>"
 * (adump_reader_name()), the path the file would have had were the directory unpacked there.
 * @p:          the list the entry came from; must outlive the open dump only for this call
 *              (the reader keeps its own descriptor of the segment).
 * @entry:      an ADUMP_PACKED_ENTRY from @p.
 * @is_checked: compare the entry's CRC32C before parsing (reads the entry once more).
 * Return: as adump_reader_open(); -errno when the segment cannot be opened; -ADUMP_ERR_CORRUPT
 * when the range lies beyond the segment's end or the CRC32C differs; -ADUMP_ERR_CONFIG for an
 * entry that is not ADUMP_PACKED_ENTRY. The message is in adump_reader_error().
 */
ADUMP_API int adump_reader_open_packed(struct adump_reader *r, struct adump_reader_packed *p,
				       const struct adump_reader_packed_entry *entry,
				       bool is_checked);

enum adump_reader_packed_file {
	ADUMP_PACKED_FILE_NONE = 0,
	ADUMP_PACKED_FILE_INDEX = 1,    /* w<k>.idx, w<k>.<tag>.idx */
	ADUMP_PACKED_FILE_SEGMENT = 2,  /* w<k>-<n>.seg, w<k>.<tag>-<n>.seg */
};

/**
 * adump_reader_packed_file_kind() - whether a path names a packed capture's index or segment
 * file (by its file name), so directory walks can treat those apart from dump files.
 */
ADUMP_API enum adump_reader_packed_file adump_reader_packed_file_kind(const char *path);

/* ---- Statistics -------------------------------------------------------------------------- */

struct adump_reader_stats {
	uint64_t element_count;
	uint64_t finite_count;          /* elements that entered min/max/mean */
	uint64_t nan_count;
	uint64_t inf_count;             /* +inf and -inf */
	double min;                     /* over finite elements; 0 when there are none */
	double max;
	double mean;
	bool is_integer;                /* integer or bool dtype: min/max are exact below 2^53 */
	int64_t min_int;                /* exact values for signed types; bool and int */
	int64_t max_int;
	uint64_t min_uint;              /* exact values for unsigned types */
	uint64_t max_uint;
};

/**
 * adump_reader_stats_supported() - whether statistics exist for a dtype: float16, bf16,
 * float, double, the 8/16/32/64-bit signed and unsigned integers and bool.
 */
ADUMP_API bool adump_reader_stats_supported(int32_t dtype);

/**
 * adump_reader_tensor_stats() - min, max, mean, NaN and Inf counts of one tensor, read in
 * pieces of at most 1 MiB so any size streams through bounded memory.
 * Return: 0; -ADUMP_ERR_CONFIG for a @tensor past the dump's tensors; -ADUMP_ERR_UNSUPPORTED
 * for a dtype without statistics (see above); -ADUMP_ERR_CORRUPT when the size is not a whole
 * number of elements; or the read error. Message in adump_reader_error().
 */
ADUMP_API int adump_reader_tensor_stats(struct adump_reader *r, uint32_t tensor,
					struct adump_reader_stats *out);

/* ---- .npy encoding ----------------------------------------------------------------------- */

/**
 * adump_reader_npy_descr() - the numpy dtype descriptor a dump dtype is saved as.
 * @dtype: DumpData numbering. bfloat16 maps to '<f4' (values converted, as msaccucmp does);
 * quantized and dual-sub integer types map to their storage integer type.
 * Return: a static string such as "<f2" or "|b1", or NULL when numpy has no such type.
 */
ADUMP_API const char *adump_reader_npy_descr(int32_t dtype);

/**
 * adump_reader_npy_header() - a numpy format 1.0 header, byte for byte what numpy.save
 * writes (numpy >= 1.24 spacing): magic, length, dict padded to 64 bytes.
 * @descr: e.g. "<f4". @dims/@dim_count: C-order shape; 0 dims is a scalar.
 * @buf:   NULL to ask for the size.
 * Return: the header length, or -ADUMP_ERR_TOO_BIG (@cap too small or the header does not fit
 * in format 1.0).
 */
ADUMP_API long adump_reader_npy_header(const char *descr, const uint64_t *dims,
				       uint32_t dim_count, void *buf, size_t cap);

/**
 * adump_reader_save_npy() - write one tensor as a .npy file to @fd: the header for the shape
 * @dims[@dim_count] (C order), then the payload, bfloat16 widened to float32.
 * @dims: product(dims) x element size must equal the tensor's size.
 * Return: 0; -ADUMP_ERR_UNSUPPORTED when numpy has no dtype for it; -ADUMP_ERR_CONFIG when the
 * shape does not match the size; -errno from write(); or the read error. The message is in
 * adump_reader_error(). @fd is borrowed and written sequentially.
 */
ADUMP_API int adump_reader_save_npy(struct adump_reader *r, uint32_t tensor, const uint64_t *dims,
				    uint32_t dim_count, int fd);

/** adump_reader_save_raw() - write a tensor's payload unchanged to @fd. Return: as above. */
ADUMP_API int adump_reader_save_raw(struct adump_reader *r, uint32_t tensor, int fd);

/* A .npy file read into memory (@map, @map_bytes: the whole file; never mapped, so a file cut
 * short afterwards changes nothing): format 1.x or 2.x, C order, little-endian numeric
 * dtypes. */
struct adump_reader_npy {
	void *map;
	size_t map_bytes;
	const void *data;               /* the elements, count of them of the dtype's size */
	uint64_t count;
	int32_t dtype;                  /* DumpData numbering */
	uint64_t dims[ADUMP_MAX_DIMS];
	uint32_t dim_count;
};

/**
 * adump_reader_npy_map() - read the .npy file @path whole and parse its header.
 * Return: 0; -EINVAL / -EISDIR for what is not a regular file (a FIFO is never opened for
 * reading); -ADUMP_ERR_CORRUPT for a file that is not numpy's or whose shape's element count
 * overflows; -ADUMP_ERR_INCOMPLETE when the elements run past the file;
 * or the file is cut short while read; -ADUMP_ERR_UNSUPPORTED for a dtype, order or rank not
 * read; -errno. The message in @msg. On error nothing stays held. adump_reader_npy_unmap() releases it.
 */
ADUMP_API int adump_reader_npy_map(const char *path, struct adump_reader_npy *n, char *msg,
				   size_t cap);
ADUMP_API void adump_reader_npy_unmap(struct adump_reader_npy *n);

/* ---- Chunk assembler --------------------------------------------------------------------- */

struct adump_asm_config {
	uint64_t file_max_bytes;        /* 0: 4 GiB; a chunk ending beyond is refused */
	uint64_t total_max_bytes;       /* 0: 1 GiB; all buffered chunks together */
	uint32_t file_max_count;        /* 0: 4096; incomplete files held at once */
};

/* Offset that means "right after the previous chunk of the same file" (0 for its first). */
#define ADUMP_ASM_APPEND (-1)

struct adump_asm;

/**
 * adump_asm_create() - a chunk assembler.
 * @cfg: NULL for the defaults; borrowed.
 * Return: 0, -ADUMP_ERR_CONFIG, -ENOMEM. The caller destroys it with adump_asm_destroy().
 */
ADUMP_API int adump_asm_create(const struct adump_asm_config *cfg, struct adump_asm **out);

/** adump_asm_destroy() - free the assembler and every buffered chunk; NULL does nothing. */
ADUMP_API void adump_asm_destroy(struct adump_asm *a);

/**
 * adump_asm_feed() - add one chunk of a file.
 * @name:    the file's name; copied.
 * @offset:  absolute offset of the chunk in the file, or ADUMP_ASM_APPEND.
 * @data:    @len bytes; copied (borrowed for the duration of the call).
 * @is_last: this chunk ends the file. Chunks may arrive in any order.
 *
 * A file is complete once its last chunk and every byte before the end of it have arrived.
 * Return: 1 when this chunk completed the file (claim it with adump_asm_take()), 0 when more
 * is needed, or a negative code and the chunk is not stored: -ADUMP_ERR_CORRUPT for a chunk
 * that duplicates or overlaps bytes already held, a second last chunk, bytes beyond the last
 * chunk, a negative offset other than ADUMP_ASM_APPEND or a chunk for a file already
 * complete; -ADUMP_ERR_TOO_BIG when the file or total limit would be exceeded; -ENOMEM.
 * The message is in adump_asm_error(). Any thread (the assembler locks internally).
 */
ADUMP_API int adump_asm_feed(struct adump_asm *a, const char *name, int64_t offset,
			     const void *data, size_t len, bool is_last);

/**
 * adump_asm_feed_chunk() - adump_asm_feed() for a chunk from the callback sink; an offset of
 * UINT64_MAX means append.
 */
ADUMP_API int adump_asm_feed_chunk(struct adump_asm *a, const struct adump_chunk *chunk);

/**
 * adump_asm_take() - claim a complete file's bytes; the assembler forgets the file.
 * @data: receives a malloc'd buffer; the caller frees it with free().
 * Return: 0; -ADUMP_ERR_NOT_FOUND for an unknown name; -ADUMP_ERR_INCOMPLETE when the file is
 * not complete (it stays buffered); -ENOMEM.
 */
ADUMP_API int adump_asm_take(struct adump_asm *a, const char *name, void **data, size_t *len);

/**
 * adump_asm_take_reader() - claim a complete file and open it in @r; the reader owns the
 * bytes until it is closed. Return: as adump_asm_take(), then as adump_reader_open_source()
 * (message in adump_reader_error(r)).
 */
ADUMP_API int adump_asm_take_reader(struct adump_asm *a, const char *name,
				    struct adump_reader *r);

/**
 * adump_asm_finish() - the producer is done with @name: no more chunks will come.
 * Return: 0 and the file stays for adump_asm_take() when complete; otherwise the file is
 * dropped and -ADUMP_ERR_INCOMPLETE returned, the message naming the first missing byte
 * range or the missing last chunk; -ADUMP_ERR_NOT_FOUND for an unknown name.
 */
ADUMP_API int adump_asm_finish(struct adump_asm *a, const char *name);

/** adump_asm_file_count() - files currently held, complete or not. */
ADUMP_API uint32_t adump_asm_file_count(struct adump_asm *a);

/** adump_asm_buffered_bytes() - bytes currently held. */
ADUMP_API uint64_t adump_asm_buffered_bytes(struct adump_asm *a);

/**
 * adump_asm_error() - message of the assembler's most recent failure (from any thread), copied
 * into @buf (NUL-terminated); "" if none. Return: @buf.
 */
ADUMP_API const char *adump_asm_error(struct adump_asm *a, char *buf, size_t cap);

/* ---- torch .pt files (msprobe's dump_tensor_data, adump export --msprobe) --------------- */

/* One tensor torch.save wrote, located in its file. */
struct adump_pt_info {
	int32_t dtype;                  /* enum adump_dtype */
	uint32_t dim_count;
	uint64_t dims[ADUMP_MAX_DIMS];
	uint64_t element_count;
	uint32_t element_bytes;
	uint64_t offset;                /* of the tensor's first byte in the file */
	uint64_t bytes;                 /* element_count * element_bytes */
	bool requires_grad;
	bool is_parameter;              /* saved as torch.nn.Parameter */
	uint64_t file_bytes;
};

/**
 * adump_pt_read() - locate the tensor in a .pt file: torch's zip (records stored, zip64 end
 * records as torch writes them) holding a pickle of torch._utils._rebuild_tensor_v2 (or
 * _rebuild_parameter of one) over one storage of float32/16, bfloat16, float64, int8/16/32/64,
 * uint8, bool or complex64/128, contiguous, from torch 1.13 or 2.x.
 * @is_checked: also compare every record's CRC-32 (reads the whole file).
 * Return: 0; -ADUMP_ERR_CORRUPT / -ADUMP_ERR_INCOMPLETE for a damaged or cut file;
 * -ADUMP_ERR_UNSUPPORTED for anything else torch can save (the message names what was
 * found); -errno; -ENOMEM. @msg names the file. Any thread.
 */
ADUMP_API int adump_pt_read(const char *path, bool is_checked, struct adump_pt_info *out,
			    char *msg, size_t cap);

/* ---- msprobe's layout ------------------------------------------------------------------- */

/**
 * adump_msprobe_verify() - check one msprobe rank directory (<dir>/dump.json, written by
 * msprobe or by adump): dump.json parses and has a "data" object; every data_name it lists
 * is in <dir>/dump_tensor_data/, a whole .pt (zip records inside the file, CRC-32s match)
 * holding one tensor whose dtype and shape are the ones dump.json gives. A statistics dump
 * (no data_name) is checked by its dump.json alone.
 * @dir:  the rank directory, or its dump.json.
 * @fn:   called once per problem: the file concerned and a message naming it; may be NULL.
 * @problem_count: receives the number of problems (dump.json's own included).
 * Return: the number of .pt files checked (>= 0), or -ENOMEM. Any thread.
 */
ADUMP_API long adump_msprobe_verify(const char *dir,
				    void (*fn)(void *arg, const char *file, const char *message),
				    void *arg, uint64_t *problem_count);

/* ---- The loss log: one line per tensor a capture lost (adump.h, ADUMP_LOSS_LOG_NAME) ------ */

struct adump_reader_loss {
	unsigned line;                  /* 1-based line of the log */
	bool is_valid;                  /* false: a malformed line; message says why */
	const char *message;
	const char *file;               /* the dump file, relative to the capture directory */
	uint32_t stream_id;
	const char *op_type;
	const char *op_name;
	const char *kind;               /* "input", "output", "buffer", "workspace", "none" */
	int64_t index;                  /* among the op's tensors of that kind; -1: none */
	uint64_t bytes;
	int cause;                      /* enum adump_loss_cause, or -1 for an unknown name */
	const char *cause_name;
	const char *time;               /* UTC, ISO 8601 */
};

struct adump_reader_losses;

/**
 * adump_reader_losses_open() - read a capture's loss log.
 * @path: the log itself, or the capture directory (<dump_path>/<time_dir>) holding it.
 * Return: 0; -ENOENT when there is no log (nothing was lost); -errno; -ENOMEM.
 */
ADUMP_API int adump_reader_losses_open(const char *path, struct adump_reader_losses **out);

/**
 * adump_reader_losses_next() - the next line. *out stays valid until the next call or close.
 * A line a crash cut short (the last, without its newline) is returned as not valid too.
 * Return: 1, 0 at the end, or -errno from reading.
 */
ADUMP_API int adump_reader_losses_next(struct adump_reader_losses *l,
				       const struct adump_reader_loss **out);

/** adump_reader_losses_close() - NULL does nothing. */
ADUMP_API void adump_reader_losses_close(struct adump_reader_losses *l);

#ifdef __cplusplus
}
#endif
#endif
