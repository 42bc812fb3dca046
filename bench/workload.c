/* SPDX-License-Identifier: Apache-2.0 */
/* The bench workloads: which Add ops run, with which shapes and dtypes, and the bytes their
 * inputs hold. Every op is a pure function of (profile, seed, index), so the capture and
 * every baseline of one run see exactly the same ops without storing a list of them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define TINY_MIN_BYTES 64u
#define TINY_MAX_BYTES 1024u
#define TINY_DEFAULT_TOTAL (32ull << 20)
#define HUGE_MIN_BYTES (256ull << 20)
#define HUGE_MAX_BYTES (512ull << 20)
#define HUGE_DEFAULT_TOTAL (4ull << 30)
#define RANGE_DEFAULT_OPS 200u

/* A Llama-2-7B-style decoder layer, one training step at micro-batch 1: hidden 4096,
 * sequence 2048, 32 heads of 128, MLP 11008. Activations and weights in bf16, the residual
 * stream, norms, rotary tables and weight gradients (main grads) in fp32, positions int32.
 * Flash attention: the S x S score matrix is never materialised, only its log-sum-exp. */
#define H 4096
#define S 2048
#define F 11008
#define NH 32
#define HD 128

struct layer_tensor {
	const char *name;
	int32_t dtype;                          /* model dtype: BF16, FLOAT or INT32 */
	uint32_t dim_count;
	int64_t dims[4];
};

#define BF ADUMP_DT_BF16
#define F32 ADUMP_DT_FLOAT
static const struct layer_tensor layer[] = {
	/* forward */
	{ "position_ids", ADUMP_DT_INT32, 2, { 1, S } },
	{ "input_layernorm.input", F32, 3, { 1, S, H } },
	{ "input_layernorm.weight", F32, 1, { H } },
	{ "input_layernorm.output", BF, 3, { 1, S, H } },
	{ "self_attn.q_proj.weight", BF, 2, { H, H } },
	{ "self_attn.k_proj.weight", BF, 2, { H, H } },
	{ "self_attn.v_proj.weight", BF, 2, { H, H } },
	{ "self_attn.q_proj.output", BF, 3, { 1, S, H } },
	{ "self_attn.k_proj.output", BF, 3, { 1, S, H } },
	{ "self_attn.v_proj.output", BF, 3, { 1, S, H } },
	{ "self_attn.rotary_emb.cos", F32, 2, { S, HD } },
	{ "self_attn.rotary_emb.sin", F32, 2, { S, HD } },
	{ "self_attn.q_rope", BF, 4, { 1, NH, S, HD } },
	{ "self_attn.k_rope", BF, 4, { 1, NH, S, HD } },
	{ "self_attn.flash_attn.output", BF, 4, { 1, S, NH, HD } },
	{ "self_attn.flash_attn.softmax_lse", F32, 3, { 1, NH, S } },
	{ "self_attn.o_proj.weight", BF, 2, { H, H } },
	{ "self_attn.o_proj.output", BF, 3, { 1, S, H } },
	{ "residual_add_attn.output", F32, 3, { 1, S, H } },
	{ "post_attention_layernorm.weight", F32, 1, { H } },
	{ "post_attention_layernorm.output", BF, 3, { 1, S, H } },
	{ "mlp.gate_proj.weight", BF, 2, { F, H } },
	{ "mlp.up_proj.weight", BF, 2, { F, H } },
	{ "mlp.gate_proj.output", BF, 3, { 1, S, F } },
	{ "mlp.up_proj.output", BF, 3, { 1, S, F } },
	{ "mlp.act_fn.output", BF, 3, { 1, S, F } },
	{ "mlp.mul.output", BF, 3, { 1, S, F } },
	{ "mlp.down_proj.weight", BF, 2, { H, F } },
	{ "mlp.down_proj.output", BF, 3, { 1, S, H } },
	{ "residual_add_mlp.output", F32, 3, { 1, S, H } },
	/* backward */
	{ "grad.residual_add_mlp.output", BF, 3, { 1, S, H } },
	{ "grad.mlp.down_proj.weight", F32, 2, { H, F } },
	{ "grad.mlp.mul.output", BF, 3, { 1, S, F } },
	{ "grad.mlp.gate_proj.output", BF, 3, { 1, S, F } },
	{ "grad.mlp.up_proj.output", BF, 3, { 1, S, F } },
	{ "grad.mlp.gate_proj.weight", F32, 2, { F, H } },
	{ "grad.mlp.up_proj.weight", F32, 2, { F, H } },
	{ "grad.post_attention_layernorm.output", BF, 3, { 1, S, H } },
	{ "grad.post_attention_layernorm.weight", F32, 1, { H } },
	{ "grad.self_attn.o_proj.output", BF, 3, { 1, S, H } },
	{ "grad.self_attn.o_proj.weight", F32, 2, { H, H } },
	{ "grad.self_attn.flash_attn.output", BF, 4, { 1, S, NH, HD } },
	{ "grad.self_attn.q_proj.output", BF, 3, { 1, S, H } },
	{ "grad.self_attn.k_proj.output", BF, 3, { 1, S, H } },
	{ "grad.self_attn.v_proj.output", BF, 3, { 1, S, H } },
	{ "grad.self_attn.q_proj.weight", F32, 2, { H, H } },
	{ "grad.self_attn.k_proj.weight", F32, 2, { H, H } },
	{ "grad.self_attn.v_proj.weight", F32, 2, { H, H } },
	{ "grad.input_layernorm.output", BF, 3, { 1, S, H } },
	{ "grad.input_layernorm.weight", F32, 1, { H } },
	{ "grad.input_layernorm.input", F32, 3, { 1, S, H } },
};
#undef BF
#undef F32
#define LAYER_COUNT (sizeof(layer) / sizeof(layer[0]))

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static double unit(uint64_t x)
{
	return (double)(x >> 11) / 9007199254740992.0;
}

