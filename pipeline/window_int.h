/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/ private: window mode, the flight recorder (window.c, window_persist.c).
 *
 * A window-mode session writes statistics through its output (content STATS) while its
 * workers copy every dump's payload, as the records pass, into the window: one arena of
 * window_bytes, used as a ring of entries in dump order (each entry a header, the op's
 * description and the payload, contiguous). Steps only advance once everything posted is
 * written (adump_session_step() flushes first), so a step's entries follow the ones of the
 * step before; a new entry that does not fit drops the oldest held steps, never the current
 * one: a step larger than the window keeps what fits, the rest are stubs (the description
 * only, cause window_full) or, past that, counted. At each file's end its statistics go
 * through the triggers; the first that fires in a step is the step's trigger. At the step's
 * end the held entries are replayed into a tensor session of their own (window_persist.c)
 * writing under <dump_path>/window-<step>/, then the window is empty again. */
#ifndef ADUMP_WINDOW_INT_H
#define ADUMP_WINDOW_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "adump/adump.h"
#include "pipeline/producer.h"

struct adump_session;
struct adump_rec;
struct file_state;

enum window_state {
	ENTRY_PAD = 0,                  /* the unused end of the arena before a wrap */
	ENTRY_FILLING,                  /* its file's records are passing */
	ENTRY_HELD,                     /* whole */
	ENTRY_FAILED,                   /* its file failed: the payload is not whole */
	ENTRY_LOST,                     /* a stub: no room for its payload (window_full) */
	ENTRY_DONE,                     /* written by a persist while another was filling */
};

/* An output directory a producer wrote to (op_rec->dir), shared by its entries. */
struct window_dir {
	struct window_dir *next;
	uint32_t refs;
	char path[];
};

/* At the start of its arena space; the op's tensors, attributes and strings follow, then
 * (held by reference) the tensors' addresses, then the payload (64-byte aligned): the
 * arena's room for it is taken all the same by an entry held by reference, whose bytes
 * stay in the producer's memory (never touched there, so not resident): what the window
 * keeps alive is counted against window_bytes either way. */
struct window_entry {
	uint64_t size;                  /* arena bytes up to the next entry */
	uint64_t step;
	enum window_state state;
	int error;                      /* ENTRY_FAILED: its file's error */
	struct window_dir *dir;         /* NULL: the session directory */
	uint64_t payload_bytes;
	unsigned char *payload;         /* NULL for a stub */
	/* Held by reference (ref.release set): tensor i is at refs[i], the producer's, until
	 * ref.release is called as the entry goes (status ref_status). Copied with some
	 * tensors shared (ref.release NULL): at refs[i], in this entry's payload or in an
	 * earlier entry's of the same step, which goes no sooner. NULL: each in payload, in
	 * order. */
	const void **refs;
	struct adump_window_ref ref;
	int ref_status;
	struct adump_op op;
};

/* The step's first trigger: what trigger.json says. */
struct window_trigger {
	char rule[16];
	char *reason;                   /* a call's, or NULL */
	char *tensor;                   /* <op_name>.<input|output>.<i>, or NULL */
	char *op_type;
	char *op_name;
	const char *io;                 /* "input", "output" or NULL */
	uint32_t index;
	uint32_t device_id;
	bool has_tensor;
	char value[32];                 /* the value that fired, as JSON text ("nan": a string) */
	double threshold;
	bool has_threshold;
	uint64_t step;
	uint64_t time_ns;               /* CLOCK_REALTIME */
	uint64_t fired;                 /* triggers that fired in the step, this one included */
};

struct window_history;

