/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors no op wrote: what a capture's triggers (pipeline/window.c), compare's verdicts and
 * scan's kinds leave out of "non-finite", since their NaNs are whatever the memory held. */
#include <string.h>

#include "common/common.h"

/* Ops whose outputs are memory no one wrote (torch.empty and its kin), and in-place ops that
 * overwrite their first argument without reading it (torchvision's StochasticDepth does
 * torch.empty(size).bernoulli_(p)), by the aten name adump.torch (and msprobe) give them. */
static const char *const uninit_makers[] = {
	"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
};
static const char *const overwriters[] = {
	"bernoulli_", "uniform_", "normal_", "random_", "exponential_", "geometric_", "cauchy_",
	"log_normal_", "fill_", "zero_", "copy_",
};

enum adump_uninit adump_uninit_of(const char *op_type, const char *op_name)
{
	static const char *const prefixes[] = { "Aten.", "Torch.", "Tensor.", "Aten_" };
	char api[64];
	size_t len = 0;
	int p;

	if (!op_name)
		return ADUMP_UNINIT_NONE;
	for (p = 0; p < 4; p++)
		if (!strncmp(op_name, prefixes[p], strlen(prefixes[p])))
			break;
	if (p == 4)
		return ADUMP_UNINIT_NONE;
	if (p < 3) {
		/* msprobe's layout: Aten.<api>[.<overload>].<n>.<direction> */
		const char *a = op_name + strlen(prefixes[p]);

		len = strcspn(a, ".");
		if (len >= sizeof(api))
			return ADUMP_UNINIT_NONE;
		memcpy(api, a, len);
		api[len] = '\0';
	} else {
		/* a CANN file name (Aten_empty_memory_format_0_forward): the op type is the api */
		if (!op_type || strlen(op_type) >= sizeof(api))
			return ADUMP_UNINIT_NONE;
		snprintf(api, sizeof(api), "%s", op_type);
		if (strncmp(op_name + 5, api, strlen(api)) || op_name[5 + strlen(api)] != '_')
			return ADUMP_UNINIT_NONE;
	}
	for (size_t i = 0; i < sizeof(uninit_makers) / sizeof(uninit_makers[0]); i++)
		if (!strcmp(api, uninit_makers[i]))
			return ADUMP_UNINIT_OUTPUTS;
	for (size_t i = 0; i < sizeof(overwriters) / sizeof(overwriters[0]); i++)
		if (!strcmp(api, overwriters[i]))
			return ADUMP_UNINIT_FIRST_INPUT;
	return ADUMP_UNINIT_NONE;
}

bool adump_is_uninit(const char *op_type, const char *op_name,
			     enum adump_tensor_kind kind, uint32_t index)
{
	enum adump_uninit u = adump_uninit_of(op_type, op_name);

	return (u == ADUMP_UNINIT_OUTPUTS && kind == ADUMP_TENSOR_OUTPUT) ||
	       (u == ADUMP_UNINIT_FIRST_INPUT && kind == ADUMP_TENSOR_INPUT && index == 0);
}
