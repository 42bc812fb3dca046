/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the fault suites (fault_helpers.h). */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "adump/device.h"
#include "dump_data.pb-c.h"
#include "fault_helpers.h"
#include "helpers.h"

struct load_stream {
	struct t_load *l;
	struct adump_dev *dev;
	struct adump_dev_stream *stream;
	void *mem[3];
	uint64_t rng;
	uint64_t max_bytes;
	uint64_t launched;
	int error;
};

static void *load_stream_main(void *arg)
{
	struct load_stream *c = arg;
	char name[64];

	for (uint64_t k = 0; !c->l->op_count || k < c->l->op_count; k++) {
		/* Log-uniform sizes from 4 bytes to max_bytes, whole floats. */
		unsigned top = 63 - (unsigned)__builtin_clzll(c->max_bytes | 4);
		unsigned shift = 2 + (unsigned)(t_rand(&c->rng) % (top - 1));
		uint64_t bytes = ((uint64_t)1 << shift) + t_rand(&c->rng) % ((uint64_t)1 << shift);
		uint64_t count;

		if (bytes > c->max_bytes)
			bytes = c->max_bytes;
		count = bytes / 4 ? bytes / 4 : 1;
		struct adump_dev_tensor self = {
			.data = c->mem[0], .dtype = ADUMP_DT_FLOAT, .format = ADUMP_FORMAT_ND,
			.dim_count = 1, .dims = { (int64_t)count }, .bytes = count * 4,
		};
		struct adump_dev_tensor other = self, out = self;
		struct adump_dev_dump dump = { .op_type = "Add", .op_name = name,
					       .tensor_mask = ADUMP_DUMP_ALL };

		other.data = c->mem[1];
		out.data = c->mem[2];
		snprintf(name, sizeof(name), "load_%llu", (unsigned long long)k);
		c->error = adump_dev_launch_add(c->stream, &self, &other, 1.0, &out, &dump);
		if (c->error < 0)
			return NULL;
		c->launched++;
	}
	c->error = adump_dev_stream_sync(c->stream);
	return NULL;
}

int t_load_run(struct adump_session *s, struct t_load *l)
{
	struct load_stream streams[T_LOAD_STREAMS_MAX];
	pthread_t threads[T_LOAD_STREAMS_MAX];
	const char *max_env = getenv("ADUMP_TEST_MAX_BYTES");
	uint64_t max_bytes = l->max_bytes;
	struct adump_dev *dev;
	unsigned started = 0;
	int ret;

	if (l->stream_count > T_LOAD_STREAMS_MAX)
		return -EINVAL;
	/* Sanitizer builds shrink every workload (scripts/test.sh). */
	if (max_env && strtoull(max_env, NULL, 0) && strtoull(max_env, NULL, 0) < max_bytes)
		max_bytes = strtoull(max_env, NULL, 0);
	ret = adump_dev_open(0, &dev);
	if (ret < 0)
		return ret;
	l->launched = 0;
	for (; started < l->stream_count; started++) {
		struct load_stream *c = &streams[started];

		*c = (struct load_stream){ .l = l, .dev = dev, .rng = l->seed * 7919 + started,
					   .max_bytes = max_bytes };
		ret = adump_dev_stream_create(dev, &c->stream);
		if (ret < 0)
			break;
		for (int i = 0; i < 3 && ret == 0; i++)
			ret = adump_dev_malloc(dev, max_bytes, &c->mem[i]);
		if (ret == 0)
			ret = adump_session_attach(s, c->stream);
		if (ret == 0 && pthread_create(&threads[started], NULL, load_stream_main, c) != 0)
			ret = -EAGAIN;
		if (ret < 0) {
			for (int i = 0; i < 3; i++)
				if (c->mem[i])
					adump_dev_free(dev, c->mem[i]);
			adump_dev_stream_destroy(c->stream);
			break;
		}
	}
	for (unsigned i = 0; i < started; i++) {
		struct load_stream *c = &streams[i];
		int err;

		pthread_join(threads[i], NULL);
		l->launched += c->launched;
		if (c->error < 0 && ret == 0)
			ret = c->error;
		err = adump_session_detach(s, c->stream);
		if (err < 0 && ret == 0)
			ret = err;
		for (int k = 0; k < 3; k++)
			adump_dev_free(dev, c->mem[k]);
		adump_dev_stream_destroy(c->stream);
	}
	adump_dev_close(dev);
	return ret;
}

const char *t_dump_check_whole(const char *path, size_t inputs, size_t outputs)
{
	Toolkit__Dumpdata__DumpData *d;
	uint64_t hlen, sum;
	unsigned char *bytes;
	size_t len;
	const char *why = NULL;

	bytes = t_read_file(path, &len);
	if (!bytes)
		return "unreadable";
	if (len < 8) {
		free(bytes);
		return "shorter than the length prefix";
	}
	memcpy(&hlen, bytes, 8);
	hlen = le64toh(hlen);
	if (hlen == 0 || hlen > len - 8) {
		free(bytes);
		return "header length beyond the file";
	}
	d = toolkit__dumpdata__dump_data__unpack(NULL, hlen, bytes + 8);
	if (!d) {
		free(bytes);
		return "DumpData does not parse";
	}
	sum = 8 + hlen;
	for (size_t i = 0; i < d->n_input; i++)
		sum += d->input[i]->size;
	for (size_t i = 0; i < d->n_output; i++)
		sum += d->output[i]->size;
	for (size_t i = 0; i < d->n_buffer; i++)
		sum += d->buffer[i]->size;
	for (size_t i = 0; i < d->n_space; i++)
		sum += d->space[i]->size;
	if (sum != len)
		why = "size is not 8 + header + tensors";
	else if (d->n_input != inputs || d->n_output != outputs)
		why = "not the expected inputs and outputs";
	toolkit__dumpdata__dump_data__free_unpacked(d, NULL);
	free(bytes);
	return why;
}

int t_mount_small_fs(const char *at)
{
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, "size=32m,mode=0755") < 0)
		return -errno;
	return 0;
}
