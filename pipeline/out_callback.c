/* SPDX-License-Identifier: Apache-2.0 */
/* Callback output: the bytes a dump file would hold, handed as chunks to the session's
 * chunk_fn (header first, then each record's data at its file offset), no files. The staging
 * buffer goes back as soon as the callback returns. */
#include "pipeline/worker_int.h"

static void callback_begin(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	struct adump_session *s = w->session;

	(void)is_whole;
	if (adump_file_header(s, fs) == 0)
		adump_deliver(s, fs->path, 0, fs->header, fs->header_len,
			      fs->op->payload_bytes == 0);
}

static void callback_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
			    struct file_state *fs)
{
	if (rec->len)
		adump_deliver(w->session, fs->path, fs->payload_base + rec->offset,
			      adump_rec_data(rec), rec->len, (rec->flags & ADUMP_REC_LAST) != 0);
	adump_record_done(w, chan, rec, fs);
}

const struct adump_output_ops adump_out_callback = {
	.name = "callback",
	.file_begin = callback_begin,
	.record = callback_record,
};
