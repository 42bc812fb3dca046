/* SPDX-License-Identifier: Apache-2.0 */
/* acl/ internals: the process-wide shim state, the parsed acl.json dump section, and the
 * one native-to-acl error table. Only acl/ and tests/acl include this. */
#ifndef ADUMP_ACL_INT_H
#define ADUMP_ACL_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "acl/acl_dump.h"
#include "aclnnop/aclnn_add.h"
#include "adump/adump.h"
#include "adump/device.h"
#include "common/common.h"

#define ADUMP_ACL_DUMP_PATH_MAX 512     /* acl.json dump_path limit (reference §3) */
#define ADUMP_ACL_STEP_MAX 100          /* dump_step items */
#define ADUMP_ACL_BLACKLIST_MAX 100

enum adump_acl_level { ADUMP_ACL_LEVEL_ALL = 0, ADUMP_ACL_LEVEL_OP, ADUMP_ACL_LEVEL_KERNEL };

enum adump_acl_scene {
	ADUMP_ACL_SCENE_NONE = 0,
	ADUMP_ACL_SCENE_BRIEF,          /* aic_err_brief_dump, lite_exception */
	ADUMP_ACL_SCENE_NORM,           /* aic_err_norm_dump */
	ADUMP_ACL_SCENE_DETAIL,         /* aic_err_detail_dump */
	ADUMP_ACL_SCENE_WATCHER,
};

struct adump_acl_blacklist {
	char *name;
	uint32_t pos_mask;              /* bit i: input i; bit 16+i: output i; 0: whole op */
};

struct adump_acl_list_entry {
	char *model_name;               /* NULL when absent */
	char **layers;                  /* op names; NULL/0 = every op */
	size_t layer_count;
	char **watcher_nodes;
	size_t watcher_count;
	struct adump_acl_blacklist *optype_blacklist;
	size_t optype_blacklist_count;
	struct adump_acl_blacklist *opname_blacklist;
	size_t opname_blacklist_count;
	char *range_begin;              /* opname_range: validated, applies only inside models */
	char *range_end;
};

struct adump_acl_step_range {
	uint64_t first;
	uint64_t last;
};

/* The parsed "dump" object of an acl.json. Owned by whoever parsed it;
 * adump_acl_cfg_fini() frees. */
struct adump_acl_cfg {
	bool has_dump;                  /* a non-empty "dump" object was present */
	char dump_path[ADUMP_ACL_DUMP_PATH_MAX + 1];    /* IPv4 prefix removed */
	struct adump_acl_list_entry *list;
	size_t list_count;
	uint32_t tensor_mask;           /* ADUMP_DUMP_*; dump_mode, default output */
	bool is_op_switch;
	bool is_stats;                  /* dump_data stats */
	uint32_t stats_mask;            /* ADUMP_STAT_* (adump.h): CANN's dump_stats bits */
	struct adump_acl_step_range steps[ADUMP_ACL_STEP_MAX];
	size_t step_count;              /* 0 = every step */
	enum adump_acl_level level;
	bool is_debug;                  /* dump_debug on (overflow dump) */
	enum adump_acl_scene scene;
	uint32_t kernel_data_mask;      /* dump_kernel_data, validated only */
};

/**
 * adump_acl_cfg_parse() - parse and validate JSON text holding an optional "dump" object.
 * @text/@len: the file's bytes, no terminating NUL needed; @origin names them in log lines.
 * Return: 0 (also for no or an empty "dump" object: out->has_dump false);
 * -ADUMP_ERR_CORRUPT for a syntax error (logged with line and column) or nesting beyond
 * 10 levels; -ADUMP_ERR_CONFIG for a rejected key (logged: which key and why); -ENOMEM.
 * On failure @out is left empty (nothing to free).
 */
int adump_acl_cfg_parse(const char *text, size_t len, const char *origin, struct adump_acl_cfg *out);

/** adump_acl_cfg_load() - read @path and parse it. -errno when unreadable. */
int adump_acl_cfg_load(const char *path, struct adump_acl_cfg *out);
void adump_acl_cfg_fini(struct adump_acl_cfg *cfg);

/** Whether the config asks for data (tensor or stats) dump of ops. */
bool adump_acl_cfg_is_data_dump(const struct adump_acl_cfg *cfg);
/** Whether the config enables exception dump (an aic_err_* or lite_exception scene). */
bool adump_acl_cfg_is_exception(const struct adump_acl_cfg *cfg);
/**
 * adump_acl_cfg_select() - which tensors of an op to dump under @cfg at @step.
 * Return: an ADUMP_DUMP_* mask, 0 when the op is not dumped.
 */
