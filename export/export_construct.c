/* SPDX-License-Identifier: Apache-2.0 */
/* construct.json: each call's parent call. The capture's own file, renamed to msprobe's
 * parameters_grad names; or, where the capture left none, inferred from the module calls'
 * names and the order they were dumped in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "export_int.h"

/* The module path of "Module.<path>.<Class>.<forward|backward>.<n>" into @out; false if
 * @name is not a module call of that shape. */
static bool module_path(const char *name, const char *dir, char *out, size_t cap)
{
	const char *end = name + strlen(name);
	int dots = 0;

	if (strncmp(name, "Module.", 7) != 0)
		return false;
	while (end > name + 7 && dots < 3)
		if (*--end == '.')
			dots++;
	if (dots < 3 || end <= name + 7 || (size_t)(end - name - 7) >= cap)
		return false;
	{
		const char *tail = strchr(end + 1, '.');        /* .<dir>.<n> */

		if (!tail || strncmp(tail + 1, dir, strlen(dir)) != 0 ||
		    tail[1 + strlen(dir)] != '.')
			return false;
	}
	memcpy(out, name + 7, (size_t)(end - name - 7));
	out[end - name - 7] = '\0';
	return true;
}

/* Parents of module calls for a capture that left no construct.json: module calls are
 * dumped when they return (post-order), so a call's parent is the first later forward call
 * whose module path is a proper prefix of its own at a '.'; a backward call's parent is
 * its forward parent's backward. Ops keep the `module` attribute they were given. */
void ex_construct_infer(struct json_object *data, struct json_object *construct)
{
	size_t n = 0, i = 0;
	const char **names;

	json_object_object_foreach(data, k0, v0) {
		(void)k0;
		(void)v0;
		n++;
	}
	names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return;
	{
		json_object_object_foreach(data, k, v) {
			(void)v;
			names[i++] = k;
		}
	}
	for (i = 0; i < n; i++) {
		char path[512], other[512];
		size_t pl;

		if (!module_path(names[i], "forward", path, sizeof(path)))
			continue;
		pl = strlen(path);
		for (size_t j = i + 1; j < n; j++) {
			size_t ol;

			if (!module_path(names[j], "forward", other, sizeof(other)))
				continue;
			ol = strlen(other);
			if (ol < pl && strncmp(path, other, ol) == 0 && path[ol] == '.') {
				json_object_object_add(construct, names[i],
						       json_object_new_string(names[j]));
				break;
			}
		}
	}
	for (i = 0; i < n; i++) {
		char fwd[1024], pb[1024];
		struct json_object *p;
		const char *b = strstr(names[i], ".backward.");

		if (!b || strncmp(names[i], "Module.", 7) != 0 || (size_t)(b - names[i]) > 900)
			continue;
		snprintf(fwd, sizeof(fwd), "%.*s.forward.%s", (int)(b - names[i]), names[i],
			 b + 10);
		if (!json_object_object_get_ex(construct, fwd, &p) || !p)
			continue;
		{
			const char *pf = json_object_get_string(p);
			const char *f = strstr(pf, ".forward.");

			if (!f || (size_t)(f - pf) > 900)
				continue;
			snprintf(pb, sizeof(pb), "%.*s.backward.%s", (int)(f - pf), pf, f + 9);
			json_object_object_add(construct, names[i], json_object_new_string(pb));
		}
	}
	free(names);
}

/* The capture's construct.json with msprobe's parameters_grad names (<...>.parameters_grad.0
 * for the first call; adump.torch leaves the first call's count off). */
struct json_object *ex_construct_fix(struct json_object *in)
{
	struct json_object *o;

	if (!in || !json_object_is_type(in, json_type_object)) {
		json_object_put(in);
		return NULL;
	}
	o = json_object_new_object();
	if (!o) {
		json_object_put(in);
		return NULL;
	}
	json_object_object_foreach(in, k, v) {
		char key[1024];

		snprintf(key, sizeof(key), "%s%s", k, has_suffix(k, ".parameters_grad") ? ".0" : "");
		json_object_object_add(o, key, json_object_get(v));
	}
	json_object_put(in);
	return o;
}
