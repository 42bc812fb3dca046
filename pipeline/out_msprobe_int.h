/* SPDX-License-Identifier: Apache-2.0 */
/* What format msprobe's two files share: out_msprobe.c (the worker's side: entries, .pt files,
 * the writes of record pieces) and out_msprobe_dir.c (the session's side: each directory's
 * entries in handover order and its dump.json). */
#ifndef ADUMP_PIPELINE_OUT_MSPROBE_INT_H
#define ADUMP_PIPELINE_OUT_MSPROBE_INT_H

#include <pthread.h>
#include <stdbool.h>

#include <json-c/json.h>

#include "pipeline/worker_int.h"

#define MODULE "msprobe"

/* One dump's place in its directory's dump.json, kept from its start. */
struct msp_slot {
	struct msp_slot *next;
	char *text;                     /* "<name>": {...}; NULL: failed, or not yet done */
	bool is_done;
	bool is_module;
};

struct msp_dir {
	struct msp_dir *next;
	char *path;
	struct msp_slot *head, *tail;
	unsigned pending;               /* slots not done */
	/* Its journal with no slots (journal_int.h), counting the entries reserved and not
	 * yet in a dump.json written, so that a kill leaves them visible; NULL: none. */
	struct adump_journal *journal;
};

struct msp_session {
	pthread_mutex_t lock;           /* the directory list (workers and dir_done) */
	pthread_mutex_t write_lock;     /* one dump.json written at a time */
	struct msp_dir *dirs;
	struct adump_session *session;
	bool has_data;                  /* tensor content: .pt files */
	bool has_md5;
};

/* A place for a dump's entry at the end of @dir's list (the directory added if new, with its
 * journal), or NULL out of memory. msp_slot_fill() gives it its text (taken; NULL: no entry)
 * once the dump is done, and marks the dump's hand-over journal slot *@journal_slot done
 * (then NULL): from there the directory's journal counts it until dump.json holds it. */
ADUMP_HIDDEN struct msp_slot *msp_slot_reserve(struct msp_session *ms, const char *dir);
ADUMP_HIDDEN void msp_slot_fill(struct msp_session *ms, const char *dir, struct msp_slot *slot,
				char *text, bool is_module,
				struct adump_journal_slot **journal_slot);
/* "<name>": <value> of one entry, as dump.json holds it (NULL: out of memory). */
ADUMP_HIDDEN char *msp_entry_text(const char *name, struct json_object *value);

/* The output's session hooks: the directory table, and dump.json of each directory done. */
ADUMP_HIDDEN void msp_dir_done(struct adump_session *s, const char *dir);
ADUMP_HIDDEN int msp_session_init(struct adump_session *s);
ADUMP_HIDDEN void msp_session_fini(struct adump_session *s);

#endif
