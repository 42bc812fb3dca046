/* SPDX-License-Identifier: Apache-2.0 */
/* Anomalies without a golden run (`adump scan`): one capture walked in execution order (dump
 * timestamps) for NaN and Inf, and for float16 values at the dtype's limit (|v| >= 65504): the
 * op that made them (outputs non-finite, inputs finite) and every later op they reached
 * (inputs non-finite). Tensor dumps (.lz4, packed captures) and statistics dumps alike. */
#ifndef ADUMP_SCAN_H
#define ADUMP_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adump/adump_err.h"
#include "adump/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

struct adump_scan_config {
	size_t struct_size;                     /* ADUMP_SCAN_CONFIG_INIT sets it */
	unsigned thread_count;                  /* 0: one per online CPU */
	bool is_flat;                           /* this directory only, not its subdirectories */
};

#define ADUMP_SCAN_CONFIG_INIT { .struct_size = sizeof(struct adump_scan_config) }

/* Counts over one side (inputs or outputs) of one dump. A statistics dump has no counts:
 * a non-finite max, min or mean counts as one element. */
struct adump_scan_counts {
	uint64_t nan_count, inf_count;
	uint64_t limit_count;                   /* float16 tensors with |max| or |min| >= 65504 */
};

enum adump_scan_kind {
	/* outputs non-finite, inputs finite, and no op listed before it ran inside it (a module
	 * call whose child made them is ADUMP_SCAN_ENCLOSING): made them */
	ADUMP_SCAN_ORIGIN = 1,
	ADUMP_SCAN_REACHED = 2,                 /* inputs non-finite, made by an op before it */
	ADUMP_SCAN_UNREADABLE = 3,              /* the dump could not be read: see message */
	/* non-finite values first seen in its inputs, made by no captured op: a parameter
	 * (message "first seen in the weight of <op>, made by no captured op"), or an input
	 * before any op listed made some */
	ADUMP_SCAN_ENTERED = 4,
	/* a module call whose inputs were finite and whose outputs are not, made inside it by
	 * the op the message names (listed before it) */
	ADUMP_SCAN_ENCLOSING = 5,
	/* NaN/Inf only in memory no op wrote (torch.empty's output, bernoulli_'s first input):
	 * not an anomaly, not counted */
	ADUMP_SCAN_UNINITIALIZED = 6,
};

/* "origin", "reached", "unreadable", "entered", "enclosing", "uninitialized". */
ADUMP_API const char *adump_scan_kind_name(enum adump_scan_kind kind);

/* One op listed: anomalous or unreadable. */
struct adump_scan_op {
	enum adump_scan_kind kind;
	uint64_t order;                         /* position among all dumps in execution order */
	uint64_t timestamp;
	const char *path;
	const char *op_type;
	const char *op_name;                    /* as the header holds it (the file name's if none) */
	struct adump_scan_counts inputs, outputs;
	const char *first_tensor;               /* "output:0": the first anomalous tensor */
	/* unreadable: why; entered: where they were first seen; enclosing: which op inside made
	 * them; otherwise "" */
	const char *message;
};

struct adump_scan;

/**
 * adump_scan_open() - list the dumps of @path (a directory, a packed capture or one dump).
 * Return: 0; -ADUMP_ERR_NOT_FOUND when it holds no dump; -errno; -ENOMEM. Message in @msg.
 */
ADUMP_API int adump_scan_open(const struct adump_scan_config *cfg, const char *path,
			      struct adump_scan **out, char *msg, size_t cap);

/**
 * adump_scan_run() - read every dump on the configured threads (each tensor streamed in
 * pieces of at most 1 MiB) and list the anomalous ops in execution order. Call once.
 * Return: 0, or -ENOMEM/-errno when threads or buffers cannot be had.
 */
ADUMP_API int adump_scan_run(struct adump_scan *s);

/** adump_scan_dump_count() - dumps listed. */
ADUMP_API uint64_t adump_scan_dump_count(const struct adump_scan *s);

/** adump_scan_bytes() - bytes of dump files read (after adump_scan_run()). */
ADUMP_API uint64_t adump_scan_bytes(const struct adump_scan *s);

/** adump_scan_op_count() - ops listed after adump_scan_run(): anomalous or unreadable. */
ADUMP_API uint64_t adump_scan_op_count(const struct adump_scan *s);

/** adump_scan_op() - op @i in execution order; NULL out of range. Valid until close. */
ADUMP_API const struct adump_scan_op *adump_scan_op(const struct adump_scan *s, uint64_t i);

/** adump_scan_close() - NULL does nothing. */
ADUMP_API void adump_scan_close(struct adump_scan *s);

#ifdef __cplusplus
}
#endif
#endif