/* Log-uniform in [lo, hi]. */
static uint64_t log_uniform(uint64_t r, uint64_t lo, uint64_t hi)
{
	double v = exp(log((double)lo) + unit(r) * (log((double)hi) - log((double)lo)));
	uint64_t n = (uint64_t)llround(v);

	return n < lo ? lo : n > hi ? hi : n;
}

static unsigned elem_bytes(int32_t dtype)
{
	return dtype == ADUMP_DT_FLOAT16 ? 2 : 4;
}

unsigned adump_bench_dtype_class(int32_t dtype)
{
	return dtype == ADUMP_DT_FLOAT16 ? ADUMP_BENCH_CLASS_F16 :
	       dtype == ADUMP_DT_INT32 ? ADUMP_BENCH_CLASS_I32 : ADUMP_BENCH_CLASS_F32;
}

const char *adump_bench_profile_name(enum adump_bench_profile p)
{
	switch (p) {
	case ADUMP_BENCH_PROFILE_TRANSFORMER:
		return "transformer";
	case ADUMP_BENCH_PROFILE_TINY:
		return "tiny";
	case ADUMP_BENCH_PROFILE_HUGE:
		return "huge";
	default:
		return "range";
	}
}

int adump_bench_profile_parse(const char *s, enum adump_bench_profile *out)
{
	static const enum adump_bench_profile all[] = {
		ADUMP_BENCH_PROFILE_RANGE, ADUMP_BENCH_PROFILE_TRANSFORMER, ADUMP_BENCH_PROFILE_TINY,
		ADUMP_BENCH_PROFILE_HUGE,
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(s, adump_bench_profile_name(all[i]))) {
			*out = all[i];
			return 0;
		}
	return -EINVAL;
}

/* The layer's tensors in a seeded order, so that a --total that stops mid-step still
 * samples the whole layer rather than only its first tensors. */
