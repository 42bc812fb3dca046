/* SPDX-License-Identifier: Apache-2.0 */
/* Format msprobe, the session's side: every output directory's entries kept in handover order
 * (a slot reserved when a dump begins, filled when it is done), and each directory's
 * dump.json written whole when the directory is done (adump_session_dir_done(): a stream
 * leaves it, a flush, the session's end), published at once and merged with a dump.json
 * already there so nothing written before is lost. The worker's side is out_msprobe.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "common/journal.h"
#include "pipeline/journal_int.h"
#include "pipeline/loss_int.h"
#include "pipeline/out_msprobe_int.h"

struct msp_slot *msp_slot_reserve(struct msp_session *ms, const char *dir)
{
	struct msp_slot *slot = calloc(1, sizeof(*slot));
	struct msp_dir *d;

	if (!slot)
		return NULL;
	pthread_mutex_lock(&ms->lock);
	for (d = ms->dirs; d; d = d->next)
		if (strcmp(d->path, dir) == 0)
			break;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (d && !(d->path = strdup(dir))) {
			free(d);
			d = NULL;
		}
		if (d) {
			/* Without it a kill would lose the entries held unseen; a capture that
			 * cannot make it goes on, as with a journal that cannot be made at the
			 * session's start (logged). */
			adump_journal_create_dir(ms->session, dir, 0, &d->journal);
			d->next = ms->dirs;
			ms->dirs = d;
		}
	}
	if (d) {
		_Atomic uint64_t *held = adump_journal_held(d->journal);

		/* Counted before any of its data is written (the mapping: no system call). */
		if (held)
			atomic_fetch_add_explicit(held, 1, memory_order_release);
		if (d->tail)
			d->tail->next = slot;
		else
			d->head = slot;
		d->tail = slot;
		d->pending++;
	}
	pthread_mutex_unlock(&ms->lock);
	if (!d) {
		free(slot);
		return NULL;
	}
	return slot;
}

void msp_slot_fill(struct msp_session *ms, const char *dir, struct msp_slot *slot, char *text,
		   bool is_module, struct adump_journal_slot **journal_slot)
{
	pthread_mutex_lock(&ms->lock);
	slot->text = text;
	slot->is_module = is_module;
	slot->is_done = true;
	/* Under the lock, before dump.json can be written with it: the directory's journal
	 * counts it already (msp_slot_reserve()), and a kill after dump.json holds it leaves no
	 * slot pending for it. */
	if (*journal_slot) {
		adump_journal_slot_done(*journal_slot);
		*journal_slot = NULL;
	}
	for (struct msp_dir *d = ms->dirs; d; d = d->next)
		if (strcmp(d->path, dir) == 0) {
			d->pending--;
			break;
		}
	pthread_mutex_unlock(&ms->lock);
}

static void slots_free(struct msp_slot *s)
{
	while (s) {
		struct msp_slot *next = s->next;

		free(s->text);
		free(s);
		s = next;
	}
}