uint32_t adump_acl_cfg_select(const struct adump_acl_cfg *cfg, const char *op_type,
			      const char *op_name, uint64_t step, uint32_t input_count,
			      uint32_t output_count);

/**
 * adump_acl_err_from() - the acl code for a native return value (0 / -errno / -ADUMP_ERR_*).
 * Unknown codes map to ACL_ERROR_FAILURE.
 */
aclError adump_acl_err_from(int ret);
/* The aclnn status for a native return value of a device launch: parameter errors
 * (-EINVAL, -ADUMP_ERR_UNSUPPORTED, -ADUMP_ERR_NOT_FOUND) are ACLNN_ERR_PARAM_INVALID,
 * any other failure ACLNN_ERR_RUNTIME_ERROR. */
aclnnStatus adump_aclnn_status_from(int ret);

/* aclDataType (GE numbering) -> enum adump_dtype (DumpData numbering); ADUMP_DT_UNDEFINED
 * for values without a counterpart. */
int32_t adump_acl_dtype_to_native(int32_t acl_dtype);
/* GE format int -> primary OutputFormat; ACL_FORMAT_UNDEFINED -> FORMAT_RESERVED. */
int32_t adump_acl_format_to_native(int32_t acl_format);
/* Lower-case dtype name without "DT_" (op-info JSON), e.g. "float16", into @buf. */
void adump_acl_dtype_json_name(int32_t acl_dtype, char *buf, size_t cap);

/* Process-wide state, split by concern; each part says which lock guards it.
 *
 * Locks, always taken in this order, and never held across a call that waits for a
 * stream's queue or the pipeline, except ctl_lock:
 *   ctl_lock   serialises the calls that change what is captured or tear things down
 *              (aclInit/aclFinalize, device reset, stream create/destroy, the dump config
 *              and callback calls). It is held across session flushes and stream syncs,
 *              and no launch, sync, memory or path call ever takes it.
 *   lock       short sections: the device table, the stream list and each stream's use
 *              counts, the session pointer and the config in force as launches read them.
 *   path_lock, opinfo_lock   leaf locks of the dump paths and of the op-info files.
 * A launch or sync pins its stream (users, dump_users) under lock and calls the device
 * without any lock; whoever detaches or destroys the stream waits, under ctl_lock, for the
 * pins to go (stream_idle). */
struct adump_acl_stream {
	struct adump_acl_stream *next;
	struct adump_dev_stream *dev_stream;
	int32_t device_id;
	bool is_attached;               /* lock; changed under ctl_lock too */
	unsigned users;                 /* lock: launches and syncs running on it */
	unsigned dump_users;            /* lock: launches running with a dump request */
};

typedef int32_t (*adump_acl_callback_fn)(const acldumpChunk *, int32_t);

struct adump_acl_state {
	pthread_mutex_t ctl_lock;
	pthread_mutex_t lock;
	pthread_cond_t stream_idle;     /* with lock: a stream's users or dump_users reached 0 */

	/* Runtime (runtime.c): devices and streams. Read under lock; changed under lock (and
	 * ctl_lock for the stream list and for closing devices). */
	bool is_inited;                 /* ctl_lock */
	struct adump_dev *devs[ADUMP_DEV_MAX];
	unsigned dev_refs[ADUMP_DEV_MAX];
	int32_t current_device;         /* -1: none set */
	struct adump_acl_stream *streams;

	/* Data dump (dump.c): configs and the session. ctl_lock; active and session are
	 * published under lock too, for launches. */
	struct adump_acl_cfg init_cfg;  /* from aclInit's json */
	bool is_mdl_inited;             /* aclmdlInitDump done */
	struct adump_acl_cfg mdl_cfg;   /* from aclmdlSetDump */
	const struct adump_acl_cfg *active;     /* the data-dump config in force, or NULL */
	char time_dir[32];              /* of the config in force */
	struct adump_session *session;
	/* acldumpGetPath() results. Own lock: a dump callback may ask for the path on a worker
	 * thread while ctl_lock is held by a flush waiting for that very callback. */
	pthread_mutex_t path_lock;
	char data_dir[PATH_MAX];        /* acldumpGetPath(DATA_DUMP); "" when none */
	_Atomic(adump_acl_callback_fn) callback;
	_Atomic uint64_t callback_errors;
	_Atomic uint64_t step;
	_Atomic uint32_t op_count;

