/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare`'s engine: list two dumps, group their files by op name as msaccucmp does,
 * compare matched ops on a pool of threads (each op's tensors streamed in chunks through the
 * reader), and hand back msaccucmp's result rows in op order. This file owns the engine's
 * life: the configuration (algorithms, columns, statistics mode), opening both sides, the
 * run (the worker pool, largest ops first, rows gathered in op order) and closing; one op
 * is compared in compare_op.c, its rows are built in compare_rows.c, and a worker's readers
 * are in compare_worker.c. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare/compare_int.h"

#define CHUNK_ELEMENTS_DEFAULT ((size_t)64 << 10)

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
		by_stats = adump_compare_file_has_stats(f[MY]) &&
			   adump_compare_file_has_stats(f[GOLDEN]);
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

/* ---- the run ------------------------------------------------------------------------------ */

static void *worker_main(void *arg)
{
	struct cmp_worker *w = arg;
	struct adump_compare *c = w->c;
	size_t i;
	intptr_t ret = 0;

	while (ret == 0 &&
	       (i = atomic_fetch_add_explicit(&c->next_op, 1, memory_order_relaxed)) < c->op_count)
		ret = adump_compare_op(w, &c->ops[c->order ? c->order[i] : i]);
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

int adump_compare_run(struct adump_compare *c)
{
	unsigned n;
	struct cmp_worker *w;
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
		ret = adump_compare_worker_init(&w[started], c);
		if (ret == 0 && started > 0)
			ret = -pthread_create(&threads[started], NULL, worker_main, &w[started]);
		if (ret < 0) {
			if (started > 0)
				adump_compare_worker_fini(&w[started]);
			break;
		}
	}
	if (started > 0)        /* the calling thread is worker 0 */
		ret = adump_workers_finish(threads, started, worker_main, &w[0], ret);
	for (unsigned i = 0; i < started; i++)
		adump_compare_worker_fini(&w[i]);
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
