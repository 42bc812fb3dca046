/* SPDX-License-Identifier: Apache-2.0 */
/* Sample 1: dump data through a callback instead of files. aclInit turns on single-op dump,
 * acldumpRegCallback takes it over; after aclrtSynchronizeStream every chunk has arrived:
 * each file ends with isLastChunk, the lengths add up, and no dump file was written. */
#include <pthread.h>
#include <stdlib.h>

#include "../example.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned chunk_count, last_count, bad_count;
static uint64_t total_bytes;

static int32_t on_chunk(const acldumpChunk *chunk, int32_t len)
{
	int bad = !chunk || (size_t)len != sizeof(acldumpChunk) + chunk->bufLen;

	pthread_mutex_lock(&lock);
	if (bad) {
		bad_count++;
	} else {
		chunk_count++;
		total_bytes += chunk->bufLen;
		last_count += chunk->isLastChunk;
	}
	pthread_mutex_unlock(&lock);
	if (!bad)
		INFO_LOG("chunk: file=%s bufLen=%u isLastChunk=%u offset=%lld", chunk->fileName,
			 chunk->bufLen, chunk->isLastChunk, (long long)chunk->offset);
	return bad ? -1 : 0;
}

int main(void)
{
	aclrtStream stream = NULL;
	struct ex_add add;
	const char *data_dir;
	unsigned chunks, lasts, bads;

	if (ex_init("./acl.json", &stream))
		return 1;
	CHECK_ERROR(acldumpRegCallback(on_chunk, 0));
	data_dir = acldumpGetPath(DATA_DUMP);
	INFO_LOG("acldumpGetPath(DATA_DUMP) returned %s", data_dir ? data_dir : "(null)");
	if (ex_run_add(stream, &add) || ex_free_add(&add))
		return 1;
	/* aclrtSynchronizeStream has returned: every chunk of the Add is in. */
	pthread_mutex_lock(&lock);
	chunks = chunk_count;
	lasts = last_count;
	bads = bad_count;
	pthread_mutex_unlock(&lock);
	INFO_LOG("callback summary: chunks=%u files=%u bytes=%llu", chunks, lasts,
		 (unsigned long long)total_bytes);
	if (chunks < 1 || lasts != 1 || bads || ex_count_files(data_dir, "") != 0) {
		ERROR_LOG("expected one complete file through the callback and none on disk");
		return 1;
	}
	acldumpUnregCallback();
	if (ex_fini(stream))
		return 1;
	INFO_LOG("Run the adump_callback sample successfully.");
	return 0;
}
