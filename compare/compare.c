/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`'s engine: list two dumps, group their files by op name as msaccucmp does,
 * compare matched ops on a pool of threads (each op's tensors streamed in chunks through the
 * reader), and hand back msaccucmp's result rows in op order. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare/compare_int.h"

#define CHUNK_ELEMENTS_DEFAULT ((size_t)64 << 10)
#define MSG_BYTES 8192
#define FP16_MAX 65504.0
/* Bytes of each tensor asked for ahead of the reads (posix_fadvise WILLNEED), renewed when
 * half of the window has been read. */
#define PREFETCH_BYTES ((uint64_t)64 << 20)

/* ---- configuration ---------------------------------------------------------------------- */

int adump_compare_alg_parse(struct adump_compare_config *cfg, const char *list, char *msg,
			    size_t cap)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	if (!cfg || !list)
		return -ADUMP_ERR_CONFIG;
	cfg->alg_count = 0;
	if (!strcmp(list, "all"))
		return 0;
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int alg = -1;
		bool is_dup = false;

		while (isspace((unsigned char)*tok))
			tok++;
		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
			if (!strcmp(tok, adump_compare_alg_name(i)))
				alg = i;
		if (alg < 0 && *tok && strspn(tok, "0123456789") == strlen(tok) && strlen(tok) < 3 &&
		    atoi(tok) < ADUMP_COMPARE_ALG_COUNT)
			alg = atoi(tok);
		if (alg < 0) {
			if (msg && cap)
				snprintf(msg, cap, "unknown algorithm '%s' (names or 0-9, or all)", tok);
			ret = -ADUMP_ERR_CONFIG;
			break;
		}
		for (uint32_t i = 0; i < cfg->alg_count; i++)
			is_dup |= cfg->algs[i] == (enum adump_compare_alg)alg;
		if (!is_dup)
			cfg->algs[cfg->alg_count++] = alg;
	}
	free(copy);
	if (ret == 0 && cfg->alg_count == 0) {
		if (msg && cap)
			snprintf(msg, cap, "no algorithm in '%s'", list);
		ret = -ADUMP_ERR_CONFIG;
	}
	return ret;
}


/* Whether a file's dump has statistics: a statistics dump, or an msprobe entry (dump.json
 * holds each tensor's Max/Min/Mean/Norm whatever the task). */
static bool file_has_stats(const struct cmp_file *f)
{
	return f->is_stats || f->ms;
}

/* Statistics mode when some op can be compared only by statistics (a side has no tensors,
 * both have statistics) and none only by tensors; ops of mixed kinds get a message in either
 * mode. */
static void mode_choose(struct adump_compare *c)
{
	bool has_stats = false, has_tensors = false;

	for (size_t i = 0; i < c->op_count; i++) {
		struct cmp_file *const *f = c->ops[i].file;
		bool by_tensors, by_stats;

		if (!f[MY] || !f[GOLDEN])
			continue;
		by_tensors = !f[MY]->is_stats && !f[GOLDEN]->is_stats;
		by_stats = file_has_stats(f[MY]) && file_has_stats(f[GOLDEN]);
		has_stats |= by_stats && !by_tensors;
		has_tensors |= by_tensors && !by_stats;
	}
	c->is_stats = has_stats && !has_tensors;
	if (c->is_stats) {
		c->cfg.has_overflow = false;
		c->cfg.has_msprobe = false;
	}
}

static const char *const stats_columns[ADUMP_COMPARE_STATS_COLUMNS] = {
	"Max diff",  "Min diff",  "Mean diff",  "L2norm diff", "MaxRelativeErr", "MinRelativeErr",
	"MeanRelativeErr", "NormRelativeErr", "NPU max", "NPU min", "NPU mean", "NPU l2norm",
	"Bench max", "Bench min", "Bench mean", "Bench l2norm", "Result"
};

static void columns_make(struct adump_compare *c)
{
	static const char *const head[] = { "Index",      "OpType",   "NPUDump", "DataType",
					    "Address",    "GroundTruth", "DataType", "Address",
					    "TensorIndex", "Shape" };
	uint32_t n = 0;

	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		c->columns[n++] = head[i];
	if (c->is_stats) {
		/* msprobe's summary mode (compare.md B.4/B.5); CompareFailReason is Err_message. */
		c->alg_column = n;
		for (uint32_t i = 0; i < ADUMP_COMPARE_STATS_COLUMNS; i++)
			c->columns[n++] = stats_columns[i];
		c->columns[n++] = "CompareFailReason";
		c->column_count = n;
		return;
	}
	if (c->cfg.has_overflow)
		c->columns[n++] = "OverFlow";
	c->alg_column = n;
	for (uint32_t i = 0; i < c->cfg.alg_count; i++)
		c->columns[n++] = adump_compare_alg_name(c->cfg.algs[i]);
	if (c->cfg.has_msprobe) {
		c->columns[n++] = "One Thousandth Err Ratio";
		c->columns[n++] = "Five Thousandths Err Ratio";
		c->columns[n++] = "EucDist";
		c->columns[n++] = "Accuracy Reached or Not";
	}
	c->columns[n++] = "CompareFailReason";
	c->column_count = n;
}

int adump_compare_open(const struct adump_compare_config *cfg, const char *my, const char *golden,
		       struct adump_compare **out, char *msg, size_t cap)
{
	struct adump_compare *c;
	char scratch[1];
	int ret;

	adump_msg_begin(&msg, &cap, scratch);
	if (!my || !golden || !out || (cfg && cfg->struct_size < sizeof(size_t))) {
		snprintf(msg, cap, "invalid arguments");
		return -ADUMP_ERR_CONFIG;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = (struct adump_compare_config)ADUMP_COMPARE_CONFIG_INIT;
	adump_config_take(&c->cfg, sizeof(c->cfg), cfg);
	if (c->cfg.alg_count > ADUMP_COMPARE_ALG_COUNT) {
		snprintf(msg, cap, "alg_count %u is more than %d", c->cfg.alg_count,
			 ADUMP_COMPARE_ALG_COUNT);
		free(c);
		return -ADUMP_ERR_CONFIG;
	}
	for (uint32_t i = 0; i < c->cfg.alg_count; i++)
		if ((unsigned)c->cfg.algs[i] >= ADUMP_COMPARE_ALG_COUNT) {
			free(c);
			snprintf(msg, cap, "unknown algorithm %d", (int)cfg->algs[i]);
			return -ADUMP_ERR_CONFIG;
		}
	if (!c->cfg.alg_count) {
		c->cfg.alg_count = ADUMP_COMPARE_ALG_COUNT;
		for (int i = 0; i < ADUMP_COMPARE_ALG_COUNT; i++)
			c->cfg.algs[i] = i;
	}
	if (!c->cfg.chunk_elements)
		c->cfg.chunk_elements = CHUNK_ELEMENTS_DEFAULT;
	adump_threads_default(&c->cfg.thread_count);
	for (int s = 0; s < 2; s++)
		pthread_mutex_init(&c->side[s].packed_lock, NULL);
	ret = adump_compare_thresholds_parse(&c->thresholds, c->cfg.thresholds, msg, cap);
	c->cfg.thresholds = NULL;       /* borrowed only until now */
	if (ret == 0)
		ret = adump_compare_side_list(&c->side[MY], my, c->cfg.is_recursive, msg, cap);
	if (ret == 0)
		ret = adump_compare_side_list(&c->side[GOLDEN], golden, c->cfg.is_recursive, msg, cap);
	if (ret == 0)
		ret = adump_compare_match(c);
	if (ret == 0)
		mode_choose(c);
	columns_make(c);
	if (ret < 0) {
		if (ret == -ENOMEM && !msg[0])
			snprintf(msg, cap, "out of memory");
		adump_compare_close(c);
		return ret;
	}
	*out = c;
	return 0;
}

/* ---- comparing one op ---------------------------------------------------------------------- */

struct worker {
	struct adump_compare *c;
	struct adump_reader *r[2];
	/* FFTS+ (ffts_open()): the subtask dumps of a side, subs[s][0] being r[s], and what
	 * msaccucmp makes of them; NULL for an ordinary dump. */
	struct adump_reader **subs[2];
	uint32_t sub_cap[2], sub_open[2];
	struct adump_compare_ffts *merged[2];
	const char *path[2];            /* what messages name as the side's file */
	const struct adump_reader_header *h[2];         /* of the op being compared */
	char merged_path[2][PATH_MAX + 8];
	unsigned char *raw[2];
	float *val[2];
	char (*alg_msgs)[MSG_BYTES];     /* per algorithm, then one for the tensor */
	uint64_t advised[2];            /* payload offset at which to ask for the next window */
	char msg[MSG_BYTES];
};

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* A row with every column "NaN" but the ones given; @cells_set fills the rest. */
static struct cmp_row *op_row_add(struct adump_compare *c, struct cmp_op *op)
{
	struct cmp_row *rows = realloc(op->rows, (op->row_count + 1) * sizeof(*rows)), *row;

	if (!rows)
		return NULL;
	op->rows = rows;
	row = &rows[op->row_count];
	memset(row, 0, sizeof(*row));
	row->cells = calloc(c->column_count, sizeof(char *));
	if (!row->cells)
		return NULL;
	op->row_count++;
	row->pub.index = op->id;
	row->pub.cosine = NAN;
	row->pub.max_relative_error = NAN;
	row->pub.op_name = op->name;
	row->pub.timestamp = op->file[MY] ? op->file[MY]->timestamp : 0;
	if (op->module) {
		row->module = xstrdup(op->module);
		row->pub.module = row->module;
	}
	return row;
}

static void row_set(struct cmp_row *row, uint32_t col, const char *text)
{
	free(row->cells[col]);
	row->cells[col] = xstrdup(text);
}

/* Columns 0-9 (and OverFlow): Index, OpType, the names, dtypes, addresses, tensor, shape. */
static void row_head(struct adump_compare *c, struct cmp_row *row, struct cmp_op *op,
		     const char *op_type, const struct adump_tensor *t[2], const char *tensor_id)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)op->id);
	row_set(row, 0, buf);
	row_set(row, 1, op_type ? op_type : "NaN");
	row_set(row, 2, op->file[MY] ? (op->shown ? op->shown : op->name) : "*");
	row_set(row, 5, op->file[GOLDEN] ? (op->shown ? op->shown : op->name) : "*");
	for (int s = 0; s < 2; s++) {
		row_set(row, 3 + 3 * s, t[s] ? adump_compare_dtype_name(t[s]->dtype) : "NaN");
		if (t[s] && t[s]->address)
			snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t[s]->address);
		else
			snprintf(buf, sizeof(buf), "NaN");
		row_set(row, 4 + 3 * s, buf);
	}
	row_set(row, 8, tensor_id ? tensor_id : "NaN");
	if (t[MY]) {
		char shape[ADUMP_MAX_DIMS * 21 + 3];
		size_t len = 0;

		shape[len++] = '[';
		for (uint32_t d = 0; d < t[MY]->dim_count && d < ADUMP_MAX_DIMS; d++)
			len += (size_t)snprintf(shape + len, sizeof(shape) - len, "%s%llu", d ? "," : "",
						(unsigned long long)t[MY]->dims[d]);
		snprintf(shape + len, sizeof(shape) - len, "]");
		row_set(row, 9, shape);
	} else {
		row_set(row, 9, "NaN");
	}
	row->pub.tensor_id = row->cells[8];
	for (uint32_t i = 10; i < c->column_count; i++)
		if (!row->cells[i])
			row_set(row, i, "NaN");
}

/* The module an op ran in: its header's `module` attribute (adump.torch at level="op"), or
 * for a module's own dump (adump.torch names them "Module.<path>.<Class>.<pass>.<n>") the op
 * itself, by its header's dotted name as the attribute gives it (@name, the file name's, when
 * there is no header: statistics dumps); NULL when neither. */
static const char *module_of(const struct adump_reader_header *h, const char *name)
{
	for (uint32_t i = 0; i < h->attr_count; i++)
		if (h->attrs[i].name && !strcmp(h->attrs[i].name, "module") && h->attrs[i].value &&
		    h->attrs[i].value[0])
			return h->attrs[i].value;
	if (h->op_name && !strncmp(h->op_name, "Module.", 7))
		return h->op_name;
	if (!strncmp(name, "Module.", 7) || !strncmp(name, "Module_", 7))
		return name;
	return NULL;
}

/* The empty, NaN-filled row for an op that could not be compared; @op_type may be NULL. */
static int row_failed(struct adump_compare *c, struct cmp_op *op, const char *op_type,
		      const char *message)
{
	const struct adump_tensor *none[2] = { NULL, NULL };
	struct cmp_row *row = op_row_add(c, op);

	if (!row)
		return -ENOMEM;
	row_head(c, row, op, op_type, none, NULL);
	if (c->cfg.has_msprobe)
		row_set(row, c->column_count - 2, "None");
	row_set(row, c->column_count - 1, message);
	return 0;
}

/* A format as msaccucmp names it: adump's name, but for the few it spells differently. */
static void format_text(int32_t format, char *buf, size_t cap)
{
	const char *name = adump_format_name(format);

	if (!name)
		snprintf(buf, cap, "%d", (int)format);
	else if (!strncmp(name, "HASHTABLE_", 10))
		snprintf(buf, cap, "%s", name + 10);
	else if (!strcmp(name, "FRACTAL_DECONV_SP_STRIDE8_TRANS"))
		snprintf(buf, cap, "%s", name + 8);
	else
		snprintf(buf, cap, "%s", name);
}

#define SHAPE_TEXT (ADUMP_MAX_DIMS * 22 + 3)

/* Whether @a and @b have one shape; when not, both as msaccucmp writes them into @sa, @sb. */
static bool same_shape(const struct adump_tensor *a, const struct adump_tensor *b,
		       char sa[SHAPE_TEXT], char sb[SHAPE_TEXT])
{
	bool is_same = a->dim_count == b->dim_count;

	for (uint32_t d = 0; is_same && d < a->dim_count; d++)
		is_same = a->dims[d] == b->dims[d];
	if (!is_same) {
		adump_compare_dims_text(a->dims, a->dim_count, "()", sa, SHAPE_TEXT);
		adump_compare_dims_text(b->dims, b->dim_count, "()", sb, SHAPE_TEXT);
	}
	return is_same;
}

/* msaccucmp's check of one group (inputs or outputs) as a whole: equal counts, then pair by
 * pair equal formats and shapes. Return: true when the group can be compared; otherwise @msg
 * says why. */
static bool group_check(const struct adump_reader_header *h[2], const char *op_name,
			enum adump_tensor_kind kind, char *msg, size_t cap)
{
	const char *what = kind == ADUMP_TENSOR_INPUT ? "input" : "output";
	uint32_t n[2] = { h[MY]->kind_count[kind], h[GOLDEN]->kind_count[kind] };
	uint32_t first[2] = { 0, 0 };

	if (n[MY] != n[GOLDEN]) {
		snprintf(msg, cap, "[%s] The number of %s does not match (%u vs %u).", op_name, what,
			 n[MY], n[GOLDEN]);
		return false;
	}
	if (!n[MY]) {
		snprintf(msg, cap, "[%s] There is no %s. Skip the %s:%s.", op_name, what, op_name,
			 what);
		return false;
	}
	for (int s = 0; s < 2; s++)
		for (uint32_t k = 0; k < (uint32_t)kind; k++)
			first[s] += h[s]->kind_count[k];
	for (uint32_t i = 0; i < n[MY]; i++) {
		const struct adump_tensor *a = &h[MY]->tensors[first[MY] + i].info;
		const struct adump_tensor *b = &h[GOLDEN]->tensors[first[GOLDEN] + i].info;
		char sa[SHAPE_TEXT], sb[SHAPE_TEXT];

		if (a->format != b->format) {
			char fa[64], fb[64];

			format_text(a->format, fa, sizeof(fa));
			format_text(b->format, fb, sizeof(fb));
			snprintf(msg, cap, "[%s] The format does not match (%s vs %s) for %s:%s:%u.",
				 op_name, fa, fb, op_name, what, i);
			return false;
		}
		if (!same_shape(a, b, sa, sb)) {
			snprintf(msg, cap, "[%s] The shape does not match (%s vs %s) for %s:%s:%u.",
				 op_name, sa, sb, op_name, what, i);
			return false;
		}
	}
	return true;
}

/* Stream both tensors through the accumulator; KL reads them a second time. On failure @msg
 * holds the reason and the return is negative. */
static int tensor_stream(struct worker *w, const uint32_t idx[2], uint64_t count,
			 const int32_t dtype[2], bool has_kl, struct adump_compare_acc *acc)
{
	size_t chunk = w->c->cfg.chunk_elements;
	uint32_t eb[2] = { adump_compare_elem_bytes(dtype[MY]), adump_compare_elem_bytes(dtype[GOLDEN]) };
	/* float32 needs no conversion: the metrics read the raw chunk itself (no copy, and half
	 * the bytes in the cache). Its alignment is malloc's. */
	const float *val[2];

	for (int s = 0; s < 2; s++)
		val[s] = dtype[s] == ADUMP_DT_FLOAT ? (const float *)w->raw[s] : w->val[s];

	adump_compare_acc_init(acc);
	acc->has_msprobe = w->c->cfg.has_msprobe;
	w->advised[0] = w->advised[1] = 0;
	/* Cleared by the first chunk whose bytes differ: two runs that agree up to an op (what a
	 * compare looks for) cost one pass over each of its tensors, not two. */
	acc->is_identical = has_kl && dtype[MY] == dtype[GOLDEN];
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && !(has_kl && adump_compare_kl_needed(acc) && !acc->is_identical))
			break;
		for (uint64_t off = 0; off < count; off += chunk) {
			size_t n = count - off < chunk ? (size_t)(count - off) : chunk;

			/* A tensor that fit in one chunk is still in the buffers. */
			if (!(pass == 1 && count <= chunk)) {
				for (int s = 0; s < 2; s++) {
					/* Keep the kernel reading ahead of us: from a cold cache the
					 * two files' own readahead alone left each read waiting. */
					uint64_t at = off * eb[s], end = count * eb[s];

					if (pass == 0 && at >= w->advised[s] && at < end &&
					    !w->merged[s]) {
						uint64_t len = end - at < PREFETCH_BYTES ? end - at
											 : PREFETCH_BYTES;

						adump_reader_willneed(w->r[s], idx[s], at, len);
						w->advised[s] = at + len / 2;
					}
					struct adump_reader *r = w->r[s];
					int ret = w->merged[s] ?
						adump_compare_ffts_read(w->merged[s], idx[s], off * eb[s],
									w->raw[s], n * eb[s], &r) :
						adump_reader_read(r, idx[s], off * eb[s], w->raw[s],
								  n * eb[s]);

					if (ret < 0) {
						snprintf(w->msg, sizeof(w->msg), "%s",
							 adump_reader_error(r)[0] ? adump_reader_error(r)
										  : adump_strerror(ret));
						return ret;
					}
					if (pass == 0)
						atomic_fetch_add_explicit(&w->c->bytes[s], n * eb[s],
									  memory_order_relaxed);
					if (dtype[s] != ADUMP_DT_FLOAT)
						adump_compare_to_float(dtype[s], w->raw[s], n, w->val[s]);
				}
			}
			if (pass == 0 && acc->is_identical &&
			    memcmp(w->raw[MY], w->raw[GOLDEN], n * eb[MY]) != 0)
				acc->is_identical = false;
			if (pass == 0)
				adump_compare_acc_add(acc, val[MY], val[GOLDEN], n);
			else
				adump_compare_acc_kl(acc, val[MY], val[GOLDEN], n);
		}
	}
	return 0;
}

static int tensor_compare(struct worker *w, struct cmp_op *op, const char *op_type,
			  enum adump_tensor_kind kind, uint32_t i, uint32_t first[2])
{
	struct adump_compare *c = w->c;
	const struct adump_reader_header *const *h = w->h;
	const struct adump_tensor *t[2];
	uint32_t idx[2] = { first[MY] + i, first[GOLDEN] + i };
	int32_t dtype[2];
	uint64_t count[2];
	char tensor_id[4096 + 32], cells[ADUMP_COMPARE_ALG_COUNT][ADUMP_COMPARE_CELL_BYTES];
	struct adump_compare_metrics m;
	struct adump_compare_acc acc;
	struct cmp_row *row;
	bool has_kl = false, is_ok = true;

	for (int s = 0; s < 2; s++) {
		t[s] = &h[s]->tensors[idx[s]].info;
		dtype[s] = t[s]->dtype;
	}
	snprintf(tensor_id, sizeof(tensor_id), "%s:%s:%u", op->shown ? op->shown : op->name,
		 kind == ADUMP_TENSOR_INPUT ? "input" : "output", i);
	row = op_row_add(c, op);
	if (!row)
		return -ENOMEM;
	row_head(c, row, op, op_type, t, tensor_id);
	w->msg[0] = '\0';
	for (int s = 0; s < 2 && is_ok; s++) {
		uint32_t eb = adump_compare_elem_bytes(dtype[s]);
		uint64_t elements = adump_compare_dims_elements(t[s]->dims, t[s]->dim_count);

		if (!eb) {
			snprintf(w->msg, sizeof(w->msg), "[%s] %s: data type %s (%d) has no numeric "
				 "comparison.", op->name, s == MY ? "my output" : "ground truth",
				 adump_compare_dtype_name(dtype[s]), dtype[s]);
			is_ok = false;
		} else if (t[s]->bytes % eb && t[s]->bytes / eb < elements) {
			snprintf(w->msg, sizeof(w->msg), "[%s] %s: %llu bytes is not a whole number "
				 "of %s elements.", op->name, s == MY ? "my output" : "ground truth",
				 (unsigned long long)t[s]->bytes, adump_compare_dtype_name(dtype[s]));
			is_ok = false;
		} else {
			/* msaccucmp reads as many elements as the shape holds (fewer if the payload
			 * is short): bytes past them are not compared. */
			count[s] = t[s]->bytes / eb < elements ? t[s]->bytes / eb : elements;
		}
	}
	if (is_ok && count[MY] != count[GOLDEN]) {
		snprintf(w->msg, sizeof(w->msg),
			 "The my output dump data size (%llu) in ''%s'' does not match the ground "
			 "truth dump data size (%llu) in ''%s''.",
			 (unsigned long long)count[MY], w->path[MY],
			 (unsigned long long)count[GOLDEN], w->path[GOLDEN]);
		is_ok = false;
	}
	for (uint32_t k = 0; k < c->cfg.alg_count; k++)
		has_kl |= c->cfg.algs[k] == ADUMP_COMPARE_KL;
	if (is_ok && tensor_stream(w, idx, count[MY], dtype, has_kl, &acc) < 0) {
		char text[MSG_BYTES];

		memcpy(text, w->msg, sizeof(text));
		snprintf(w->msg, sizeof(w->msg), "[%.*s] %.*s", 2048, op->name, MSG_BYTES - 2100,
			 text);
		is_ok = false;
	}
	if (!is_ok) {
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", w->msg);
		row_set(row, c->column_count - 1, w->msg);
		if (c->cfg.has_msprobe)
			row_set(row, c->column_count - 2, "None");
		return 0;
	}
	{
		char *msgs[ADUMP_COMPARE_ALG_COUNT];

		for (int k = 0; k < ADUMP_COMPARE_ALG_COUNT; k++)
			msgs[k] = w->alg_msgs[k];
		adump_compare_acc_finish(&acc, adump_compare_is_scalar(t[MY]->dims, t[MY]->dim_count),
					 dtype[MY] == ADUMP_DT_BOOL && dtype[GOLDEN] == ADUMP_DT_BOOL,
					 w->path[MY], w->path[GOLDEN], &m, cells, msgs,
					 MSG_BYTES);
	}
	/* A shape holding a 0 reaches msaccucmp's cosine unflattened: the norm over the last axis
	 * has prod(dims[:-1]) elements, and numpy's truth test of it decides the branch. */
	if (count[MY] == 0 && t[MY]->dim_count >= 2 && !adump_compare_is_scalar(t[MY]->dims, t[MY]->dim_count)) {
		uint64_t lead = 1;

		for (uint32_t d = 0; d + 1 < t[MY]->dim_count; d++)
			lead *= t[MY]->dims[d];
		if (lead == 0) {
			m.value[ADUMP_COMPARE_COSINE] = 0;
			adump_compare_fmt6(cells[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, 0);
		} else if (lead > 1) {
			m.value[ADUMP_COMPARE_COSINE] = NAN;
			snprintf(cells[ADUMP_COMPARE_COSINE], ADUMP_COMPARE_CELL_BYTES, "NaN");
			snprintf(w->alg_msgs[ADUMP_COMPARE_COSINE], MSG_BYTES,
				 "Failed to execute 'compare' in 'CosineSimilarity'. The truth value of an "
				 "array with more than one element is ambiguous. Use a.any() or a.all()");
		}
	}
	/* Only the selected algorithms' messages, in their column order. */
	w->msg[0] = '\0';
	for (uint32_t k = 0; k < c->cfg.alg_count; k++) {
		enum adump_compare_alg alg = c->cfg.algs[k];

		row_set(row, c->alg_column + k, cells[alg]);
		if (w->alg_msgs[alg][0])
			adump_compare_msg_add(w->msg, sizeof(w->msg), w->alg_msgs[alg]);
	}
	if (c->cfg.has_overflow)
		row_set(row, c->alg_column - 1,
			dtype[MY] != ADUMP_DT_FLOAT16 ? "NaN"
			: m.max_abs_x >= FP16_MAX     ? "YES"
						      : "NO");
	if (c->cfg.has_msprobe) {
		char buf[64];
		uint32_t col = c->column_count - 5;

		adump_compare_fmt6(buf, sizeof(buf), m.one_thousandth);
		row_set(row, col, buf);
		adump_compare_fmt6(buf, sizeof(buf), m.five_thousandths);
		row_set(row, col + 1, buf);
		adump_compare_fmt6(buf, sizeof(buf), m.euclid);
		row_set(row, col + 2, buf);
		row_set(row, col + 3,
			adump_compare_accuracy_reached(m.value[ADUMP_COMPARE_COSINE], m.value[ADUMP_COMPARE_MAX_ABS]));
	}
	{
		char reason[1024];
		bool is_scalar = adump_compare_is_scalar(t[MY]->dims, t[MY]->dim_count);

		row->pub.verdict = adump_compare_verdict_judge(&c->thresholds, dtype[MY], dtype[GOLDEN],
							       is_scalar, &m, reason, sizeof(reason));
		row->reason = xstrdup(reason);
		/* A NaN/Inf difference is the one verdict the CSV shows: msaccucmp leaves the
		 * reason empty and the cells nan, which reads as nothing wrong. */
		if (m.nonfinite_diff_count) {
			adump_compare_msg_add(w->msg, sizeof(w->msg), reason);
			if (c->cfg.has_msprobe)
				row_set(row, c->column_count - 2, "No");
		}
	}
	row_set(row, c->column_count - 1, w->msg);
	row->pub.is_compared = true;
	row->pub.metrics = m;
	for (uint32_t k = 0; k < c->cfg.alg_count; k++) {
		if (c->cfg.algs[k] == ADUMP_COMPARE_COSINE)
			row->pub.cosine = m.value[ADUMP_COMPARE_COSINE];
		if (c->cfg.algs[k] == ADUMP_COMPARE_MAX_REL)
			row->pub.max_relative_error = m.value[ADUMP_COMPARE_MAX_REL];
	}
	return 0;
}

static int file_open(struct worker *w, int s, struct adump_reader *r, struct cmp_file *f)
{
	struct cmp_side *sd = &w->c->side[s];
	int ret;

	if (f->ms)
		return adump_msprobe_open(r, f->ms, f->ms_entry, false);
	if (!f->is_packed)
		return adump_reader_open(r, f->path);
	pthread_mutex_lock(&sd->packed_lock);
	ret = adump_reader_open_packed(r, sd->packed, &f->entry, false);
	pthread_mutex_unlock(&sd->packed_lock);
	return ret;
}

/* Open subtask dumps 1..count-1 of side @s after the first (in w->r[s]). */
static int subs_open(struct worker *w, int s, struct cmp_file *files, uint32_t count)
{
	if (count > w->sub_cap[s]) {
		struct adump_reader **subs = realloc(w->subs[s], count * sizeof(*subs));

		if (!subs)
			return -ENOMEM;
		for (uint32_t k = w->sub_cap[s]; k < count; k++)
			subs[k] = NULL;
		w->subs[s] = subs;
		w->sub_cap[s] = count;
	}
	w->subs[s][0] = w->r[s];
	for (uint32_t k = 1; k < count; k++) {
		int ret;

		if (!w->subs[s][k] && adump_reader_create(&w->subs[s][k]) < 0)
			return -ENOMEM;
		ret = file_open(w, s, w->subs[s][k], &files[k]);
		if (ret < 0)
			return ret;
		w->sub_open[s] = k;
	}
	return 0;
}

static void subs_close(struct worker *w, int s)
{
	for (uint32_t k = 1; k <= w->sub_open[s]; k++)
		adump_reader_close(w->subs[s][k]);
	w->sub_open[s] = 0;
	adump_compare_ffts_free(w->merged[s]);
	w->merged[s] = NULL;
}

/* msaccucmp's name for a merged dump: the first subtask's first four fields, then "*". */
static void merged_path_make(char *buf, size_t cap, const char *first)
{
	const char *base = strrchr(first, '/'), *p;
	int dots = 0;

	base = base ? base + 1 : first;
	for (p = base; *p && dots < 4; p++)
		dots += *p == '.';
	snprintf(buf, cap, "%.*s%s*", (int)(p - first), first, dots == 4 ? "" : ".");
}

/* An FFTS+ op's subtask dumps on side @s (in msaccucmp's order: by thread, or by manual
 * slice): merged along their cut axis, or when the cut names no axis the one with the latest
 * timestamp; without thread attributes (which msaccucmp cannot read either) the last. Return:
 * 0 with w->r[s] (and *h) ready; an msaccucmp error code with @text set; -ENOMEM. */
static int ffts_open(struct worker *w, struct cmp_op *op, int s,
		     const struct adump_reader_header **h, char *text, size_t cap)
{
	struct cmp_file *files = op->first[s], *pick = op->file[s];
	uint32_t n = op->count[s];
	struct adump_compare_ffts_attrs a;
	char why[1024];
	int ret;

	if (file_open(w, s, w->r[s], &files[0]) < 0) {
		snprintf(text, cap, "[%s] %s", op->name, adump_reader_error(w->r[s]));
		return 18;
	}
	ret = adump_compare_ffts_attrs_parse(adump_reader_header(w->r[s]), &a, why, sizeof(why));
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s: %u FFTS+ subtask dumps without "
			  "thread attributes (%s): compared by the last, %s", op->name, n, why,
			  pick->path);
	} else {
		if (a.slice_count != (int64_t)n)
			adump_log(ADUMP_LOG_WARN, "reader", "compare: This is a FFTS+ mode dump data "
				  "%s, The number of files does not match the number of thread "
				  "(instance slice num): %u files, slice_instance_num %lld", op->name,
				  n, (long long)a.slice_count);
		if (!a.has_cut) {
			for (uint32_t k = 0; k < n; k++)
				if (files[k].timestamp >= pick->timestamp || k == 0)
					pick = &files[k];
			adump_log(ADUMP_LOG_WARN, "reader", "compare: %s: The cut axis of Dump data "
				  "is invalid. The current compare dump file is %s (of %u)", op->name,
				  pick->path, n);
		}
	}
	if (ret < 0 || !a.has_cut) {
		adump_compare_ffts_attrs_free(&a);
		w->path[s] = pick->path;
		if (pick != &files[0]) {
			adump_reader_close(w->r[s]);
			if (file_open(w, s, w->r[s], pick) < 0) {
				snprintf(text, cap, "[%s] %s", op->name, adump_reader_error(w->r[s]));
				return 18;
			}
		}
		*h = adump_reader_header(w->r[s]);
		return 0;
	}
	ret = subs_open(w, s, files, n);
	if (ret < 0) {
		adump_compare_ffts_attrs_free(&a);
		if (ret == -ENOMEM)
			return ret;
		snprintf(text, cap, "[%s] %s", op->name,
			 adump_reader_error(w->subs[s][w->sub_open[s] + 1]));
		return 18;
	}
	ret = adump_compare_ffts_merge(&a, w->subs[s], n, &w->merged[s], why, sizeof(why));
	adump_compare_ffts_attrs_free(&a);
	if (ret) {
		if (ret > 0)
			snprintf(text, cap, "[%s] FFTS+ subtask dumps of %s: %s", op->name,
				 s == MY ? "my output" : "the ground truth", why);
		return ret;
	}
	merged_path_make(w->merged_path[s], sizeof(w->merged_path[s]), files[0].path);
	w->path[s] = w->merged_path[s];
	adump_log(ADUMP_LOG_INFO, "reader", "compare: This is a FFTS+ mode dump data %s, output "
		  "data has been merged, new file path is %s", op->name, w->path[s]);
	*h = adump_compare_ffts_header(w->merged[s]);
	return 0;
}

/* Side @s of @op opened for comparing. Return: as ffts_open(). */
static int side_open(struct worker *w, struct cmp_op *op, int s,
		     const struct adump_reader_header **h, char *text, size_t cap)
{
	w->path[s] = op->file[s]->path;
	if (op->file[s]->is_ffts && op->count[s] > 1)
		return ffts_open(w, op, s, h, text, cap);
	if (file_open(w, s, w->r[s], op->file[s]) < 0) {
		snprintf(text, cap, "[%s] %s", op->name, adump_reader_error(w->r[s]));
		return 18;
	}
	*h = adump_reader_header(w->r[s]);
	return 0;
}

/* A count column of a statistics dump; 0 when absent or not a count. */
static uint64_t stat_count(const struct adump_compare_stat *st)
{
	return st->is_present && st->value >= 0 && st->value < 1e18 ? (uint64_t)st->value : 0;
}

/* One tensor pair of two statistics dumps: msprobe's summary-mode cells. */
static int stats_tensor_compare(struct adump_compare *c, struct cmp_op *op,
				const struct adump_compare_stats st[2],
				enum adump_tensor_kind kind, uint32_t i, const uint32_t first[2])
{
	const struct adump_compare_stats_tensor *x[2] = { &st[MY].tensors[first[MY] + i],
							   &st[GOLDEN].tensors[first[GOLDEN] + i] };
	const struct adump_tensor *t[2] = { &x[MY]->t.info, &x[GOLDEN]->t.info };
	char tensor_id[4096 + 32], cells[ADUMP_COMPARE_STATS_COLUMNS][ADUMP_COMPARE_CELL_BYTES];
	double diff[4];
	struct cmp_row *row;
	char reason[1024], message[1200];
	enum adump_compare_verdict verdict;
	bool is_msprobe, is_nonfinite;

	snprintf(tensor_id, sizeof(tensor_id), "%s:%s:%u", op->name,
		 kind == ADUMP_TENSOR_INPUT ? "input" : "output", i);
	row = op_row_add(c, op);
	if (!row)
		return -ENOMEM;
	verdict = adump_compare_stats_cells(x[MY]->stat, x[GOLDEN]->stat,
					    &c->thresholds.of[adump_compare_class_of(t[MY]->dtype,
										     t[GOLDEN]->dtype)],
					    cells, diff, reason, sizeof(reason));
	for (uint32_t k = 0; k < ADUMP_COMPARE_STATS_COLUMNS; k++)
		row_set(row, c->alg_column + k, cells[k]);
	/* The CSV keeps msprobe's Err_message, but for the NaN/Inf reason (Result Warning). */
	is_msprobe = !strcmp(cells[ADUMP_COMPARE_STATS_COLUMNS - 1], "Warning");
	is_nonfinite = verdict == ADUMP_COMPARE_ERROR && is_msprobe && strstr(reason, " differs: ");
	snprintf(message, sizeof(message), "%s%s%s",
		 is_msprobe ? "Need double check api accuracy." : "",
		 is_nonfinite ? "," : "", is_nonfinite ? reason : "");
	row_set(row, c->column_count - 1, message);
	row_head(c, row, op, op->file[MY]->op_type, t, tensor_id);
	row->pub.is_compared = true;
	row->pub.verdict = verdict;
	row->reason = xstrdup(verdict == ADUMP_COMPARE_PASS ? "" :
			      reason[0] ? reason : "msprobe's summary rule: Warning");
	for (int s = 0; s < 2; s++) {
		const struct adump_compare_stat *st = x[s]->stat;

		row->pub.metrics.nan_count[s] = stat_count(&st[4]);
		row->pub.metrics.inf_count[s] = stat_count(&st[5]) + stat_count(&st[6]);
	}
	row->pub.metrics.first_nonfinite_diff = UINT64_MAX;
	if (is_nonfinite)                       /* NaN/Inf differ: no element to name */
		row->pub.metrics.nonfinite_diff_count = 1;
	return 0;
}

/* An op with an msprobe entry on a side: tensors are matched by position within inputs and
 * within outputs, each pair on its own, rather than msaccucmp's all-or-nothing group rule,
 * since the layouts need not record the same arguments (an msprobe module entry lists its
 * parameters after its arguments; a CANN capture may not): a tensor without counterpart, or
 * whose shape differs, gets a row saying so and the others are compared. @w NULL: compare
 * statistics @st. Return: 0 or -ENOMEM. */
static int tensor_compare(struct worker *w, struct cmp_op *op, const char *op_type,
			  enum adump_tensor_kind kind, uint32_t i, uint32_t first[2]);

static int op_compare_by_position(struct adump_compare *c, struct worker *w, struct cmp_op *op,
				  const char *op_type, const struct adump_reader_header *h[2],
				  const struct adump_compare_stats *st)
{
	int ret = 0;

	for (int g = 0; g < 2 && ret == 0; g++) {
		enum adump_tensor_kind kind = g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		const char *what = g ? "output" : "input";
		uint32_t first[2] = { 0, 0 }, n[2];

		for (int s = 0; s < 2; s++) {
			for (uint32_t k = 0; k < (uint32_t)kind; k++)
				first[s] += h[s]->kind_count[k];
			n[s] = h[s]->kind_count[kind];
		}
		for (uint32_t i = 0; i < n[MY] || i < n[GOLDEN]; i++) {
			char text[4096];

			if (i >= n[MY] || i >= n[GOLDEN]) {
				snprintf(text, sizeof(text), "[%.900s] %.900s:%s:%u has no counterpart "
					 "in %s (%u vs %u %ss).", op->name, op->name, what, i,
					 i >= n[MY] ? "my output" : "the ground truth", n[MY], n[GOLDEN],
					 what);
				ret = row_failed(c, op, op_type, text);
				continue;
			}
			{
				const struct adump_tensor *a = &h[MY]->tensors[first[MY] + i].info;
				const struct adump_tensor *b = &h[GOLDEN]->tensors[first[GOLDEN] + i].info;
				char sa[SHAPE_TEXT], sb[SHAPE_TEXT];

				if (!same_shape(a, b, sa, sb)) {
					snprintf(text, sizeof(text), "[%.900s] The shape does not match (%s "
						 "vs %s) for %.900s:%s:%u.", op->name, sa, sb, op->name, what,
						 i);
					adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
					ret = row_failed(c, op, op_type, text);
					continue;
				}
			}
			ret = w ? tensor_compare(w, op, op_type, kind, i, first)
				: stats_tensor_compare(c, op, st, kind, i, first);
		}
	}
	return ret;
}

/* An op whose files are statistics dumps (both, or one: then it cannot be compared). */
static int op_compare_stats(struct worker *w, struct cmp_op *op)
{
	struct adump_compare *c = w->c;
	struct adump_compare_stats st[2];
	const struct adump_reader_header *h[2] = { &st[MY].header, &st[GOLDEN].header };
	char text[2 * MSG_BYTES + 2], msg_io[2][MSG_BYTES];
	bool ok[2];
	int ret = 0;

	memset(st, 0, sizeof(st));
	if (!file_has_stats(op->file[MY]) || !file_has_stats(op->file[GOLDEN]) || !c->is_stats) {
		bool is_my = file_has_stats(op->file[MY]), is_golden = file_has_stats(op->file[GOLDEN]);

		snprintf(text, sizeof(text), is_my && is_golden ?
			 "[%s] Both sides are statistics dumps, but other ops are tensor dumps: "
			 "compare statistics dumps on their own." :
			 "[%s] %s is a statistics dump and %s a tensor dump: they cannot be compared.",
			 op->name, is_my ? "My output" : "The ground truth",
			 is_my ? "the ground truth" : "my output");
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 11;
		return row_failed(c, op, op->file[MY]->op_type, text);
	}
	for (int s = 0; s < 2; s++) {
		ret = op->file[s]->ms ?
			adump_compare_stats_msprobe(op->file[s]->ms, op->file[s]->ms_entry, &st[s]) :
			adump_compare_stats_load(op->file[s]->path, &st[s], w->msg, sizeof(w->msg));
		if (ret < 0)
			break;
	}
	if (ret < 0) {
		snprintf(text, sizeof(text), "[%s] %s", op->name, w->msg);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 18;
		ret = ret == -ENOMEM ? ret : row_failed(c, op, NULL, text);
		goto out;
	}
	if (op->file[MY]->ms || op->file[GOLDEN]->ms) {
		ret = op_compare_by_position(c, NULL, op, op->file[MY]->op_type, h, st);
		goto out;
	}
	for (int g = 0; g < 2; g++)
		ok[g] = group_check(h, op->name, g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT,
				    msg_io[g], sizeof(msg_io[g]));
	if (!ok[0] && !ok[1]) {
		snprintf(text, sizeof(text), "%s,%s", msg_io[0], msg_io[1]);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 11;
		ret = row_failed(c, op, op->file[MY]->op_type, text);
		goto out;
	}
	for (int g = 0; g < 2 && ret == 0; g++) {
		enum adump_tensor_kind kind = g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		uint32_t first[2] = { g ? h[MY]->kind_count[ADUMP_TENSOR_INPUT] : 0,
				      g ? h[GOLDEN]->kind_count[ADUMP_TENSOR_INPUT] : 0 };

		if (!ok[g]) {
			adump_log(ADUMP_LOG_INFO, "reader", "compare: %s", msg_io[g]);
			continue;
		}
		for (uint32_t i = 0; i < h[MY]->kind_count[kind] && ret == 0; i++)
			ret = stats_tensor_compare(c, op, st, kind, i, first);
	}
out:
	adump_compare_stats_free(&st[MY]);
	adump_compare_stats_free(&st[GOLDEN]);
	return ret;
}

static int op_compare(struct worker *w, struct cmp_op *op)
{
	struct adump_compare *c = w->c;
	const struct adump_reader_header *h[2];
	char msg_in[MSG_BYTES], msg_out[MSG_BYTES];
	bool ok_in, ok_out;
	const char *op_type;
	int ret = 0;

	if (!op->file[GOLDEN] || !op->file[MY]) {
		char text[4096 + 128];

		snprintf(text, sizeof(text), "[%s] There is no the %s dump file for the op \"%s\".",
			 op->name, op->file[MY] ? "ground truth" : "my output", op->name);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 2;
		return row_failed(c, op, NULL, text);
	}
	op_type = op->file[MY]->op_type;
	for (int s = 0; s < 2; s++)
		if (op->file[s]->clash) {
			/* Two dumps of one op and timestamp: which is which is unknown. */
			op->code = 2;
			return row_failed(c, op, op_type, op->file[s]->clash);
		}
	if (c->is_stats || op->file[MY]->is_stats || op->file[GOLDEN]->is_stats) {
		static const struct adump_reader_header no_attrs;

		op->module = module_of(&no_attrs, op->name);
		ret = op_compare_stats(w, op);
		op->module = NULL;
		return ret;
	}
	for (int s = 0; s < 2; s++) {
		char text[MSG_BYTES];

		ret = side_open(w, op, s, &w->h[s], text, sizeof(text));
		h[s] = w->h[s];
		/* msaccucmp names the op by the header of my output's dump when that has
		 * attributes (not a merged FFTS+ dump: msaccucmp's has none). */
		if (ret == 0 && s == MY && !w->merged[MY] && h[MY]->attr_count && h[MY]->op_name &&
		    h[MY]->op_name[0])
			op->shown = h[MY]->op_name;
		if (ret == 0 && s == MY)
			op->module = module_of(h[MY], op->shown ? op->shown : op->name);
		if (ret > 0) {
			adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
			op->code = ret;
			ret = row_failed(c, op, NULL, text);
			goto out;
		}
		if (ret < 0)
			goto out;
	}
	if (!w->merged[MY] && !w->merged[GOLDEN] &&
	    adump_compare_names_collide(h[MY]->op_name, h[GOLDEN]->op_name)) {
		char text[3 * MSG_BYTES];

		/* One dump a side, alike by file name only: not the same op (modules a.b, a_b). */
		snprintf(text, sizeof(text), "[%s] Not the same op: my output's dump (%s) holds "
			 "%.2048s, the ground truth's (%s) %.2048s; only their file names are alike.",
			 op->name, w->path[MY], h[MY]->op_name, w->path[GOLDEN],
			 h[GOLDEN]->op_name);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 2;
		ret = row_failed(c, op, op_type, text);
		goto out;
	}
	if (op->file[MY]->ms || op->file[GOLDEN]->ms) {
		ret = op_compare_by_position(c, w, op, op_type, h, NULL);
		goto out;
	}
	ok_in = group_check(h, op->name, ADUMP_TENSOR_INPUT, msg_in, sizeof(msg_in));
	ok_out = group_check(h, op->name, ADUMP_TENSOR_OUTPUT, msg_out, sizeof(msg_out));
	if (!ok_in && !ok_out) {
		char text[2 * MSG_BYTES];

		snprintf(text, sizeof(text), "%s,%s", msg_in, msg_out);
		adump_log(ADUMP_LOG_WARN, "reader", "compare: %s", text);
		op->code = 11;
		ret = row_failed(c, op, NULL, text);
		goto out;
	}
	for (int g = 0; g < 2 && ret == 0; g++) {
		enum adump_tensor_kind kind = g ? ADUMP_TENSOR_OUTPUT : ADUMP_TENSOR_INPUT;
		uint32_t first[2] = { 0, 0 };

		if (!(g ? ok_out : ok_in)) {
			adump_log(ADUMP_LOG_INFO, "reader", "compare: %s", g ? msg_out : msg_in);
			continue;
		}
		for (int s = 0; s < 2; s++)
			for (uint32_t k = 0; k < (uint32_t)kind; k++)
				first[s] += h[s]->kind_count[k];
		for (uint32_t i = 0; i < h[MY]->kind_count[kind] && ret == 0; i++)
			ret = tensor_compare(w, op, op_type, kind, i, first);
	}
out:
	op->shown = NULL;
	op->module = NULL;
	for (int s = 0; s < 2; s++) {
		subs_close(w, s);
		adump_reader_close(w->r[s]);
	}
	return ret;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct adump_compare *c = w->c;
	size_t i;
	intptr_t ret = 0;

	while (ret == 0 &&
	       (i = atomic_fetch_add_explicit(&c->next_op, 1, memory_order_relaxed)) < c->op_count)
		ret = op_compare(w, &c->ops[c->order ? c->order[i] : i]);
	return (void *)ret;
}

/* Dump bytes of an op's files, both sides (0 for what cannot be stat'ed). */
static uint64_t op_bytes(const struct cmp_op *op)
{
	uint64_t total = 0;

	for (int s = 0; s < 2; s++) {
		const struct cmp_file *f = op->file[s];
		struct stat st;

		if (!f)
			continue;
		if (f->ms)
			total += f->ms->entries[f->ms_entry].count;     /* unknown until opened */
		else if (f->is_packed)
			total += f->entry.length;
		else if (stat(f->path, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	return total;
}

struct op_size {
	size_t index;
	uint64_t bytes;
};

static int op_size_cmp(const void *a, const void *b)
{
	const struct op_size *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Largest ops first: the threads then end together, within the smallest ops' time, instead of
 * one thread finishing a big op taken last while the others idle. Rows stay in op order (they
 * are kept per op). NULL (op order) when the memory is not there. */
static size_t *order_make(const struct adump_compare *c)
{
	struct op_size *sz = calloc(c->op_count ? c->op_count : 1, sizeof(*sz));
	size_t *order = calloc(c->op_count ? c->op_count : 1, sizeof(*order));

	if (!sz || !order) {
		free(sz);
		free(order);
		return NULL;
	}
	for (size_t i = 0; i < c->op_count; i++) {
		sz[i].index = i;
		sz[i].bytes = op_bytes(&c->ops[i]);
	}
	qsort(sz, c->op_count, sizeof(*sz), op_size_cmp);
	for (size_t i = 0; i < c->op_count; i++)
		order[i] = sz[i].index;
	free(sz);
	return order;
}

static void worker_fini(struct worker *w)
{
	for (int s = 0; s < 2; s++) {
		for (uint32_t k = 1; k < w->sub_cap[s]; k++)
			adump_reader_destroy(w->subs[s][k]);
		free(w->subs[s]);
		adump_reader_destroy(w->r[s]);
		free(w->raw[s]);
		free(w->val[s]);
	}
	free(w->alg_msgs);
}

static int worker_init(struct worker *w, struct adump_compare *c)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	w->alg_msgs = calloc(ADUMP_COMPARE_ALG_COUNT, MSG_BYTES);
	for (int s = 0; s < 2; s++) {
		if (adump_reader_create(&w->r[s]) < 0)
			goto err;
		w->raw[s] = malloc(c->cfg.chunk_elements * 8);
		w->val[s] = malloc(c->cfg.chunk_elements * sizeof(float));
		if (!w->raw[s] || !w->val[s])
			goto err;
	}
	if (!w->alg_msgs)
		goto err;
	return 0;
err:
	worker_fini(w);
	return -ENOMEM;
}

int adump_compare_run(struct adump_compare *c)
{
	unsigned n;
	struct worker *w;
	pthread_t *threads;
	int ret = 0;
	uint64_t rows = 0;

	if (!c || c->is_run)
		return -ADUMP_ERR_STATE;
	c->is_run = true;
	n = c->cfg.thread_count;
	if (n > c->op_count)
		n = c->op_count ? (unsigned)c->op_count : 1;
	/* One thread takes the ops in op order (its messages come out in that order too). */
	if (n > 1)
		c->order = order_make(c);
	w = calloc(n, sizeof(*w));
	threads = calloc(n, sizeof(*threads));
	if (!w || !threads) {
		free(w);
		free(threads);
		free(c->order);
		c->order = NULL;
		return -ENOMEM;
	}
	unsigned started = 0;
	for (; started < n; started++) {
		ret = worker_init(&w[started], c);
		if (ret == 0 && started > 0)
			ret = -pthread_create(&threads[started], NULL, worker_main, &w[started]);
		if (ret < 0) {
			if (started > 0)
				worker_fini(&w[started]);
			break;
		}
	}
	if (started > 0)        /* the calling thread is worker 0 */
		ret = adump_workers_finish(threads, started, worker_main, &w[0], ret);
	for (unsigned i = 0; i < started; i++)
		worker_fini(&w[i]);
	free(w);
	free(threads);
	free(c->order);
	c->order = NULL;
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < c->op_count; i++)
		rows += c->ops[i].row_count;
	c->rows = calloc(rows ? rows : 1, sizeof(*c->rows));
	if (!c->rows)
		return -ENOMEM;
	for (size_t i = 0; i < c->op_count; i++)
		for (uint32_t k = 0; k < c->ops[i].row_count; k++) {
			struct cmp_row *row = &c->ops[i].rows[k];

			row->pub.cells = (const char *const *)row->cells;
			row->pub.cell_count = c->column_count;
			row->pub.tensor_id = row->cells[8];
			/* Every output names the op as the CSV's NPUDump (or GroundTruth) cell
			 * does: the header's name where the file's is its sanitised form. */
			if (row->cells[2] && strcmp(row->cells[2], "*"))
				row->pub.op_name = row->cells[2];
			else if (row->cells[5] && strcmp(row->cells[5], "*"))
				row->pub.op_name = row->cells[5];
			row->pub.reason = row->reason ? row->reason : "";
			c->rows[c->row_count++] = row;
		}
	return 0;
}

void adump_compare_close(struct adump_compare *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->op_count; i++) {
		for (uint32_t k = 0; k < c->ops[i].row_count; k++) {
			for (uint32_t j = 0; j < c->column_count; j++)
				free(c->ops[i].rows[k].cells[j]);
			free(c->ops[i].rows[k].cells);
			free(c->ops[i].rows[k].reason);
			free(c->ops[i].rows[k].module);
		}
		free(c->ops[i].rows);
	}
	free(c->ops);
	free(c->rows);
	for (int s = 0; s < 2; s++) {
		adump_compare_side_fini(&c->side[s]);
		pthread_mutex_destroy(&c->side[s].packed_lock);
	}
	free(c);
}
