/* SPDX-License-Identifier: Apache-2.0 */
/* common/: what every module shares: logging, fault-injection testpoints, small helpers. */
#ifndef ADUMP_COMMON_H
#define ADUMP_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <ck_stack.h>

#include "adump/adump.h"

#define ADUMP_HIDDEN __attribute__((visibility("hidden")))

/* Log through the sink set with adump_set_log_fn(). Format: "what failed: why". */
ADUMP_HIDDEN void adump_log(enum adump_log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define adump_log_once(level, module, ...)                                       \
	do {                                                                     \
		static atomic_int adump_logged_once_;                            \
		if (!atomic_exchange_explicit(&adump_logged_once_, 1,            \
					      memory_order_relaxed))             \
			adump_log(level, module, __VA_ARGS__);                   \
	} while (0)

/* Logs file:line and the condition at DEBUG, then returns @err. */
#define ADUMP_RETURN_IF(cond, err)                                               \
	do {                                                                     \
		if (cond) {                                                      \
			adump_log(ADUMP_LOG_DEBUG, "check", "%s:%d: %s", __FILE__, \
				  __LINE__, #cond);                              \
			return (err);                                            \
		}                                                                \
	} while (0)

/* "512", "4K", "2M", "1G" (optionally "iB"/"B"), powers of 1024. Return: 0 or -EINVAL. */
ADUMP_HIDDEN int adump_size_parse(const char *s, uint64_t *out);

/* @src into @dst (room @cap, NUL included) with each control byte written \xNN (a tab as a
 * space), as adump_log() writes messages: names from dumps reach a terminal as text, one line.
 * Cut where the next byte does not fit. Return: the length written. */
ADUMP_HIDDEN size_t adump_text_escape(char *dst, size_t cap, const char *src);

/* Testpoints: ADUMP_TESTPOINT("uring.write") is 0, or the negative errno a test armed with
 * adump_testpoint_arm(). Compiled to 0 without ADUMP_ENABLE_TESTPOINTS. */
#ifdef ADUMP_ENABLE_TESTPOINTS
ADUMP_HIDDEN int adump_testpoint_hit(const char *name);
#define ADUMP_TESTPOINT(name) adump_testpoint_hit(name)
#else
#define ADUMP_TESTPOINT(name) 0
#endif
/* Arm @name to fail with @err on its @nth hit (1-based); @sticky 1: and every later hit;
 * @sticky 2: on every @nth hit. */
ADUMP_API void adump_testpoint_arm(const char *name, int err, unsigned nth, int sticky);
ADUMP_API void adump_testpoint_disarm_all(void);

/* A byte of an op type or name as a dump file name holds it: CANN replaces ' ', '.', '/' and
 * '\\'; adump also every other byte outside [A-Za-z0-9_-] (control bytes, '<', UTF-8), so
 * every file it writes matches the msaccucmp-compatible name pattern readers use. */
static inline char adump_name_char(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '_' || c == '-')
		return c;
	return '_';
}

/* FNV-1a (64-bit) of @len bytes at @data: a hash for tables in memory, and the mapping of
 * long names that `adump convert` writes (its values must stay as they are). */
static inline uint64_t adump_fnv1a64(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static inline uint64_t adump_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tests make dump timestamps reproducible with adump_testpoint_clock_set(). */
extern ADUMP_HIDDEN _Atomic uint64_t adump_fake_clock_us;
ADUMP_API void adump_testpoint_clock_set(uint64_t start_us);

/* Wall-clock microseconds: dump_time and the timestamp in file names. */
static inline uint64_t adump_wall_us(void)
{
	struct timespec ts;

	if (__builtin_expect(atomic_load_explicit(&adump_fake_clock_us, memory_order_relaxed) != 0, 0))
		return atomic_fetch_add_explicit(&adump_fake_clock_us, 1, memory_order_relaxed);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Describes one tensor for a dump header: @dst zeroed, then @kind, @dtype, @format, the shape
 * (@dim_count dims, and the origin shape @orig_dims, or the same as the shape when
 * @orig_dim_count is 0), @data's address, @bytes and @arg_index. Counts must be
 * <= ADUMP_MAX_DIMS and dims >= 0: the callers check them. */
ADUMP_HIDDEN void adump_tensor_describe(struct adump_tensor *dst, enum adump_tensor_kind kind,
					uint32_t arg_index, int32_t dtype, int32_t format,
					uint32_t dim_count, const int64_t *dims,
					uint32_t orig_dim_count, const int64_t *orig_dims,
					const void *data, uint64_t bytes);

/* The next stream id, 1, 2, ...: device and host streams draw from this one process-wide
 * counter, so no two streams of a session share an id (file names carry it). Any thread. */
ADUMP_HIDDEN uint32_t adump_stream_id_next(void);

/* write() all of @buf, retrying short writes and EINTR. Return: 0 or -errno. */
ADUMP_HIDDEN int adump_write_all(int fd, const void *buf, size_t len);

/* Opening a file to read (common/openfile.c). Neither call blocks on a FIFO, and both refuse
 * what is not a regular file: -EISDIR for a directory, -EINVAL for a FIFO, socket or device.
 * Return: the descriptor (O_RDONLY | O_CLOEXEC, blocking) or -errno.
 * adump_open_regular(): @path is one the user gave, and may lead anywhere.
 * adump_open_beneath(): @name is one a capture gave (a data_name, an index's segment), a
 * path relative to @dir that must stay beneath it: an absolute path, a ".." component or a
 * symlink resolving outside is -EXDEV (openat2 RESOLVE_BENEATH where the kernel has it; else
 * every symlink is refused). adump_openat_beneath(): the same from a directory descriptor. */
ADUMP_HIDDEN int adump_open_regular(const char *path);
ADUMP_HIDDEN int adump_open_beneath(const char *dir, const char *name);
ADUMP_HIDDEN int adump_openat_beneath(int dirfd, const char *name);
/* The directory @rel (a relative path; "" for @dirfd's own) beneath @dirfd, opened O_PATH
 * with no component a symlink (a writer's: it never writes through a link).
 * Return: the descriptor, -ELOOP for a link on the way, -EXDEV for a name that leaves
 * @dirfd ("..", absolute), or -errno. */
ADUMP_HIDDEN int adump_dir_open_nolink(int dirfd, const char *rel);
/* Whether @name is relative and has no ".." component (no file system access). */
ADUMP_HIDDEN bool adump_name_is_beneath(const char *name);
/* A message for what the calls above return: the refusals in words, else adump_strerror(). */
ADUMP_HIDDEN const char *adump_open_strerror(int ret);

/* mkdir -p; existing directories are fine. Return: 0 or -errno. */
ADUMP_HIDDEN int adump_mkdir_p(const char *path, unsigned mode);

/* adump_mkdir_p(), and the last component must then be a directory itself, not a link to
 * one (a link planted in a shared directory would lead writes elsewhere).
 * Return: 0, -ENOTDIR for a link or another kind of file, or -errno. */
ADUMP_HIDDEN int adump_mkdir_own(const char *path, unsigned mode);

/* A file that appears under its name only once it is complete. Where the filesystem has
 * them it is an unnamed file (O_TMPFILE) linked in by adump_pubfile_close(): one directory
 * entry per file, and nothing partial under any name, even after a crash. Elsewhere it is
 * "<path>.part", renamed at the end. */
struct adump_pubfile {
	int fd;
	int dir_fd;             /* its directory (adump_pubfile_openat()), or -1: by path */
	bool is_unnamed;
};

/**
 * adump_pubfile_open() - start the file that will be @path (its directory must exist).
 * @flags: extra open flags (O_DIRECT); @mode: as for open(2).
 * Return: 0 and @pf->fd open for writing, or -errno.
 */
ADUMP_HIDDEN int adump_pubfile_open(struct adump_pubfile *pf, const char *path, int flags,
				    unsigned mode);

/* adump_pubfile_open() of @name (one component) in the directory @dir_fd, which @pf takes
 * (closed at the close, or now if the open fails). */
ADUMP_HIDDEN int adump_pubfile_openat(struct adump_pubfile *pf, int dir_fd, const char *name,
				      int flags, unsigned mode);

/**
 * adump_pubfile_close() - close the file and, if @status is 0, publish it as @path (replacing
 * a file of that name). Otherwise, or if publishing fails, the data is kept for inspection as
 * "<path><keep_suffix>" (@keep_suffix NULL: removed), never under @path.
 * Return: 0 once published, else @status or the error that stopped publishing.
 */
ADUMP_HIDDEN int adump_pubfile_close(struct adump_pubfile *pf, const char *path, int status,
				     const char *keep_suffix);

/* A result file (common/outfile.c): written under a temporary name of its own in its
 * directory (O_CREAT | O_EXCL | O_NOFOLLOW), synced and renamed to its name only once whole,
 * so that an error leaves no partial file under the name and a link planted there is
 * replaced, never written through. Not for the capture's hot path (it syncs). */
struct adump_outfile {
	int dir_fd;                     /* borrowed */
	int fd;
	FILE *f;                        /* adump_outfile_stream()'s, or NULL */
	char tmp[32];
};
/* Publish only under a name nothing has yet (-EEXIST keeps the file for another name). */
#define ADUMP_OUTFILE_NEW 1u
/* Neither the file nor its directory synced: still whole under its name or absent, but not
 * made durable (a tool restoring thousands of files: adump unpack). */
#define ADUMP_OUTFILE_NOSYNC 2u
/* Start a file in the directory @dir_fd (borrowed until published or discarded), @mode as
 * for open(2). Return: 0 and @of->fd open for writing, or -errno. */
ADUMP_HIDDEN int adump_outfile_open(struct adump_outfile *of, int dir_fd, unsigned mode);
/* A stdio stream on @of->fd (owned by @of: close it with publish or discard); NULL on ENOMEM. */
ADUMP_HIDDEN FILE *adump_outfile_stream(struct adump_outfile *of);
/* Flush, sync and close the file, then with @status 0 rename it to @name in its directory
 * (replacing what is there; with ADUMP_OUTFILE_NEW only if nothing is). On any error the
 * file is removed, but for -EEXIST with ADUMP_OUTFILE_NEW, which leaves it for another call
 * with another name. Return: 0, @status, or the -errno of the write, sync, close or rename. */
ADUMP_HIDDEN int adump_outfile_publish(struct adump_outfile *of, int status, const char *name,
				       unsigned flags);
/* Close and remove the file unpublished. Safe after a publish (then it does nothing). */
ADUMP_HIDDEN void adump_outfile_discard(struct adump_outfile *of);
/* The directory @rel below @dir_fd, each of its components made if missing and entered
 * without following a link ("..": -EINVAL; a link or a file in the way: -ENOTDIR).
 * Return: a new descriptor of it (caller closes), or -errno. */
ADUMP_HIDDEN int adump_dir_open_new(int dir_fd, const char *rel, unsigned mode);
/* Make @name (a name derived from an op name) one path component in place: '/' becomes '_',
 * and "." or ".." "_" or "_.": what a name from a dump may hold never leaves its directory. */
ADUMP_HIDDEN void adump_name_component(char *name);
/* adump_pt_write() (reader/pt.c) of the file @name (one path component) in the directory
 * @dir_fd, written as a struct adump_outfile is: a link planted at @name is replaced, never
 * written through, and an error leaves nothing under @name. */
ADUMP_HIDDEN int adump_pt_write_at(int dir_fd, const char *name, const char *archive,
				   int32_t dtype, const uint64_t *dims, uint32_t dim_count,
				   const void *data, uint64_t bytes, char *msg, size_t cap);

/* float16 / bfloat16 bit patterns to float, exactly (common/types.c): the one conversion
 * the capture's statistics and the reader share. */
ADUMP_HIDDEN float adump_half_to_float(uint16_t h);
static inline float adump_bf16_to_float(uint16_t b)
{
	union {
		uint32_t u;
		float f;
	} v = { .u = (uint32_t)b << 16 };

	return v.f;
}

/* ---- Tensor statistics (common/tstats.c) ----
 *
 * One tensor's running statistics, the one algorithm behind both the capture's statistics
 * files (pipeline/stats.c, CANN's device rules) and the reader's per-tensor statistics
 * (reader/stats.c, finite values only): each reads what its rules need from the same state.
 * Whole elements are fed in order, little-endian, in feeds of any size. Floating types are
 * summed in ADUMP_TSTATS_LANES lanes (element i of the tensor in lane i % LANES), each block of
 * ADUMP_TSTATS_BLOCK elements folded into a compensated total: the lanes follow the element's
 * index, not the feed, so no result depends on how the elements were split, nor on whether the
 * vector (AVX2) or the portable path ran (tstats.c). */
#define ADUMP_TSTATS_LANES 16
#define ADUMP_TSTATS_BLOCK 2048
enum adump_tstats_kind {
	ADUMP_TSTATS_NONE = 0,                  /* no statistics for this dtype */
	ADUMP_TSTATS_F16, ADUMP_TSTATS_BF16, ADUMP_TSTATS_F32, ADUMP_TSTATS_F64,
	ADUMP_TSTATS_SINT, ADUMP_TSTATS_UINT, ADUMP_TSTATS_BOOL,
};

struct adump_tstats {
	enum adump_tstats_kind kind;
	uint32_t elem_bytes;
	uint64_t count;                         /* elements fed */
	uint64_t nan_count;                     /* floating types only */
	uint64_t pos_inf_count;
	uint64_t neg_inf_count;
	double first;                           /* floating types: the first element */
	double max, min;                        /* floating types: over finite elements */
	int64_t smax, smin;                     /* signed integers: exact */
	uint64_t umax, umin;                    /* unsigned integers and bool: exact */
	double sum, compensation;               /* finite elements, compensated */
	double sum_squares;                     /* every element */
	/* From the first non-finite element on, the sum of every element as well. */
	bool has_nonfinite;
	double all_sum, all_compensation;
	/* The fields above are whole after every adump_tstats_add(); these are tstats.c's own:
	 * the open block's lane sums, the blocks before it, and the first zero seen (its sign
	 * decides a max or min of zero, as the first of equal values wins). */
	bool has_zero;
	double first_zero;
	double block_sum, block_compensation, block_squares;
	double lane_sum[ADUMP_TSTATS_LANES];
	double lane_squares[ADUMP_TSTATS_LANES];
};

/* The kind of statistics @dtype (ADUMP_DT_*) has, and its element size through @elem_bytes
 * (NULL ok). ADUMP_TSTATS_NONE: none. */
ADUMP_HIDDEN enum adump_tstats_kind adump_tstats_kind_of(int32_t dtype, uint32_t *elem_bytes);
/* Start @s for elements of @dtype. */
ADUMP_HIDDEN void adump_tstats_init(struct adump_tstats *s, int32_t dtype);
/* Add @count whole elements at @p (unaligned ok): the vector path where the CPU has one. */
ADUMP_HIDDEN void adump_tstats_add(struct adump_tstats *s, const void *p, size_t count);
/* The same with the portable path only (tests compare the two): identical results. */
ADUMP_HIDDEN void adump_tstats_add_portable(struct adump_tstats *s, const void *p, size_t count);
/* adump_tstats_add(), the @count elements' bytes also copied to @dst, with non-temporal
 * stores (adump_copy_nt()); float32 on the AVX2 path in one pass (read once). The same
 * statistics, bit for bit. */
ADUMP_HIDDEN void adump_tstats_add_copy(struct adump_tstats *s, const void *p, size_t count,
					void *dst);
/* memcpy() with non-temporal stores, then a store fence. */
ADUMP_HIDDEN void adump_copy_nt(void *dst, const void *src, size_t len);
/* Whether adump_tstats_add() has a vector path on this CPU. */
ADUMP_HIDDEN bool adump_tstats_has_simd(void);
static inline uint64_t adump_tstats_finite_count(const struct adump_tstats *s)
{
	return s->count - s->nan_count - s->pos_inf_count - s->neg_inf_count;
}
/* Mean of the finite elements; 0 without any. */
ADUMP_HIDDEN double adump_tstats_finite_mean(const struct adump_tstats *s);
/* CANN's rules (floating types): max and min start at the first element and take later ones
 * that compare greater/less, so a NaN never replaces a number and a first NaN stays; the
 * mean covers every element, except that infinities of one sign only make it that infinity.
 * With no element: 0. */
ADUMP_HIDDEN double adump_tstats_cann_max(const struct adump_tstats *s);
ADUMP_HIDDEN double adump_tstats_cann_min(const struct adump_tstats *s);
ADUMP_HIDDEN double adump_tstats_cann_mean(const struct adump_tstats *s);
/* The L2 norm of every element. */
ADUMP_HIDDEN double adump_tstats_l2norm(const struct adump_tstats *s);

/* ---- Uninitialized memory (common/uninit.c) ---- */

/* What an op's dump holds that no op wrote: nothing; its outputs (torch.empty, empty_like,
 * empty_strided, new_empty, ...); or its first input, which it overwrites without reading
 * (bernoulli_, uniform_, normal_, fill_, zero_, copy_, ...). Known by the aten (or msprobe
 * API) name: "Aten.<api>..." / "Torch." / "Tensor." entries, or a CANN dump whose file name's
 * op name is "Aten_<op type>_...". */
enum adump_uninit {
	ADUMP_UNINIT_NONE,
	ADUMP_UNINIT_OUTPUTS,
	ADUMP_UNINIT_FIRST_INPUT,
};

ADUMP_HIDDEN enum adump_uninit adump_uninit_of(const char *op_type, const char *op_name);
/* Whether tensor @index of @kind of that op holds memory no op wrote. */
ADUMP_HIDDEN bool adump_is_uninit(const char *op_type, const char *op_name,
				  enum adump_tensor_kind kind, uint32_t index);

/* ---- Op records and the free list they come from (common/op_rec.c, common/freelist.c) ---- */

/* A free list of objects up to obj_bytes that one owner (a thread, or whoever holds a lock)
 * takes and any thread gives back (freelist.c). Larger objects are plain allocations. */
struct adump_freelist {
	ck_stack_t returned;                    /* given back, by any thread */
	ck_stack_entry_t *spare;                /* the owner's, taken from returned at once */
	size_t obj_bytes;
};

ADUMP_HIDDEN void adump_freelist_init(struct adump_freelist *fl, size_t obj_bytes);
/* Owner only; @fl NULL: a plain allocation. Return: @bytes of memory, or NULL. */
ADUMP_HIDDEN void *adump_freelist_alloc(struct adump_freelist *fl, size_t bytes);
/* Any thread: gives an object from adump_freelist_alloc() back to its list. NULL ok. */
ADUMP_HIDDEN void adump_freelist_free(void *obj);
/* Owner, once every object has been given back: frees them all. */
ADUMP_HIDDEN void adump_freelist_fini(struct adump_freelist *fl);

struct adump_op_rec;

/* What a producer whose records reference its own memory (adump_rec.ext) hears back about
 * one file, on the consumer's thread. */
struct adump_op_hooks {
	/* Once every byte has been written, before the file is published; NULL ok. Return 0,
	 * or a negative code that fails the file. */
	int (*check)(struct adump_op_rec *rec);
	/* From adump_op_rec_destroy(): nothing reads the producer's memory any more;
	 * rec->status says whether the file was published. */
	void (*release)(struct adump_op_rec *rec);
};

/* The metadata of one dump file, created by the producer when a dumped op has run and owned
 * by the consumer from its first record on; freed with adump_op_rec_destroy() once the file
 * is complete. `op` points into the record's own storage. */
struct adump_journal_slot;

struct adump_op_rec {
	struct adump_op op;
	uint64_t payload_bytes;                 /* Σ tensors[i].bytes */
	_Atomic uint32_t is_failed;             /* set by the producer on a drop */
	/* The payload range of the producer's first dropped chunk (loss_len 0: none), for the
	 * consumer's loss accounting; written before the LAST record is committed. */
	uint64_t loss_offset;
	uint64_t loss_len;
	void *priv;                             /* consumer's per-file state */
	/* The packed header (8-byte length + DumpData, malloc'd) when the producer needed it
	 * (direct I/O: its length places the chunks), or NULL. The consumer may take it
	 * (and set NULL); adump_op_rec_destroy() frees what is left. */
	void *header;
	size_t header_len;
	const struct adump_op_hooks *hooks;     /* NULL: the producer wants no word back */
	void *hook_data;                        /* the producer's bytes for its hooks, or NULL */
	/* The directory the file goes to instead of <session dir>: <dir>/<device_id>/<name>
	 * (made by the producer beforehand), or NULL. Borrowed from the producer, which keeps it
	 * unchanged until every record pointing at it is consumed (adump_host_stream_set_dir()
	 * changes it only when the stream is idle). */
	const char *dir;
	/* Statistics content: one adump_tstats per tensor of op, computed by the producer from
	 * the tensors in place (malloc'd; adump_op_rec_destroy() frees it), or NULL. With them
	 * the producer posts no payload: one empty record (adump_port_post_sp()), unless
	 * has_payload (tensor content whose output writes statistics too, msprobe's dump.json:
	 * computed from the tensor where it is hot, not read again by the worker). */
	struct adump_tstats *tstats;
	bool has_payload;
	/* Window mode: the producer copied the payload into the session's window at hand-over
	 * (its entry, NULL when the window could not hold it) and computed tstats on the way;
	 * the consumer takes the entry instead of holding the payload itself. */
	bool is_window_held;
	void *window_entry;
	/* Set by the consumer before destroying the record: 0 once the file is published,
	 * otherwise why it was not (-ADUMP_ERR_WRITE until the consumer says otherwise). */
	int status;
	/* The hand-over journal's slot for this dump (common/journal.h), or NULL: marked done
	 * by adump_op_rec_destroy(), once the consumer has finished the file. */
	struct adump_journal_slot *journal_slot;
	/* With journal_slot: its producer's count of dumps a consumer holds past their records
	 * (the packed layout's batches and queued index lines), which bounds them. */
	_Atomic uint32_t *journal_held;
};

/* adump_op_copy_size() - the bytes adump_op_copy() needs beside the struct: tensors,
 * attributes and strings. adump_op_copy() - deep-copy @op into *@dst, everything it points
 * to into @mem (adump_op_copy_size() bytes, 8-byte aligned). Return: its payload bytes. */
ADUMP_HIDDEN size_t adump_op_copy_size(const struct adump_op *op);
ADUMP_HIDDEN uint64_t adump_op_copy(struct adump_op *dst, const struct adump_op *op, void *mem);

/**
 * adump_op_rec_create() - deep-copy an op descriptor into one allocation, from @fl (its
 * owner calling; NULL: malloc).
 * Return: 0, -ADUMP_ERR_CONFIG for an invalid op (adump_op_check()), -ENOMEM.
 */
ADUMP_HIDDEN int adump_op_rec_create(const struct adump_op *op, struct adump_freelist *fl,
			struct adump_op_rec **out);
/**
 * adump_op_rec_create_hooked() - adump_op_rec_create() for a producer that wants to hear
 * about the file (struct adump_op_hooks): @hook_bytes of @hook_data are copied into the
 * record (rec->hook_data, 16-byte aligned). @hooks is borrowed for the record's life.
 */
ADUMP_HIDDEN int adump_op_rec_create_hooked(const struct adump_op *op, struct adump_freelist *fl,
			       const struct adump_op_hooks *hooks, const void *hook_data,
			       size_t hook_bytes, struct adump_op_rec **out);
/* Consumer: calls the hooks' release (rec->status set), frees the header, then the record.
 * NULL ok. */
ADUMP_HIDDEN void adump_op_rec_destroy(struct adump_op_rec *rec);
/* Consumer, once every byte of the file is written and before it is published: the hooks'
 * check. Return: 0 (also without a check), or the check's negative code. */
ADUMP_HIDDEN int adump_op_rec_check(struct adump_op_rec *rec);

/* ---- Sleeping and waking (common/wake.c) ----
 *
 * Every sleep and wake-up of the capture path follows this one protocol, and every one of
 * them goes through the functions below: the ring (ring/) never sleeps, wakes or counts;
 * it only exposes the flags and wait points named here. Each pairing is a Dekker: the
 * sleeper announces its sleep with a seq_cst store (or add), then looks once more; the
 * waker publishes its work, issues a seq_cst fence (adump_wake_fence()), then reads the
 * announcement. Either the sleeper's last look sees the work, or the waker sees the sleeper.
 * Every sleep is bounded (a futex wait by ADUMP_WAIT_SLICE_NS, a worker's by its writer's
 * wait), so a lost wake-up costs a time slice, never a hang.
 *
 * 1. The worker (consumer) sleeps, producers wake it. A worker that found all its channels
 *    empty stores doorbell.is_sleeping = 1 (seq_cst), looks at its channels once more and
 *    only then waits on doorbell.event_fd (through its writer, so completions wake it too:
 *    pipeline/worker.c). A producer commits a record (the ring's release), then
 *    adump_doorbell_ring(): the fence, then if is_sleeping it clears it and writes the
 *    eventfd. A deferring producer (adump_port_defer_sp()) rings once per burst instead; a
 *    host stream's small records once for several (adump_port_defer_small_sp()), and a
 *    thread waiting for the channel to be idle rings for what is owed.
 *
 * 2. A producer sleeps, the worker wakes it. A producer with no free buffer (on-full block)
 *    waits in adump_waitpoint_wait() on its channel's producer wait point
 *    (adump_chan_producer_wait(), one sleeper: producer/port.c): it spins briefly, then
 *    stores sleeper_count = 1 (seq_cst), takes one more look at the free ring and sleeps on
 *    the futex word seq (read before the store). The worker gives buffers back (the free
 *    ring's release), issues the fence (once per drained batch: adump_chan_defer_sc()
 *    and adump_chan_flush_sc(), ring/chan.c), then if the producer is announced
 *    and a batch of buffers is free (ring/chan.c's has_free_batch()) adump_waitpoint_wake()
 *    clears the announcement, bumps seq and wakes it: one system call per sleep.
 *
 * 3. Idle waiters (stream sync, flush, detach) sleep, the worker wakes them. They wait in
 *    adump_waitpoint_wait() on the channel's idle wait point (any number of sleepers, each
 *    adding itself to sleeper_count) until adump_chan_is_idle() (released == committed,
 *    seq_cst loads). The worker publishes released (release), and after the same fence as
 *    in 2, if sleeper_count is set, bumps seq and wakes them all. */

#define ADUMP_WAIT_SLICE_NS 10000000u   /* a sleeper looks again every 10 ms */

/* Consumer wake-up: a worker sleeps on its doorbell when all of its channels are empty. */
struct adump_doorbell {
	int event_fd;                           /* eventfd the worker waits on */
	_Atomic uint32_t is_sleeping;           /* worker only stores; producers load */
};

ADUMP_HIDDEN int adump_doorbell_init(struct adump_doorbell *db);
ADUMP_HIDDEN void adump_doorbell_fini(struct adump_doorbell *db);
/* Any thread: wakes the worker if it sleeps (protocol 1). */
ADUMP_HIDDEN void adump_doorbell_ring(struct adump_doorbell *db);
/* Any thread: makes the worker's next wait (or the current one) return, asleep or not. */
ADUMP_HIDDEN void adump_doorbell_wake(struct adump_doorbell *db);

/* Where threads sleep until another thread makes their condition true (protocols 2, 3). */
struct adump_waitpoint {
	_Atomic uint32_t seq;                   /* futex word: bumped by each wake-up */
	_Atomic uint32_t sleeper_count;         /* announced sleepers; with one sleeper, 0 or 1 */
	bool is_single;                         /* one sleeper: the waker clears its announcement */
};

static inline void adump_waitpoint_init(struct adump_waitpoint *wp, bool is_single)
{
	atomic_init(&wp->seq, 0);
	atomic_init(&wp->sleeper_count, 0);
	wp->is_single = is_single;
}

/**
 * adump_waitpoint_wait() - return once @is_ready(@arg) is true: tries it @spin_count times
 * with a pause in between, then announces the sleep, tries once more and sleeps on @wp,
 * trying again after each wake-up or time slice. @is_ready may have an effect (take a
 * buffer); it is called until it returns true and never after.
 */
ADUMP_HIDDEN void adump_waitpoint_wait(struct adump_waitpoint *wp, unsigned spin_count,
				       bool (*is_ready)(void *arg), void *arg);

/* Waker, after adump_wake_fence(): whether anyone announced a sleep on @wp. */
static inline bool adump_waitpoint_is_waited(struct adump_waitpoint *wp)
{
	return atomic_load_explicit(&wp->sleeper_count, memory_order_relaxed) != 0;
}

/* Waker, after adump_wake_fence(): wakes whoever sleeps on @wp (none: nothing). */
ADUMP_HIDDEN void adump_waitpoint_wake(struct adump_waitpoint *wp);

/* The waker's seq_cst fence, between publishing its work and reading the announcements. */
ADUMP_HIDDEN void adump_wake_fence(void);


/* ---- A growable byte buffer (common/buf.c) ---- */
struct adump_buf {
	unsigned char *p;                       /* free() it; a '\0' follows the bytes */
	size_t len, cap;
	int err;                                /* -ENOMEM once an append failed */
};
/* Append @n bytes of @d; after a failure, nothing (b->err says so). */
ADUMP_HIDDEN void adump_buf_put(struct adump_buf *b, const void *d, size_t n);
ADUMP_HIDDEN void adump_buf_str(struct adump_buf *b, const char *s);
/* The @n strings @parts one after another in @dst, cut to @cap - 1 bytes and terminated
 * (@cap > 0), as snprintf("%s%s...") writes them, without printf: in a process that loaded
 * libquadmath (torch's) glibc formats every printf through its slower positional path, and
 * names and paths are joined several times a dump. Return: the whole length (>= @cap: cut). */
ADUMP_HIDDEN size_t adump_strjoin(char *dst, size_t cap, const char *const *parts, size_t n);
/* @base followed by @suffix into @dst (adump_strjoin()). Return: 0, or -ENAMETOOLONG (@dst
 * holds the cut name). */
ADUMP_HIDDEN int adump_path_with(char *dst, size_t cap, const char *base, const char *suffix);
/* @v in decimal, somewhere in @out (room for any 64-bit value): the returned pointer. */
ADUMP_HIDDEN const char *adump_decimal(uint64_t v, char out[24]);

/* ---- torch's .pt files (common/pt.c) ----
 *
 * The bytes of a .pt file around its tensor's: the pipeline's msprobe output writes the
 * tensor's bytes from its staging buffers at data_offset and these at their offsets; the
 * reader's exporter (adump_pt_write()) from one buffer. */
#define ADUMP_PT_ARCHIVE_MAX 200
struct adump_pt {
	unsigned char *mem;                     /* head, then tail: one allocation */
	const unsigned char *head;              /* file bytes [0, head_len) */
	size_t head_len;
	uint64_t data_offset;                   /* == head_len: the tensor's bytes, 64-aligned */
	uint64_t data_bytes;
	const unsigned char *tail;              /* file bytes from data_offset + data_bytes */
	size_t tail_len;
	uint64_t file_bytes;
	size_t crc_at[2];                       /* where the tensor's CRC goes in mem */
};
/**
 * adump_pt_init() - lay out the .pt file of one tensor (contiguous, @dim_count dims @dims,
 * @bytes bytes of @dtype), its records under the folder @archive ([A-Za-z0-9_.-], at most
 * ADUMP_PT_ARCHIVE_MAX characters). The tensor's CRC is 0 until adump_pt_set_crc().
 * Return: 0; -ADUMP_ERR_UNSUPPORTED for a dtype torch has no storage for; -EINVAL for a bad
 * archive name or @bytes that do not match the shape; -EFBIG past 4 GiB; -ENOMEM.
 * Caller frees with adump_pt_fini(). Any thread.
 */
ADUMP_HIDDEN int adump_pt_init(struct adump_pt *pt, const char *archive, int32_t dtype,
			       const uint64_t *dims, uint32_t dim_count, uint64_t bytes);
/* The CRC-32 of the tensor's bytes (adump_crc32()), into both places the zip keeps it. */
ADUMP_HIDDEN void adump_pt_set_crc(struct adump_pt *pt, uint32_t crc);
/* NULL ok. */
ADUMP_HIDDEN void adump_pt_fini(struct adump_pt *pt);
/* zlib's CRC-32 (ISA-L), continued from @crc (0 to start): the zip's and msprobe's "md5". */
ADUMP_HIDDEN uint32_t adump_crc32(uint32_t crc, const void *data, size_t len);
/* Whether @archive may name a .pt file's folder. */
ADUMP_HIDDEN bool adump_pt_archive_ok(const char *archive);
/* The archive folder for a data name: ".pt" dropped, other characters than [A-Za-z0-9_.-]
 * made '_', cut at ADUMP_PT_ARCHIVE_MAX. Return: 0, -EINVAL (empty, or no room in @cap). */
ADUMP_HIDDEN int adump_pt_archive_name(const char *data_name, char *out, size_t cap);
/* @v as Python's repr(float) (and so msprobe's dump.json) writes it: the fewest digits that
 * read back as @v, ".0" on integral values; NaN, Infinity, -Infinity as Python's json. */
ADUMP_HIDDEN void adump_py_float(double v, char *out, size_t cap);
/* The fewest significant digits that read back as the finite, nonzero @v (the nearest such
 * decimal), in @digits (@cap >= 18; no sign, point or terminator), and the decimal exponent
 * of the first in *@exp10. Return: how many (common/shortest.cc). */
ADUMP_HIDDEN int adump_shortest_digits(double v, char *digits, int cap, int *exp10);
/* @v rounded to the floating dtype @dtype (float32, float16, bfloat16; others unchanged):
 * a statistic as torch computes it, in the tensor's dtype. */
ADUMP_HIDDEN double adump_torch_round(double v, int32_t dtype);

/* ---- A dump's entry in msprobe's dump.json (common/msentry.c) ----
 *
 * The pipeline's msprobe output and the reader's exporter build it alike from the dump's
 * dfx_message; what each tensor item becomes is the caller's. */
struct json_object;
struct adump_msentry_src {
	void *ctx;
	uint32_t tensor_count;
	/* The kind of tensor @i (a reference "input.2" counts among its kind). */
	enum adump_tensor_kind (*kind)(void *ctx, uint32_t i);
	/* The description of tensor @ti, its data name @data_name, into *out (set even on an
	 * error, or left NULL). Return: 0 or -errno. */
	int (*leaf)(void *ctx, uint32_t ti, const char *data_name, bool requires_grad,
		    struct json_object **out);
	/* A tensor item names @ref, which the dump does not hold: -errno to fail, 0 to keep
	 * the item as described. NULL: keep it. */
	int (*missing)(void *ctx, const char *ref);
};
/* The dfx_message as a JSON object into *out (NULL for none or ""). Return: 0, or
 * -ADUMP_ERR_CORRUPT when it is not a JSON object. */
ADUMP_HIDDEN int adump_msentry_parse(const char *dfx_message, struct json_object **out);
/* Fill @entry (an object) for the dump @name from @dfx (NULL: the dump has none, its inputs
 * and outputs in order). Return: 0 or the first -errno (@entry holds what was built). */
ADUMP_HIDDEN int adump_msentry_build(const struct adump_msentry_src *src, const char *name,
				     struct json_object *dfx, struct json_object *entry);
/* A tensor's "Max", "Min", "Mean", "Norm" into @o as msprobe records them (torch's values in
 * the tensor's dtype; for bool torch.any/torch.all; Mean and Norm only for floating dtypes
 * but float64; a 0-d tensor's four are its value), from @s (NULL, or no elements: null). */
struct adump_tstats;
ADUMP_HIDDEN void adump_msentry_stats(struct json_object *o, const struct adump_tstats *s,
				      int32_t dtype, uint32_t dim_count);
/* A tensor's item in dump.json: what adump_msentry_stats() and the keys around it make, in
 * msprobe's order (type, dtype, shape, Max, Min, Mean, Norm, requires_grad, md5, data_name). */
struct adump_msentry_leaf {
	int32_t dtype;
	const uint64_t *dims;
	uint32_t dim_count;
	const struct adump_tstats *stats;       /* NULL: null statistics */
	bool requires_grad;
	bool has_md5;
	uint32_t md5;                           /* with has_md5: written as 8 hex digits */
	const char *data_name;                  /* NULL: none (no .pt file) */
};
/* @l written at once as the text of @o, a placeholder in an entry's tree (any JSON value):
 * json-c writes that text in its place, as JSON_C_TO_STRING_PLAIN would have written the
 * object, without the dozen objects and the printf of each number. Not for PRETTY output.
 * Return: 0 or -ENOMEM. */
ADUMP_HIDDEN int adump_msentry_leaf(struct json_object *o, const struct adump_msentry_leaf *l);
/* The same text appended to @b (b->err says whether it all fit). */
ADUMP_HIDDEN void adump_msentry_leaf_text(struct adump_buf *b, const struct adump_msentry_leaf *l);

#endif