	/* Exception dump (exception.c): set under ctl_lock, read by anyone. */
	_Atomic bool is_exception;      /* exception dump enabled */
	char exc_base[PATH_MAX];        /* path_lock: exception dump path before /extra-info/... */
	char exc_dir[PATH_MAX];         /* path_lock: acldumpGetPath(AIC_ERR_*) */

	/* Op-info (opinfo.c): everything under opinfo_lock. */
	pthread_mutex_t opinfo_lock;
	bool is_opinfo;                 /* aclopStartDumpArgs active */
	char opinfo_path[PATH_MAX];
	char **opinfo_seen;             /* op-info JSON texts already written */
	size_t opinfo_seen_count;
	uint32_t opinfo_counter[3];     /* per-folder file counters */
};

/* The state, initialised once (pthread_once). */
struct adump_acl_state *adump_acl_state(void);

/* dump.c, with ctl_lock held: rebuild the native session for the config in force and the
 * registered callback, and attach every stream. Return: 0 or a native error. */
int adump_acl_session_apply_locked(struct adump_acl_state *st);
/* dump.c, with ctl_lock held: make @cfg the config in force, in a new time directory, and
 * apply it (adump_acl_session_apply_locked()). On failure no config is in force and @cfg is
 * finalised. Return: 0 or a native error. */
int adump_acl_session_start_locked(struct adump_acl_state *st, struct adump_acl_cfg *cfg);
/* The session's chunk function, on worker threads: native chunk -> acldumpChunk callback. */
int adump_acl_chunk_to_callback(const struct adump_chunk *chunk, void *user);
/* With ctl_lock held: destroy the session (flushes), detaching every stream. */
int adump_acl_session_stop_locked(struct adump_acl_state *st);
/* With ctl_lock held: attach a new stream if a session runs. */
int adump_acl_stream_attach_locked(struct adump_acl_state *st, struct adump_acl_stream *s);
/* With lock held: the op's dump request mask for a launch now. */
uint32_t adump_acl_dump_mask_locked(struct adump_acl_state *st, const char *op_type,
				    const char *op_name);

/* exception.c, ctl_lock held: environment and config -> exception dump settings. */
void adump_acl_exception_setup_locked(struct adump_acl_state *st, const struct adump_acl_cfg *cfg);

/* opinfo.c: record an executed op's op-info JSON files when aclopStartDumpArgs is on. */
struct adump_acl_opinfo_tensor {
	const char *name;
	int32_t acl_dtype;
	int32_t acl_format;
	uint32_t dim_count;
	const int64_t *dims;
};
struct adump_acl_opinfo {
	const char *op_type;
	const struct adump_acl_opinfo_tensor *inputs;
	uint32_t input_count;
	const struct adump_acl_opinfo_tensor *outputs;
	uint32_t output_count;
	const char *attr_name;          /* one float attribute, or NULL */
	double attr_value;
};
/* Takes opinfo_lock; does nothing unless aclopStartDumpArgs is active.
 * Return: 0 or -errno (logged; the op still runs). */
int adump_acl_opinfo_record(struct adump_acl_state *st, const struct adump_acl_opinfo *op);
/* Takes opinfo_lock: forget the op-info state (aclFinalize). */
void adump_acl_opinfo_reset(struct adump_acl_state *st);

/* Resolve a stream handle; NULL when it is not a live stream. lock held. */
struct adump_acl_stream *adump_acl_stream_find_locked(struct adump_acl_state *st, aclrtStream h);
/* The pin a launch or sync holds on its stream, taking lock: the stream, or NULL when @h is
 * not a live stream. Unpin when done (@is_dump: the launch also held a dump pin). */
struct adump_acl_stream *adump_acl_stream_pin(struct adump_acl_state *st, aclrtStream h);
void adump_acl_stream_unpin(struct adump_acl_state *st, struct adump_acl_stream *s, bool is_dump);
/* The calling thread's current device id, or -1. lock held. */
int32_t adump_acl_current_device_locked(struct adump_acl_state *st);
/* The current device (opened), or NULL. lock held. */
struct adump_dev *adump_acl_current_dev_locked(struct adump_acl_state *st);

#endif
