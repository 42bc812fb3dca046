/* SPDX-License-Identifier: Apache-2.0 */
/* pipeline/ private: the session's hand-over journal (journal.c; the format is
 * common/journal.h). */
#ifndef ADUMP_JOURNAL_INT_H
#define ADUMP_JOURNAL_INT_H

#include <stdint.h>

struct adump_session;
struct adump_journal;
struct adump_journal_slot;

/*
 * adump_journal_create() - the session's journal, <s->dir>/adump-journal-<pid>-<n>, made
 * with O_EXCL|O_NOFOLLOW (never an existing file, never through a link), its whole size
 * allocated on disk (a store into the mapping never meets a full disk) and mapped shared.
 * For the file sink (uncompressed, lz4, statistics CSVs, msprobe's layout, the packed
 * layout); *@out is NULL for the callback sink.
 * Return: 0 or -errno (logged, but -ENOENT: s->dir is gone, and the session makes it again).
 */
int adump_journal_create(struct adump_session *s, struct adump_journal **out);
/* The same in @dir with @region_count regions of slots: 1 for a stream's own directory, 0
 * for msprobe's count of a directory's entries held for its dump.json. */
int adump_journal_create_dir(struct adump_session *s, const char *dir, unsigned region_count,
			     struct adump_journal **out);
/* The head's count of entries held (common/journal.h), or NULL without a journal. */
_Atomic uint64_t *adump_journal_held(struct adump_journal *j);
/* The slots of stream slot @index (ADUMP_STREAM_MAX_LIMIT of them at most), or NULL
 * without a journal; *@count receives how many, *@used where its ports keep how many of
 * them they used (struct adump_port_cfg). */
struct adump_journal_slot *adump_journal_slots(struct adump_journal *j, unsigned index,
					       uint32_t *count, _Atomic uint32_t **used);
/* The session ends, every worker stopped (or the journal's stream is idle, or its dump.json
 * written): the journal is removed when no slot is pending and no entry held (every dump
 * handed over was finished), and kept otherwise, for verify to report. A directory's
 * journal (adump_journal_create_dir()) is emptied and kept in the session's directory
 * instead, while it has room for it (ADUMP_JOURNAL_SPARES): the next directory's journal
 * of the same size is that file, moved there, not one made. NULL ok. */
void adump_journal_destroy(struct adump_journal *j);
/* The session ends: the journals kept for reuse are removed. */
void adump_journal_spares_free(struct adump_session *s);

#endif