struct adump_window {
	struct adump_session *s;
	pthread_mutex_t lock;           /* everything below */
	pthread_mutex_t persist_lock;   /* one persist at a time (a step's end, a signal) */
	unsigned char *arena;
	uint64_t cap;
	uint64_t head, tail;            /* offsets counted from the start, never wrapped */
	/* Counts the times the window was emptied (release_all()): an entry of the current
	 * step shares another's copy of a tensor only from the same step and epoch. */
	uint64_t epoch;
	uint64_t touched;               /* the arena's bytes used so far, from its start */
	uint64_t step_bytes;            /* the arena's bytes the current step took so far */
	uint64_t largest_step;          /* the most any step before took */
	uint64_t step;
	unsigned steps;                 /* window_steps */
	uint64_t lost_dumps;            /* since start */
	/* Dumps of step unlisted_step that not even a stub fitted: when that happens every older
	 * step is gone already, so they are of one step, counted until it goes. */
	uint64_t lost_unlisted;
	uint64_t unlisted_step;
	bool is_full_logged;
	struct window_dir *dirs;
	uint32_t triggers;
	struct adump_bound *bounds;     /* patterns copied */
	uint64_t *bound_hits;
	unsigned bound_count;
	double deviation;
	unsigned deviation_steps;
	unsigned norm_slots;             /* per history item: deviation_steps, or 0 */
	struct window_history *history;
	bool is_pending;
	struct window_trigger pending;
	char *note;                     /* adump_session_persist_note(), or NULL */
	unsigned persists;
	unsigned persists_max;
	unsigned persists_skipped;
	char last_window[1024];
	/* The suffix the next window of step root_step takes (window_persist.c): every window a
	 * step has in this process gets a directory of its own. */
	uint64_t root_step;
	unsigned root_next;
	/* The config of the sessions that write persisted windows: the session's own, content
	 * TENSOR, no window; dump_path and pool set at each persist. */
	struct adump_config tensor_cfg;
	char *time_dir;
	bool is_signal;                 /* registered for SIGUSR1 (window_signal.c) */
};

/* window.c */
int adump_window_create(struct adump_session *s, const struct adump_config *cfg,
			struct adump_window **out);
void adump_window_destroy(struct adump_window *win);
/* Worker hooks: a file's first record (after the output's file_begin), each record of a
 * file that has not failed (before the output's), and the file's end (before the output's
 * file_end, while its statistics are whole). */
void adump_window_file_begin(struct adump_window *win, struct file_state *fs);
void adump_window_record(struct file_state *fs, const struct adump_rec *rec);
void adump_window_file_end(struct adump_window *win, struct file_state *fs);
/* A dump whose file never began (no memory for its state): an entry its producer held for
 * it is failed with @err, so that it does not stay filling. */
void adump_window_drop(struct adump_window *win, struct adump_op_rec *rec, int err);
/* The step ended (everything posted is written): persist if a trigger fired, advance. */
int adump_window_step(struct adump_window *win);
/* The session ends (every producer detached): a pending trigger is persisted. */
int adump_window_finish(struct adump_window *win);
/* Persist what is held now, whole entries only, without ending the step (a signal). */
int adump_window_persist_now(struct adump_window *win, const char *rule);
/* Empty the window after a persist (its lock held): every entry goes, except that while a
 * file is still filling (a signal's persist, mid-step) they are only marked written. */
void adump_window_clear(struct adump_window *win);

/* window_trigger.c (win->lock held): @fs's statistics through the triggers; a trigger by
 * call or signal; the memory of them. */
void adump_window_judge(struct adump_window *win, struct file_state *fs);
void adump_window_request(struct adump_window *win, const char *rule, const char *reason);
void adump_window_trigger_free(struct window_trigger *t);
struct window_history *adump_window_history_new(void);
void adump_window_history_free(struct window_history *h);

/* window_persist.c: write the held entries (win->lock held, win->persist_lock held) under
 * a new window directory, with trigger.json from @t. Return 0 or the first error. */
int adump_window_write(struct adump_window *win, const struct window_trigger *t);

/* window_signal.c: SIGUSR1 persists every registered window at once. */
int adump_window_signal_register(struct adump_window *win);
void adump_window_signal_unregister(struct adump_window *win);

/* The arena walk: the entry at offset @off, or NULL at the tail; *@off moves past it. */
struct window_entry *adump_window_next(struct adump_window *win, uint64_t *off);

#endif
