/* SPDX-License-Identifier: Apache-2.0 */
/* msprobe's PyTorch layout (format msprobe): per output directory (the session's, or a
 * stream's own), dump.json with one entry per dump and, with tensor content,
 * dump_tensor_data/<data_name>.pt per tensor (torch.save's zip, common/pt.c).
 *
 * A dump's dfx_message (adump.torch's _torch_info.py) describes the call in msprobe's terms;
 * its tensor items name the dump's tensor they stand for ("input.2"). When the dump's first
 * record arrives, that description becomes the dump's entry with a placeholder per tensor,
 * and each tensor gets its data name (msprobe's: <entry>.<input|kwargs|output|parameters>.
 * <key path>.pt) and its .pt file. Each record's bytes are written from the staging buffer
 * into the .pt files they belong to, at their exact offsets (no copy); the small zip and
 * pickle parts around them go out once the tensor's last byte has passed (its CRC-32 is in
 * them). When everything of the dump is written the .pt files are published (.part/unnamed
 * until then, .failed if anything failed) and the placeholders get dtype, shape,
 * statistics (fs->stats) and data_name; the entry's text goes into the slot its directory
 * kept for it when the dump began, so dump.json lists entries in handover order.
 *
 * A directory's dump.json is written when the directory is done, whole (out_msprobe_dir.c,
 * the session's side). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "adump/export.h"
#include "common/common.h"
#include "pipeline/loss_int.h"
#include "pipeline/out_msprobe_int.h"

#define WRITE_BLOCK 64                  /* sub-writes allocated at once per worker */

/* ---- per worker: the writes of record pieces ------------------------------------------- */

/* One piece of a record (the bytes of one tensor) written into that tensor's .pt file. Its
 * record is done when the last of its pieces completes: s->writes[rec->index] counts them
 * (priv) and holds the channel and record. */
struct msp_write {
	struct adump_chunk_write cw;
	struct msp_write *next;
};

struct msp_block {
	struct msp_block *next;
	struct msp_write writes[WRITE_BLOCK];
};

/* dfx_message texts this worker parsed, by a hash of the text: a training loop's module gives
 * the same description at every step, and parsing it was a fifth of the worker's time. The
 * entry built from one shares its values (read, never changed). */
#define DFX_SEEN 512u
#define DFX_SEEN_MAX_LEN 16384u

struct dfx_seen {
	uint64_t hash;
	size_t len;
	char *text;                     /* NULL: empty */
	struct json_object *dfx;
};

/* Entries this worker built, by what an entry is built from (the dump's name, its
 * dfx_message and its tensors' kinds): a training loop's dump has the same three at every
 * step, and building its entry (a JSON tree from the description, then its text) was a
 * quarter of the worker's time. An entry is kept as its text cut where its tensors' items go;
 * each dump fills them in (entry_text()). Shared by the dumps in flight that use it. */
#define TMPL_SEEN 512u
#define TMPL_WAYS 4u                    /* the slots a template may take */

struct tmpl_cut {
	size_t at;                      /* where in the text the item goes */
	uint32_t ti;                    /* the tensor it describes */
};

struct entry_tmpl {
	atomic_uint refs;
	uint64_t hash;
	char *name;
	char *dfx;                      /* "" for none */
	size_t dfx_len;
	uint32_t tensor_count;
	uint8_t *kinds;
	char *text;                     /* "<name>": {...}, the items cut out */
	size_t text_len;
	uint32_t cut_count;
	struct tmpl_cut *cuts;
	char **data_names;              /* per tensor; NULL: no item of its own */
	bool *requires_grad;
};

struct msp_worker {
	struct msp_write *free_list;
	struct msp_block *blocks;
	struct dfx_seen dfx[DFX_SEEN];
	struct entry_tmpl *tmpl[TMPL_SEEN];
};

/* ---- per file ---------------------------------------------------------------------------- */

