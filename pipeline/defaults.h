/* SPDX-License-Identifier: Apache-2.0 */
/* Every default and bound of struct adump_config, in one place. */
#ifndef ADUMP_DEFAULTS_H
#define ADUMP_DEFAULTS_H

#define ADUMP_DEFAULT_CHUNK_BYTES (2u << 20)
#define ADUMP_MIN_CHUNK_BYTES 512u
#define ADUMP_MAX_CHUNK_BYTES (1u << 30)
#define ADUMP_DEFAULT_POOL_BYTES (256u << 20)
#define ADUMP_DEFAULT_STREAM_MAX 16u
#define ADUMP_STREAM_MAX_LIMIT 64u              /* struct adump_stats holds 64 streams */
#define ADUMP_MIN_BUFFERS_PER_STREAM 2u
#define ADUMP_WORKER_MAX 64u
/* Files a session may hold open while writes are in flight, whatever RLIMIT_NOFILE leaves. */
#define ADUMP_FD_BUDGET_MIN 4u
#define ADUMP_URING_DEPTH 256u
/* The pwrite writer's I/O threads per worker: positional writes in flight at once where
 * io_uring is refused (bench/RESULTS.md, "pwrite writer"). */
#define ADUMP_PWRITE_THREADS 4u
/* ... and the largest buffered write it makes on the worker's own thread: a copy into the
 * page cache takes less time than handing it to a thread and back. As large as io AUTO's
 * smallest O_DIRECT file, so AUTO's buffered files never wait for a hand-off (range
 * profile: 0.84x -> 0.90x io_uring against 64 KiB, one sitting, provisional). */
#define ADUMP_PWRITE_INLINE_BYTES (256u << 10)
/* A worker polls this long before sleeping: a busy producer posts again within
 * microseconds. Not longer: the poll takes a core from the producers it waits for. */
#define ADUMP_WORKER_SPIN_NS 5000u
/* Completed buffered writes start their writeback (sync_file_range()) once this much of a
 * file is written, so the disk works while the capture runs instead of the page cache
 * piling up dirty data for the kernel to flush long after: a training step then never
 * waits on a flush of it all. */
#define ADUMP_WRITEBACK_MIN_BYTES (1u << 20)
/* Packed segments: bytes of small files between two background fdatasync()s (config
 * sync_bytes). Tiny profile, 128 MiB: the final flush went from 0.09 to 0.02-0.03 s. */
#define ADUMP_DEFAULT_SYNC_BYTES (32u << 20)
#define ADUMP_FILE_MODE 0640
/* Directory journals kept for reuse (journal.c): one a stream's directory and one its
 * dump.json's, for two streams, before a new directory takes one. */
#define ADUMP_JOURNAL_SPARES 4u
#define ADUMP_DIRECT_ALIGN 4096u                /* O_DIRECT offset, length and memory */
/* io AUTO: smallest file (header included) written with O_DIRECT; bench/RESULTS.md,
 * "io=auto threshold". */
#define ADUMP_DEFAULT_DIRECT_MIN_BYTES (256u << 10)
/* Window mode (pipeline/window.c). */
#define ADUMP_DEFAULT_WINDOW_BYTES (1ull << 30)
#define ADUMP_DEFAULT_WINDOW_PERSISTS 3u
#define ADUMP_DEFAULT_DEVIATION 1.0
#define ADUMP_DEFAULT_DEVIATION_STEPS 5u
#define ADUMP_MAX_DEVIATION_STEPS 1024u
#define ADUMP_MAX_BOUNDS 256u
/* Tensor names whose norms the deviation trigger remembers; past it, new names are not
 * judged (logged once). Bounds the history: about 64 + 8 x deviation_steps bytes + name. */
#define ADUMP_WINDOW_HISTORY_MAX (1u << 20)
/* A persist writes through a session of its own with this staging pool. */
#define ADUMP_WINDOW_PERSIST_POOL_BYTES (64u << 20)

#endif