/* "<name>": <value> of one entry, as dump.json holds it. */
char *msp_entry_text(const char *name, struct json_object *value)
{
	struct json_object *key = json_object_new_string(name);
	struct adump_buf b = { 0 };

	if (!key)
		return NULL;
	adump_buf_str(&b, json_object_to_json_string_ext(key, JSON_C_TO_STRING_NOSLASHESCAPE));
	adump_buf_str(&b, ": ");
	adump_buf_str(&b, json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(key);
	if (b.err) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}

/* Write <dir>/dump.json from @slots (in order), after the entries of a dump.json already
 * there. Return 0 or -errno. */
static int dump_json_write(struct msp_session *ms, const char *dir, struct msp_slot *slots)
{
	struct json_object *old = NULL, *old_data;
	struct adump_buf b = { 0 };
	char path[4200], *data_dir = NULL;
	bool any_module = false, any_api = false, first = true;
	int ret;

	if (snprintf(path, sizeof(path), "%s/dump.json", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, F_OK) == 0) {
		old = json_object_from_file(path);
		if (!old || !json_object_object_get_ex(old, "data", &old_data) ||
		    !json_object_is_type(old_data, json_type_object)) {
			adump_log(ADUMP_LOG_ERROR, MODULE, "%s: not a dump.json (%s); replaced", path,
				  json_util_get_last_err() ? json_util_get_last_err() : "no data");
			json_object_put(old);
			old = NULL;
		}
	}
	adump_buf_str(&b, "{\n \"task\": \"");
	adump_buf_str(&b, ms->has_data ? "tensor" : "statistics");
	adump_buf_str(&b, "\",\n \"level\": \"");
	/* Filled below once every entry is known: reserve the longest value. */
	size_t level_at = b.len;

	adump_buf_str(&b, "mix\",\n \"framework\": \"pytorch\",\n \"dump_data_dir\": ");
	if (ms->has_data) {
		struct json_object *dd;

		if (asprintf(&data_dir, "%s/dump_tensor_data", dir) < 0)
			data_dir = NULL;
		dd = json_object_new_string(data_dir ? data_dir : "");
		adump_buf_str(&b, json_object_to_json_string_ext(dd, JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(dd);
		free(data_dir);
	} else {
		adump_buf_str(&b, "null");
	}
	adump_buf_str(&b, ",\n \"data\": {");
	if (old) {
		json_object_object_foreach(old_data, k, v) {
			char *t = msp_entry_text(k, v);

			if (!t) {
				b.err = -ENOMEM;
				break;
			}
			adump_buf_str(&b, first ? "\n  " : ",\n  ");
			adump_buf_str(&b, t);
			free(t);
			first = false;
			if (strncmp(k, "Module.", 7) == 0)
				any_module = true;
			else
				any_api = true;
		}
	}
	for (struct msp_slot *s = slots; s; s = s->next) {
		if (!s->text)
			continue;       /* a failed dump: counted in the loss log */
		adump_buf_str(&b, first ? "\n  " : ",\n  ");
		adump_buf_str(&b, s->text);
		first = false;
		if (s->is_module)
			any_module = true;
		else
			any_api = true;
	}
	adump_buf_str(&b, first ? "}\n}\n" : "\n }\n}\n");
	json_object_put(old);
	if (b.err)
		return b.err;
	{
		/* The level: "L0" modules only, "L1" APIs only, "mix" both; padded with spaces
		 * after the closing quote, which JSON allows. */
		const char *level = any_module && any_api ? "mix\"" : any_module ? "L0\" " : "L1\" ";

		memcpy(b.p + level_at, level, 4);
	}
	ret = adump_session_write_file(ms->session, path, b.p, b.len, NULL);
	free(b.p);
	return ret;
}

void msp_dir_done(struct adump_session *s, const char *dir)
{
	struct msp_session *ms = s->out_session;
	struct msp_dir *ready = NULL, **pp;

	if (!ms)
		return;
	pthread_mutex_lock(&ms->write_lock);
	pthread_mutex_lock(&ms->lock);
	/* Directories whose every dump is done are taken out whole; one still being written
	 * into by another stream waits for a later call. */
	for (pp = &ms->dirs; *pp;) {
		struct msp_dir *d = *pp;

		if ((!dir || strcmp(d->path, dir) == 0) && d->pending == 0) {
			*pp = d->next;
			d->next = ready;
			ready = d;
		} else {
			pp = &d->next;
		}
	}
	pthread_mutex_unlock(&ms->lock);
	while (ready) {
		struct msp_dir *d = ready;
		int ret = d->head ? dump_json_write(ms, d->path, d->head) : 0;

		if (ret < 0) {
			adump_session_set_error(s, ret);
			atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
			adump_log(ADUMP_LOG_ERROR, MODULE, "writing %s/dump.json failed: %s", d->path,
				  adump_strerror(ret));
		} else if (d->journal) {
			/* Every entry reserved is in it (or failed, with its loss lines). */
			atomic_store_explicit(adump_journal_held(d->journal), 0, memory_order_release);
		}
		/* Removed, or kept with what the failed write left out. */
		adump_journal_destroy(d->journal);
		ready = d->next;
		slots_free(d->head);
		free(d->path);
		free(d);
	}
	pthread_mutex_unlock(&ms->write_lock);
}

int msp_session_init(struct adump_session *s)
{
	struct msp_session *ms = calloc(1, sizeof(*ms));

	if (!ms)
		return -ENOMEM;
	pthread_mutex_init(&ms->lock, NULL);
	pthread_mutex_init(&ms->write_lock, NULL);
	ms->session = s;
	ms->has_data = s->cfg.content == ADUMP_CONTENT_TENSOR;
	ms->has_md5 = s->cfg.summary == ADUMP_SUMMARY_MD5;
	s->out_session = ms;
	return 0;
}

void msp_session_fini(struct adump_session *s)
{
	struct msp_session *ms = s->out_session;

	if (!ms)
		return;
	msp_dir_done(s, NULL);
	/* Left only if a dump never ended (a worker that failed to start): nothing to write. */
	while (ms->dirs) {
		struct msp_dir *d = ms->dirs;

		ms->dirs = d->next;
		adump_journal_destroy(d->journal);
		slots_free(d->head);
		free(d->path);
		free(d);
	}
	pthread_mutex_destroy(&ms->lock);
	pthread_mutex_destroy(&ms->write_lock);
	free(ms);
	s->out_session = NULL;
}