struct msp_tensor {
	struct json_object *leaf;       /* its item in the entry while the entry is built */
	char *data_name;                /* "<...>.pt" (the template's), or NULL: no .pt */
	bool requires_grad;             /* while the entry is built */
	struct adump_pt pt;
	struct adump_pubfile pf;        /* fd -1: no file */
	uint64_t start;                 /* its first payload byte */
	uint64_t seen;                  /* bytes passed so far */
	uint32_t crc;
	struct adump_chunk_write head_write, tail_write;
};

struct msp_file {
	struct msp_slot *slot;
	struct entry_tmpl *tmpl;        /* the entry, a reference */
	struct json_object *entry;      /* the entry's value while it is built */
	char *name;                     /* the entry's name */
	const char *dir;                /* op->dir or the session's */
	uint32_t next_tensor;           /* the tensor holding the next payload byte */
	bool has_data;
	bool has_crc;
	uint32_t count;
	struct msp_tensor t[];
};

/* ---- building the entry ------------------------------------------------------------------ */

/* A placeholder for tensor @ti, to be named @data_name. */
static int tensor_leaf(struct msp_file *mf, uint32_t ti, const char *data_name, bool requires_grad,
		       struct json_object **out)
{
	struct msp_tensor *t = &mf->t[ti];

	if (t->leaf) {
		/* Named twice: the second place describes it without data. */
		*out = json_object_new_object();
		if (!*out)
			return -ENOMEM;
		json_object_object_add(*out, "type", json_object_new_string("torch.Tensor"));
		return 0;
	}
	/* Its text is made once every byte has passed (entry_text()). */
	*out = json_object_new_boolean(0);
	if (!*out)
		return -ENOMEM;
	t->leaf = *out;
	t->requires_grad = requires_grad;
	t->data_name = strdup(data_name);
	return t->data_name ? 0 : -ENOMEM;
}

/* What common/msentry.c builds the entry from: the op's tensors, a placeholder each. */
struct msp_build {
	struct msp_file *mf;
	const struct adump_op *op;
};

static enum adump_tensor_kind tensor_kind(void *ctx, uint32_t i)
{
	const struct msp_build *b = ctx;

	return b->op->tensors[i].kind;
}

static int leaf_cb(void *ctx, uint32_t ti, const char *data_name, bool requires_grad,
		   struct json_object **out)
{
	const struct msp_build *b = ctx;

	return tensor_leaf(b->mf, ti, data_name, requires_grad, out);
}

/* @text's parsed description (a reference the caller puts), from the worker's cache when it
 * was seen. Return 0 or -errno. */
static int dfx_parse(struct msp_worker *mw, const char *text, struct json_object **out)
{
	size_t len = text ? strlen(text) : 0;
	struct dfx_seen *slot;
	uint64_t h;
	int ret;

	if (!len || len > DFX_SEEN_MAX_LEN)
		return adump_msentry_parse(text, out);
	h = adump_fnv1a64(text, len);
	slot = &mw->dfx[h % DFX_SEEN];
	if (slot->text && slot->hash == h && slot->len == len && !memcmp(slot->text, text, len)) {
		*out = json_object_get(slot->dfx);
		return 0;
	}
	ret = adump_msentry_parse(text, out);
	if (ret < 0 || !*out)
		return ret;
	free(slot->text);
	json_object_put(slot->dfx);
	slot->text = strdup(text);
	slot->dfx = slot->text ? json_object_get(*out) : NULL;
	slot->hash = h;
	slot->len = len;
	return 0;
}

/* The entry of the dump, placeholders for its tensors. Return 0 or -errno. */
static int entry_build(struct msp_worker *mw, struct msp_file *mf, const struct adump_op *op)
{
	struct msp_build b = { .mf = mf, .op = op };
	const struct adump_msentry_src src = {
		.ctx = &b, .tensor_count = op->tensor_count, .kind = tensor_kind, .leaf = leaf_cb,
	};
	struct json_object *entry = json_object_new_object(), *dfx;
	int ret;

	if (!entry)
		return -ENOMEM;
	mf->entry = entry;
	ret = dfx_parse(mw, op->dfx_message, &dfx);
	if (ret < 0)
		return ret;
	ret = adump_msentry_build(&src, mf->name, dfx, entry);
	json_object_put(dfx);
	return ret;
}

