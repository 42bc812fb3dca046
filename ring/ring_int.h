/* SPDX-License-Identifier: Apache-2.0 */
/* ring/ private helpers: futex waits. */
#ifndef ADUMP_RING_INT_H
#define ADUMP_RING_INT_H

#include <stdatomic.h>
#include <stdint.h>

/* Sleep while *word == expected, at most timeout_ns (spurious returns are fine). */
void adump_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void adump_futex_wake_all(_Atomic uint32_t *word);

#endif
