/* SPDX-License-Identifier: Apache-2.0 */
/* The hand-over journal's file format, shared by its writers (pipeline/journal.c makes the
 * file, producer/post.c fills a slot at hand-over, common/op_rec.c marks it done) and its
 * reader (`adump verify`). A session writing dump files into <dir> keeps
 * <dir>/adump-journal-<pid>-<n>, mapped MAP_SHARED: a store into the mapping is in the page
 * cache at once, so what the process recorded survives a SIGKILL with no system call. Each
 * dump handed over takes a slot, "pending" until its file is finished (published, or failed
 * with its loss lines), then "done"; a clean session end removes the file. What a killed
 * process leaves pending is what never reached the disk.
 *
 * A stream with a directory of its own (adump_host_stream_set_dir()) keeps a journal of its
 * own in that directory while it writes there. The kind says what "on disk" means: a file
 * under its name (files), a line of the packed index (packed: a slot is done once the line
 * is written, not when the data is), an entry of the directory's dump.json (msprobe: a slot
 * is done once the entry waits in memory for dump.json, and the directory's own journal,
 * with no slots, counts in @held the entries not yet in a dump.json written). */
#ifndef ADUMP_COMMON_JOURNAL_H
#define ADUMP_COMMON_JOURNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define ADUMP_JOURNAL_PREFIX "adump-journal-"
#define ADUMP_JOURNAL_MAGIC "ADUMPJNL"          /* 8 bytes, no NUL in the file */
#define ADUMP_JOURNAL_VERSION 1u
#define ADUMP_JOURNAL_SLOT_BYTES 512u

enum adump_journal_kind {
	ADUMP_JOURNAL_FILES = 0,                /* <dir>/<device_id>/<file name><suffix> */
	ADUMP_JOURNAL_PACKED = 1,               /* a line of <dir>/packed/'s index */
	ADUMP_JOURNAL_MSPROBE = 2,              /* an entry of <dir>/dump.json */
};

enum adump_journal_state {
	ADUMP_JOURNAL_FREE = 0,                 /* never used (the file's zeros) */
	ADUMP_JOURNAL_PENDING = 1,              /* handed over, its file not finished */
	ADUMP_JOURNAL_DONE = 2,                 /* finished: on disk, or failed and logged */
};

/* The file's first ADUMP_JOURNAL_SLOT_BYTES; slots follow, slot_count of them. */
struct adump_journal_head {
	char magic[8];
	uint32_t version;
	uint32_t slot_bytes;
	uint64_t slot_count;
	int32_t pid;                            /* the writing process (verify: still alive?) */
	uint32_t kind;                          /* enum adump_journal_kind (0 in version 1's) */
	char suffix[16];                        /* what follows a dump's name on disk: "", ".lz4" */
	/* msprobe: entries of this directory's dump.json handed over and not yet written in
	 * one (the journal is removed once they are). */
	_Atomic uint64_t held;
};

/* One dump: where it goes (<dir>/<device_id>/<file name of the op>) and its payload size.
 * Fields are written first, then state (release); a reader trusts fields only under a
 * PENDING state. op_type and op_name are cut to fit text; their full lengths say so. */
struct adump_journal_slot {
	_Atomic uint32_t state;
	uint32_t device_id;
	uint32_t task_id;
	uint32_t stream_id;
	uint64_t timestamp_us;
	uint64_t payload_bytes;
	uint32_t type_len;                      /* strlen(op_type) */
	uint32_t name_len;                      /* strlen(op_name) */
	char text[ADUMP_JOURNAL_SLOT_BYTES - 40]; /* op_type NUL op_name NUL, each maybe cut */
};

_Static_assert(sizeof(struct adump_journal_slot) == ADUMP_JOURNAL_SLOT_BYTES,
	       "journal slots are fixed-size");
_Static_assert(sizeof(struct adump_journal_head) <= ADUMP_JOURNAL_SLOT_BYTES,
	       "the head fits the first slot's place");

/* Copies what fits of @s (length @len) into @dst (room @cap, NUL included). Return: bytes used. */
static inline size_t adump_journal_put(char *dst, size_t cap, const char *s, size_t len)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	memcpy(dst, s, n);
	dst[n] = '\0';
	return n + 1;
}

/*
 * adump_journal_slot_fill() - record a dump as handed over: the fields, then the state
 * (release; the reader is another process after our death, or verify of a live capture).
 * Producer thread only: the slot is its port's, not PENDING (adump_port's search).
 */
static inline void adump_journal_slot_fill(struct adump_journal_slot *js, uint32_t device_id,
					   uint32_t task_id, uint32_t stream_id,
					   uint64_t timestamp_us, uint64_t payload_bytes,
					   const char *op_type, const char *op_name)
{
	size_t type_len = strlen(op_type), name_len = strlen(op_name), used;

	js->device_id = device_id;
	js->task_id = task_id;
	js->stream_id = stream_id;
	js->timestamp_us = timestamp_us;
	js->payload_bytes = payload_bytes;
	js->type_len = (uint32_t)type_len;
	js->name_len = (uint32_t)name_len;
	used = adump_journal_put(js->text, sizeof(js->text) / 2, op_type, type_len);
	adump_journal_put(js->text + used, sizeof(js->text) - used, op_name, name_len);
	/* Pairs with the acquire load of a reader of a live capture (verify). */
	atomic_store_explicit(&js->state, ADUMP_JOURNAL_PENDING, memory_order_release);
}

/* The dump's file is finished (any thread: the worker). Pairs with the producer's acquire
 * load when it looks for a free slot. */
static inline void adump_journal_slot_done(struct adump_journal_slot *js)
{
	atomic_store_explicit(&js->state, ADUMP_JOURNAL_DONE, memory_order_release);
}

#endif
