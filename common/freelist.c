/* SPDX-License-Identifier: Apache-2.0 */
/* Free lists for objects that one thread makes and another is done with: a launch's dump
 * request (launching thread -> executor or DMA engine) and a file's op record (stream ->
 * worker). Through malloc/free every such object crossed glibc's arenas, whose locks then
 * made a third of a tiny capture's futex calls. Here giving one back is a compare-and-swap
 * on a ck_stack, and the owner takes all of them back in one exchange when it runs out. */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>

#include <ck_stack.h>

#include "common/common.h"
#include "common/tsan.h"

/* In front of every object. */
struct pooled {
	ck_stack_entry_t entry;                 /* on its home's stack while given back */
	struct adump_freelist *home;            /* NULL: a one-off, freed for good */
};

#define HEADER_BYTES ((sizeof(struct pooled) + alignof(max_align_t) - 1) / \
		      alignof(max_align_t) * alignof(max_align_t))

static struct pooled *header_of(void *obj)
{
	return (struct pooled *)((char *)obj - HEADER_BYTES);
}

void adump_freelist_init(struct adump_freelist *fl, size_t obj_bytes)
{
	ck_stack_init(&fl->returned);
	fl->spare = NULL;
	fl->obj_bytes = obj_bytes;
}

void *adump_freelist_alloc(struct adump_freelist *fl, size_t bytes)
{
	struct pooled *p;

	if (fl && bytes <= fl->obj_bytes) {
		if (!fl->spare) {
			ADUMP_TSAN_IGNORE_BEGIN();
			fl->spare = ck_stack_batch_pop_upmc(&fl->returned);
			ADUMP_TSAN_IGNORE_END();
		}
		if (fl->spare) {
			p = (struct pooled *)fl->spare;
			ADUMP_TSAN_ACQUIRE(p);  /* pairs with the release in adump_freelist_free() */
			ADUMP_TSAN_IGNORE_BEGIN();
			fl->spare = p->entry.next;
			ADUMP_TSAN_IGNORE_END();
			return (char *)p + HEADER_BYTES;
		}
		bytes = fl->obj_bytes;
	} else {
		fl = NULL;
	}
	p = malloc(HEADER_BYTES + bytes);
	if (!p)
		return NULL;
	p->home = fl;
	return (char *)p + HEADER_BYTES;
}

void adump_freelist_free(void *obj)
{
	struct pooled *p;

	if (!obj)
		return;
	p = header_of(obj);
	if (!p->home) {
		free(p);
		return;
	}
	ADUMP_TSAN_RELEASE(p);
	ADUMP_TSAN_IGNORE_BEGIN();
	ck_stack_push_upmc(&p->home->returned, &p->entry);
	ADUMP_TSAN_IGNORE_END();
}

static void free_chain(ck_stack_entry_t *e)
{
	while (e) {
		ck_stack_entry_t *next = e->next;

		free(e);                        /* entry is the first member of struct pooled */
		e = next;
	}
}

void adump_freelist_fini(struct adump_freelist *fl)
{
	ADUMP_TSAN_IGNORE_BEGIN();
	free_chain(fl->spare);
	free_chain(ck_stack_batch_pop_upmc(&fl->returned));
	ADUMP_TSAN_IGNORE_END();
	fl->spare = NULL;
}