static void layer_order(uint64_t seed, uint32_t *perm)
{
	for (uint32_t i = 0; i < LAYER_COUNT; i++)
		perm[i] = i;
	for (uint32_t i = LAYER_COUNT - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(splitmix(seed ^ (0xA5A5ull << 32) ^ i) % (i + 1));
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

static void op_make(const struct adump_bench_workload *w, const uint32_t *perm, uint64_t i,
		    struct adump_bench_op *op)
{
	uint64_t r0 = splitmix(w->seed * 0x9E3779B97F4A7C15ull ^ splitmix(i));
	uint64_t r1 = splitmix(r0), r2 = splitmix(r1), r3 = splitmix(r2);
	static const int32_t mix[] = { ADUMP_DT_FLOAT, ADUMP_DT_FLOAT16, ADUMP_DT_INT32 };
	uint64_t k = i / w->stream_count;

	memset(op, 0, sizeof(*op));
	op->index = i;
	op->stream = (uint32_t)(i % w->stream_count);
	op->alpha = (double)(r2 % 5) - 2.0;
	op->window = r3;
	if (w->profile == ADUMP_BENCH_PROFILE_TRANSFORMER) {
		const struct layer_tensor *t = &layer[perm[i % LAYER_COUNT]];
		uint64_t count = 1;

		op->model_dtype = t->dtype;
		/* The simulated NPU adds float32, float16 and int32 only: bf16 tensors run as
		 * float16 Adds of the same byte size. */
		op->dtype = t->dtype == ADUMP_DT_BF16 ? ADUMP_DT_FLOAT16 : t->dtype;
		op->dim_count = t->dim_count;
		for (uint32_t d = 0; d < t->dim_count; d++) {
			op->dims[d] = t->dims[d];
			count *= (uint64_t)t->dims[d];
		}
		op->bytes = count * elem_bytes(op->dtype);
		snprintf(op->name, sizeof(op->name), "layers.0.%s/%llu", t->name,
			 (unsigned long long)(i / LAYER_COUNT));
		return;
	}

	uint64_t lo = w->min_bytes, hi = w->max_bytes;

	if (w->profile == ADUMP_BENCH_PROFILE_TINY) {
		lo = TINY_MIN_BYTES;
		hi = TINY_MAX_BYTES;
	} else if (w->profile == ADUMP_BENCH_PROFILE_HUGE) {
		lo = HUGE_MIN_BYTES;
		hi = HUGE_MAX_BYTES;
	}
	op->dtype = w->profile == ADUMP_BENCH_PROFILE_HUGE ? ADUMP_DT_FLOAT : mix[r0 % 3];
	op->model_dtype = op->dtype;
	uint64_t bytes = log_uniform(r1, lo, hi);
	uint64_t count = bytes / elem_bytes(op->dtype);

	if (!count)
		count = 1;
	op->dim_count = 1;
	op->dims[0] = (int64_t)count;
	op->bytes = count * elem_bytes(op->dtype);
	snprintf(op->name, sizeof(op->name), "bench/add_%u_%llu", op->stream, (unsigned long long)k);
}

void adump_bench_op_get(const struct adump_bench_plan *p, uint64_t i, struct adump_bench_op *op)
{
	uint32_t perm[LAYER_COUNT];

	if (p->w.profile == ADUMP_BENCH_PROFILE_TRANSFORMER)
		layer_order(p->w.seed, perm);
	op_make(&p->w, perm, i, op);
}

int adump_bench_plan_make(const struct adump_bench_workload *w, struct adump_bench_plan *out)
{
	struct adump_bench_plan p = { .w = *w };
	uint32_t perm[LAYER_COUNT];
	uint64_t limit_ops = UINT64_MAX, limit_bytes = UINT64_MAX;

	if (!w->stream_count)
		return -EINVAL;
	if (w->profile == ADUMP_BENCH_PROFILE_RANGE &&
	    (!w->min_bytes || w->min_bytes > w->max_bytes))
		return -EINVAL;
	if (w->ops_per_stream)
		limit_ops = w->ops_per_stream * w->stream_count;
	if (w->total_bytes)
		limit_bytes = w->total_bytes;
	if (!w->ops_per_stream && !w->total_bytes) {
		switch (w->profile) {
		case ADUMP_BENCH_PROFILE_TRANSFORMER:
			limit_ops = LAYER_COUNT;
			break;
		case ADUMP_BENCH_PROFILE_TINY:
			limit_bytes = TINY_DEFAULT_TOTAL;
			break;
		case ADUMP_BENCH_PROFILE_HUGE:
			limit_bytes = HUGE_DEFAULT_TOTAL;
			break;
		default:
			limit_ops = (uint64_t)RANGE_DEFAULT_OPS * w->stream_count;
			break;
		}
	}
	p.stream_max_bytes = calloc(w->stream_count, sizeof(*p.stream_max_bytes));
	if (!p.stream_max_bytes)
		return -ENOMEM;
	layer_order(w->seed, perm);
	for (uint32_t i = 0; i < LAYER_COUNT; i++) {
		uint64_t count = 1;

		for (uint32_t d = 0; d < layer[i].dim_count; d++)
			count *= (uint64_t)layer[i].dims[d];
		p.layer_step_bytes += count * (layer[i].dtype == ADUMP_DT_BF16 ? 2 : 4);
	}
	p.layer_tensor_count = LAYER_COUNT;
	/* The op that reaches the byte budget is the last one. */
	while (p.op_count < limit_ops && p.tensor_bytes < limit_bytes) {
		struct adump_bench_op op;
		unsigned cls;

		op_make(w, perm, p.op_count, &op);
		cls = adump_bench_dtype_class(op.dtype);
		if (op.bytes > p.max_bytes[cls])
			p.max_bytes[cls] = op.bytes;
		if (op.bytes > p.stream_max_bytes[op.stream])
			p.stream_max_bytes[op.stream] = op.bytes;
		p.tensor_bytes += 3 * op.bytes;
		p.op_count++;
	}
	*out = p;
	return 0;
}

void adump_bench_plan_free(struct adump_bench_plan *p)
{
	if (!p)
		return;
	free(p->stream_max_bytes);
	p->stream_max_bytes = NULL;
}

void adump_bench_profile_describe(enum adump_bench_profile prof, void *fp)
{
	FILE *f = fp;

	switch (prof) {
	case ADUMP_BENCH_PROFILE_TINY:
		fprintf(f, "tiny: tensors %u..%u B log-uniform, float32/float16/int32 mixed; "
			   "default --total 32M\n", TINY_MIN_BYTES, TINY_MAX_BYTES);
		return;
	case ADUMP_BENCH_PROFILE_HUGE:
		fprintf(f, "huge: float32 tensors 256M..512M log-uniform; default --total 4G\n");
		return;
	case ADUMP_BENCH_PROFILE_RANGE:
		fprintf(f, "range: tensors --min-size..--max-size log-uniform, float32/float16/int32 "
			   "mixed; default --ops 200\n");
		return;
	default:
		break;
	}
	fprintf(f, "transformer: one training step of a Llama-2-7B-style decoder layer\n"
		   "(hidden %d, sequence %d, micro-batch 1, %d heads x %d, MLP %d); each tensor is\n"
		   "dumped as one Add whose self, other and out have its shape, so one step\n"
		   "writes 3x the bytes below; bf16 runs as float16 (same bytes). Default: one step.\n",
		H, S, NH, HD, F);
	for (size_t i = 0; i < LAYER_COUNT; i++) {
		uint64_t count = 1;
		char shape[64];
		int n = 0;

		for (uint32_t d = 0; d < layer[i].dim_count; d++) {
			count *= (uint64_t)layer[i].dims[d];
			n += snprintf(shape + n, sizeof(shape) - (size_t)n, "%s%lld", d ? "," : "",
				      (long long)layer[i].dims[d]);
		}
		count *= layer[i].dtype == ADUMP_DT_BF16 ? 2 : 4;
		fprintf(f, "  %-40s %-6s [%s] %.2f MiB\n", layer[i].name,
			layer[i].dtype == ADUMP_DT_BF16 ? "bf16" :
			layer[i].dtype == ADUMP_DT_INT32 ? "int32" : "fp32",
			shape, (double)count / (1 << 20));
	}
}

/* Random words for the fills: xorshift64*, one state per buffer. */
static uint64_t xs(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void adump_bench_fill(void *buf, uint64_t len, unsigned cls, enum adump_bench_data data,
		      uint64_t seed, unsigned which)
{
	uint64_t vs = splitmix(seed * 31 + which * 0x51ED27ull + cls + 1) | 1;
	uint64_t ms = splitmix(seed * 17 + cls + 7) | 1;    /* the same mask for self and other */
	uint64_t mask = 0;
	bool relu = data == ADUMP_BENCH_DATA_RELU;

	if (cls == ADUMP_BENCH_CLASS_F16) {
		uint16_t *h = buf;

		for (uint64_t i = 0; i < len / 2; i++) {
			uint64_t r = xs(&vs);

			if ((i & 63) == 0)
				mask = xs(&ms);
			if (relu && (mask >> (i & 63) & 1)) {
				h[i] = 0;
				continue;
			}
			/* |x| in [2^-4, 2^4): no sum of two with |alpha| <= 2 overflows. */
			h[i] = (uint16_t)((relu ? 0 : (r >> 63) << 15) | (uint64_t)(11 + (r >> 40) % 8) << 10 |
					  (r & 0x3ff));
		}
		if (len & 1)
			((unsigned char *)buf)[len - 1] = 0;
		return;
	}
	uint32_t *w = buf;

	for (uint64_t i = 0; i < len / 4; i++) {
		uint64_t r = xs(&vs);

		if ((i & 63) == 0)
			mask = xs(&ms);
		if (relu && (mask >> (i & 63) & 1)) {
			w[i] = 0;
			continue;
		}
		if (cls == ADUMP_BENCH_CLASS_I32)
			w[i] = relu ? (uint32_t)r & 0x7fffffffu : (uint32_t)r;
		else
			w[i] = (uint32_t)((relu ? 0 : (r >> 63) << 31) | (uint64_t)(123 + (r >> 40) % 8) << 23 |
					  (r & 0x7fffff));
	}
	for (uint64_t i = len / 4 * 4; i < len; i++)
		((unsigned char *)buf)[i] = 0;
}