static void tmpl_put(struct entry_tmpl *tp)
{
	if (!tp || atomic_fetch_sub_explicit(&tp->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (uint32_t i = 0; tp->data_names && i < tp->tensor_count; i++)
		free(tp->data_names[i]);
	free(tp->data_names);
	free(tp->requires_grad);
	free(tp->cuts);
	free(tp->text);
	free(tp->kinds);
	free(tp->dfx);
	free(tp->name);
	free(tp);
}

static uint64_t tmpl_hash(const char *name, const char *dfx, size_t dfx_len,
			  const struct adump_op *op)
{
	uint64_t h = adump_fnv1a64(name, strlen(name)) * 31 + adump_fnv1a64(dfx, dfx_len);

	for (uint32_t i = 0; i < op->tensor_count; i++)
		h = (h ^ (uint64_t)op->tensors[i].kind) * 0x100000001b3ull;
	return h ^ op->tensor_count;
}

static bool tmpl_matches(const struct entry_tmpl *tp, uint64_t hash, const char *name,
			 const char *dfx, size_t dfx_len, const struct adump_op *op)
{
	if (!tp || tp->hash != hash || tp->dfx_len != dfx_len ||
	    tp->tensor_count != op->tensor_count || strcmp(tp->name, name) ||
	    memcmp(tp->dfx, dfx, dfx_len))
		return false;
	for (uint32_t i = 0; i < op->tensor_count; i++)
		if (tp->kinds[i] != (uint8_t)op->tensors[i].kind)
			return false;
	return true;
}

/* The text of @mf->entry cut at its items into @tp: each item written as a mark
 * (\001<tensor>\002; json-c escapes those bytes anywhere else), then found. Return 0,
 * -ENOMEM, or -EPROTO for marks that are not the ones written. */
static int tmpl_cut(struct entry_tmpl *tp, struct msp_file *mf)
{
	char *marked, *dst;
	const char *p;
	uint32_t n = 0;

	for (uint32_t i = 0; i < mf->count; i++) {
		char mark[16], *m;

		if (!mf->t[i].leaf)
			continue;
		snprintf(mark, sizeof(mark), "\001%u\002", i);
		m = strdup(mark);
		if (!m)
			return -ENOMEM;
		json_object_set_serializer(mf->t[i].leaf, json_object_userdata_to_json_string, m,
					   json_object_free_userdata);
		n++;
	}
	marked = msp_entry_text(mf->name, mf->entry);
	tp->cuts = calloc(n ? n : 1, sizeof(*tp->cuts));
	if (!marked || !tp->cuts) {
		free(marked);
		return -ENOMEM;
	}
	tp->text = dst = marked;        /* cut in place: the text only shrinks */
	for (p = marked; *p; ) {
		char *end;

		if (*p != '\001') {
			*dst++ = *p++;
			continue;
		}
		if (tp->cut_count == n)
			return -EPROTO;
		tp->cuts[tp->cut_count].at = (size_t)(dst - marked);
		tp->cuts[tp->cut_count].ti = (uint32_t)strtoul(p + 1, &end, 10);
		if (*end != '\002' || tp->cuts[tp->cut_count++].ti >= mf->count)
			return -EPROTO;
		p = end + 1;
	}
	*dst = '\0';
	tp->text_len = (size_t)(dst - marked);
	return tp->cut_count == n ? 0 : -EPROTO;
}

/* A new template of @op's entry, built as its dump @mf describes it into *@out. Return 0 or
 * -errno (*@out NULL). */
static int tmpl_make(struct msp_worker *mw, struct msp_file *mf, const struct adump_op *op,
		     const char *dfx, size_t dfx_len, uint64_t hash, struct entry_tmpl **out)
{
	struct entry_tmpl *tp = calloc(1, sizeof(*tp));
	int ret;

	*out = NULL;
	if (!tp)
		return -ENOMEM;
	atomic_init(&tp->refs, 1);
	tp->hash = hash;
	tp->tensor_count = op->tensor_count;
	tp->dfx_len = dfx_len;
	tp->name = strdup(mf->name);
	tp->dfx = strndup(dfx, dfx_len);
	tp->kinds = malloc(op->tensor_count + 1);
	tp->data_names = calloc(op->tensor_count + 1, sizeof(*tp->data_names));
	tp->requires_grad = calloc(op->tensor_count + 1, sizeof(*tp->requires_grad));
	if (!tp->name || !tp->dfx || !tp->kinds || !tp->data_names || !tp->requires_grad) {
		tmpl_put(tp);
		return -ENOMEM;
	}
	ret = entry_build(mw, mf, op);
	if (ret == 0)
		ret = tmpl_cut(tp, mf);
	for (uint32_t i = 0; i < mf->count; i++) {
		tp->kinds[i] = (uint8_t)op->tensors[i].kind;
		/* A '/' in a data name would make a folder of dump_tensor_data: one component,
		 * as the exporter's (adump_name_component()). */
		if (mf->t[i].data_name)
			adump_name_component(mf->t[i].data_name);
		tp->data_names[i] = mf->t[i].data_name;
		tp->requires_grad[i] = mf->t[i].requires_grad;
		mf->t[i].data_name = NULL;
		mf->t[i].leaf = NULL;
	}
	json_object_put(mf->entry);
	mf->entry = NULL;
	if (ret < 0) {
		tmpl_put(tp);
		return ret;
	}
	*out = tp;
	return 0;
}

/* @mf's entry: the worker's template of it, made if it has none. Return 0 or -errno. */
static int entry_get(struct msp_worker *mw, struct msp_file *mf, const struct adump_op *op)
{
	const char *dfx = op->dfx_message ? op->dfx_message : "";
	size_t dfx_len = strlen(dfx);
	uint64_t hash = tmpl_hash(mf->name, dfx, dfx_len, op);
	struct entry_tmpl **set = &mw->tmpl[hash % (TMPL_SEEN / TMPL_WAYS) * TMPL_WAYS], **slot;
	struct entry_tmpl *tp = NULL;
	int ret;

	for (slot = set; slot < set + TMPL_WAYS; slot++)
		if (tmpl_matches(*slot, hash, mf->name, dfx, dfx_len, op)) {
			tp = *slot;
			atomic_fetch_add_explicit(&tp->refs, 1, memory_order_relaxed);
			break;
		}
	if (!tp) {
		ret = tmpl_make(mw, mf, op, dfx, dfx_len, hash, &tp);
		if (ret < 0)
			return ret;
		if (dfx_len <= DFX_SEEN_MAX_LEN) {
			/* An empty way, else one of them by the hash's high bits. */
			for (slot = set; slot < set + TMPL_WAYS - 1 && *slot; slot++)
				;
			if (*slot)
				slot = set + (hash >> 60) % TMPL_WAYS;
			tmpl_put(*slot);
			*slot = tp;
			atomic_fetch_add_explicit(&tp->refs, 1, memory_order_relaxed);
		}
	}
	mf->tmpl = tp;
	for (uint32_t i = 0; i < mf->count; i++)
		mf->t[i].data_name = tp->data_names[i];
	return 0;
}

/* The entry's text, its items filled once every byte has passed (NULL: out of memory). */
static char *entry_text(struct adump_session *s, struct file_state *fs, struct msp_file *mf)
{
	const struct adump_op *op = &fs->op->op;
	struct msp_session *ms = s->out_session;
	const struct entry_tmpl *tp = mf->tmpl;
	struct adump_buf b = { 0 };
	size_t at = 0;

	for (uint32_t k = 0; k < tp->cut_count; k++) {
		uint32_t i = tp->cuts[k].ti;
		const struct msp_tensor *t = &mf->t[i];
		const struct adump_tensor *ot = &op->tensors[i];
		const struct adump_msentry_leaf leaf = {
			.dtype = ot->dtype, .dims = ot->dims, .dim_count = ot->dim_count,
			.stats = fs->has_stats ? adump_statacc_tensor(&fs->stats, i) : NULL,
			.requires_grad = tp->requires_grad[i],
			.has_md5 = ms->has_md5, .md5 = t->crc,
			/* its .pt file was written */
			.data_name = ms->has_data && t->pt.mem ? t->data_name : NULL,
		};

		adump_buf_put(&b, tp->text + at, tp->cuts[k].at - at);
		adump_msentry_leaf_text(&b, &leaf);
		at = tp->cuts[k].at;
	}
	adump_buf_put(&b, tp->text + at, tp->text_len - at);
	if (b.err) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}

/* ---- the worker's side ------------------------------------------------------------------- */

static int msp_worker_init(struct adump_worker *w)
{
	w->out_state = calloc(1, sizeof(struct msp_worker));
	return w->out_state ? 0 : -ENOMEM;
}

static void msp_worker_fini(struct adump_worker *w)
{
	struct msp_worker *mw = w->out_state;

	if (!mw)
		return;
	for (unsigned i = 0; i < DFX_SEEN; i++) {
		free(mw->dfx[i].text);
		json_object_put(mw->dfx[i].dfx);
	}
	for (unsigned i = 0; i < TMPL_SEEN; i++)
		tmpl_put(mw->tmpl[i]);
	while (mw->blocks) {
		struct msp_block *b = mw->blocks;

		mw->blocks = b->next;
		free(b);
	}
	free(mw);
	w->out_state = NULL;
}

static struct msp_write *write_get(struct msp_worker *mw)
{
	struct msp_write *x = mw->free_list;

	if (!x) {
		/* Grown in blocks, kept until the worker stops: steady state allocates nothing. */
		struct msp_block *b = calloc(1, sizeof(*b));

		if (!b)
			return NULL;
		b->next = mw->blocks;
		mw->blocks = b;
		for (unsigned i = 0; i < WRITE_BLOCK; i++) {
			b->writes[i].next = mw->free_list;
			mw->free_list = &b->writes[i];
		}
		x = mw->free_list;
	}
	mw->free_list = x->next;
	return x;
}

static void write_put(struct msp_worker *mw, struct msp_write *x)
{
	x->next = mw->free_list;
	mw->free_list = x;
}

/* A tensor's last byte has passed: its CRC is known, the parts around its bytes go out. */
static void tensor_complete(struct adump_worker *w, struct file_state *fs, struct msp_tensor *t)
{
	if (t->pf.fd < 0 || fs->is_failed)
		return;
	adump_pt_set_crc(&t->pt, t->crc);
	t->head_write = (struct adump_chunk_write){
		.req = { .fd = t->pf.fd, .buf_index = -1, .buf = t->pt.head, .len = t->pt.head_len,
			 .offset = 0 },
		.file = fs,
	};
	t->tail_write = (struct adump_chunk_write){
		.req = { .fd = t->pf.fd, .buf_index = -1, .buf = t->pt.tail, .len = t->pt.tail_len,
			 .offset = t->pt.data_offset + t->pt.data_bytes },
		.file = fs,
	};
	if (adump_submit_write(w, &t->head_write))
		adump_submit_write(w, &t->tail_write);
}

/* The bytes around tensor @i's in its .pt file. Return 0, or -errno (the file has failed);
 * 1: this tensor gets no file (a dtype torch cannot store). */
static int tensor_layout(struct adump_session *s, struct file_state *fs, struct msp_file *mf,
			 uint32_t i)
{
	const struct adump_tensor *ot = &fs->op->op.tensors[i];
	struct msp_tensor *t = &mf->t[i];
	char archive[ADUMP_PT_ARCHIVE_MAX + 1];
	int ret;

	ret = adump_pt_archive_name(t->data_name, archive, sizeof(archive));
	if (ret == 0)
		ret = adump_pt_init(&t->pt, archive, ot->dtype, ot->dims, ot->dim_count, ot->bytes);
	if (ret == -ADUMP_ERR_UNSUPPORTED) {
		adump_log_once(ADUMP_LOG_WARN, MODULE, "%s: dtype %s has no torch storage: "
			       "described in dump.json without a .pt file", t->data_name,
			       adump_dtype_name(ot->dtype) ? adump_dtype_name(ot->dtype) : "?");
		return 1;
	}
	if (ret < 0)
		adump_file_fail(s, fs, ret, "laying out a .pt file of");
	return ret;
}

/* <dir>/dump_tensor_data/<name> in @dst. Return: 0, -ENAMETOOLONG. */
static int data_path(char *dst, size_t cap, const char *dir, const char *name)
{
	return adump_strjoin(dst, cap, (const char *const[]){ dir, "/dump_tensor_data/", name },
			     3) < cap ? 0 : -ENAMETOOLONG;
}

/* Tensor @i's .pt file, at <dir>/dump_tensor_data/<data_name>. Return 0 or -errno (the file
 * has failed). */
static int tensor_open(struct adump_worker *w, struct file_state *fs, struct msp_file *mf,
		       uint32_t i)
{
	struct adump_session *s = w->session;
	struct msp_tensor *t = &mf->t[i];
	char path[4200];
	int ret = 0;

	ret = data_path(path, sizeof(path), mf->dir, t->data_name);
	if (ret == 0)
		ret = ADUMP_TESTPOINT("worker.open");
	if (ret == 0)
		ret = adump_session_pubfile_open(s, &t->pf, path, 0, ADUMP_FILE_MODE, &w->dir);
	if (ret == -ENOENT) {
		/* The directory's first tensor: dump_tensor_data is made when needed, so that a
		 * directory nothing was dumped into stays empty. */
		char *data_dir = NULL;

		if (asprintf(&data_dir, "%s/dump_tensor_data", mf->dir) < 0)
			data_dir = NULL;
		ret = data_dir ? adump_session_mkdir(s, data_dir) : -ENOMEM;
		free(data_dir);
		if (ret == 0)
			ret = adump_session_pubfile_open(s, &t->pf, path, 0, ADUMP_FILE_MODE,
							 &w->dir);
	}
	if (ret < 0) {
		t->pf.fd = -1;
		atomic_fetch_add_explicit(&s->write_errors, 1, memory_order_relaxed);
		adump_file_fail(s, fs, ret, "creating a .pt file of");
	}
	return ret;
}

static void msp_file_begin(struct adump_worker *w, struct file_state *fs, bool is_whole)
{
	struct adump_session *s = w->session;
	struct msp_session *ms = s->out_session;
	const struct adump_op *op = &fs->op->op;
	struct msp_file *mf;
	uint64_t start = 0, overhead = 0;
	int ret;

	(void)is_whole;
	{
		/* The dump's name in logs and the loss log: where its .pt files go, not the CANN
		 * file it is not. Never longer than the CANN path, so it fits in its place. */
		const char *dir = fs->op->dir ? fs->op->dir : s->dir;
		size_t len = strlen(dir) + strlen("/dump_tensor_data/") + strlen(op->op_name);

		if (len <= strlen(fs->path))
			data_path(fs->path, len + 1, dir, op->op_name);
	}
	mf = calloc(1, sizeof(*mf) + op->tensor_count * sizeof(mf->t[0]));
	if (!mf) {
		adump_file_fail(s, fs, -ENOMEM, "starting");
		return;
	}
	fs->out_file = mf;
	mf->count = op->tensor_count;
	mf->dir = fs->op->dir ? fs->op->dir : s->dir;
	mf->has_data = ms->has_data;
	mf->has_crc = ms->has_data || ms->has_md5;
	for (uint32_t i = 0; i < mf->count; i++) {
		mf->t[i].pf.fd = mf->t[i].pf.dir_fd = -1;
		mf->t[i].start = start;
		start += op->tensors[i].bytes;
	}
	/* The slot first: a dump that fails from here on keeps its place (empty). */
	mf->slot = msp_slot_reserve(ms, mf->dir);
	mf->name = strdup(op->op_name);
	if (!mf->slot || !mf->name) {
		adump_file_fail(s, fs, -ENOMEM, "starting");
		return;
	}
	ret = entry_get(w->out_state, mf, op);
	if (ret < 0) {
		adump_file_fail(s, fs, ret, ret == -ADUMP_ERR_CORRUPT ?
				"a dfx_message that is not a JSON object in" : "describing");
		return;
	}
	ret = adump_statacc_init(&fs->stats, op, 0);
	if (ret < 0) {
		adump_file_fail(s, fs, ret, "starting statistics of");
		return;
	}
	fs->has_stats = true;
	if (!mf->has_data)
		return;
	for (uint32_t i = 0; i < mf->count && !fs->is_failed; i++)
		if (mf->t[i].data_name && tensor_layout(s, fs, mf, i) == 0)
			overhead += mf->t[i].pt.head_len + mf->t[i].pt.tail_len;
	if (fs->is_failed)
		return;
	/* The disk guard sees the files' size (tensors and the zip around them) before any
	 * of them exists. */
	fs->header_len = overhead;
	if (adump_guard_file_admit(s, fs) < 0)
		return;
	for (uint32_t i = 0; i < mf->count && !fs->is_failed; i++)
		if (mf->t[i].pt.mem)
			tensor_open(w, fs, mf, i);
	if (fs->is_failed)
		return;
	for (uint32_t i = 0; i < mf->count; i++)
		if (op->tensors[i].bytes == 0)
			tensor_complete(w, fs, &mf->t[i]);
}

/* The record's bytes of tensor @t (payload [lo, hi)) into its .pt file. Return: true if a
 * write is in flight for it. */
static bool piece_submit(struct adump_worker *w, struct adump_rec *rec, struct file_state *fs,
			 struct msp_tensor *t, uint64_t lo, uint64_t hi)
{
	struct msp_write *x = write_get(w->out_state);
	const char *data = adump_rec_data(rec);

	if (!x) {
		adump_file_fail(w->session, fs, -ENOMEM, "queueing a write to");
		return false;
	}
	x->cw = (struct adump_chunk_write){
		.req = { .fd = t->pf.fd, .buf_index = adump_rec_buf_index(rec),
			 .buf = data + (lo - rec->offset), .len = hi - lo,
			 .offset = t->pt.data_offset + (lo - t->start) },
		.file = fs, .priv = &w->session->writes[rec->index],
	};
	if (adump_submit_write(w, &x->cw))
		return true;
	write_put(w->out_state, x);
	return false;
}

static void msp_record(struct adump_worker *w, struct adump_chan *chan, struct adump_rec *rec,
		       struct file_state *fs)
{
	struct adump_session *s = w->session;
	struct msp_file *mf = fs->out_file;
	const struct adump_op *op = &fs->op->op;
	struct adump_chunk_write *anchor = &s->writes[rec->index];
	const char *data = adump_rec_data(rec);
	uint64_t lo = rec->offset, hi = rec->offset + rec->len;
	uintptr_t in_flight = 0;

	if (fs->has_stats)
		adump_statacc_record(&fs->stats, rec);
	/* The anchor counts the record's writes in flight; its pieces complete in any order. */
	*anchor = (struct adump_chunk_write){ .chan = chan, .rec = rec };
	while (rec->len && mf->next_tensor < mf->count && !fs->is_failed) {
		struct msp_tensor *t = &mf->t[mf->next_tensor];
		uint64_t t_end = t->start + op->tensors[mf->next_tensor].bytes;
		uint64_t a, b;

		/* Done, or empty: an empty tensor's file was completed when the dump began
		 * (msp_file_begin()); completing it again here, when it sits inside this
		 * record's range, wrote its head and tail twice, the second time while the
		 * first writes were in flight. */
		if (t_end == t->start || (t_end <= lo && t->seen == t_end - t->start)) {
			mf->next_tensor++;
			continue;
		}
		if (t->start >= hi)
			break;
		a = lo > t->start ? lo : t->start;
		b = hi < t_end ? hi : t_end;
		if (a != t->start + t->seen) {
			/* Records of a file come in payload order; a gap means lost bytes. */
			adump_file_fail(s, fs, -ADUMP_ERR_DROPPED, "a gap in the data of");
			break;
		}
		if (mf->has_crc)
			t->crc = adump_crc32(t->crc, data + (a - rec->offset), (size_t)(b - a));
		if (t->pf.fd >= 0 && piece_submit(w, rec, fs, t, a, b))
			in_flight++;
		t->seen += b - a;
		if (b == t_end) {
			tensor_complete(w, fs, t);
			mf->next_tensor++;
		} else {
			break;
		}
	}
	anchor->priv = (void *)in_flight;
	if (in_flight == 0)
		adump_record_done(w, chan, rec, fs);
}

/* A piece completed: the last one of its record makes the worker finish the record. The
 * msp_write goes back to the free list now; the worker reads cw->rec and cw->chan right
 * after this call, before anything can take it again. */
static void msp_write_done(struct adump_worker *w, struct adump_chunk_write *cw)
{
	struct adump_chunk_write *anchor = cw->priv;
	uintptr_t left;

	if (!anchor)
		return;                 /* a tensor's head or tail */
	left = (uintptr_t)anchor->priv - 1;
	anchor->priv = (void *)left;
	if (left == 0) {
		cw->chan = anchor->chan;
		cw->rec = anchor->rec;
	}
	write_put(w->out_state, (struct msp_write *)cw);
}

static void msp_file_end(struct adump_worker *w, struct file_state *fs)
{
	struct adump_session *s = w->session;
	struct msp_session *ms = s->out_session;
	struct msp_file *mf = fs->out_file;
	char *text = NULL;

	if (!mf)
		return;
	for (uint32_t i = 0; i < mf->count; i++) {
		struct msp_tensor *t = &mf->t[i];
		char path[4200];
		int ret;

		if (t->pf.fd < 0)
			continue;
		if (!fs->is_failed && t->seen != fs->op->op.tensors[i].bytes)
			adump_file_fail(s, fs, -ADUMP_ERR_DROPPED, "missing data of");
		/* Fits: tensor_open() built the same name. */
		data_path(path, sizeof(path), mf->dir, t->data_name);
		ret = adump_session_pubfile_close(s, &t->pf, path,
						  fs->is_failed ? -ADUMP_ERR_WRITE : 0, ".failed",
						  &w->dir);
		t->pf.fd = -1;
		if (ret < 0 && !fs->is_failed)
			adump_file_fail(s, fs, ret, "publishing a .pt file of");
	}
	if (!fs->is_failed && mf->tmpl) {
		text = entry_text(s, fs, mf);
		if (!text)
			adump_file_fail(s, fs, -ENOMEM, "describing");
	}
	if (mf->slot)
		msp_slot_fill(ms, mf->dir, mf->slot, text, strncmp(mf->name, "Module.", 7) == 0,
			      &fs->op->journal_slot);
	else
		free(text);
	if (fs->has_stats)
		adump_statacc_fini(&fs->stats);
	fs->has_stats = false;
	for (uint32_t i = 0; i < mf->count; i++)
		adump_pt_fini(&mf->t[i].pt);
	tmpl_put(mf->tmpl);
	json_object_put(mf->entry);
	free(mf->name);
	free(mf);
	fs->out_file = NULL;
}

const struct adump_output_ops adump_out_msprobe = {
	.name = "msprobe",
	.worker_init = msp_worker_init,
	.worker_fini = msp_worker_fini,
	.file_begin = msp_file_begin,
	.record = msp_record,
	.write_done = msp_write_done,
	.file_end = msp_file_end,
	.session_init = msp_session_init,
	.session_fini = msp_session_fini,
	.dir_done = msp_dir_done,
};
