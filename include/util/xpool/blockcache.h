/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A per-thread cache of freed small blocks in front of malloc() and free(), for allocators that
 * make and free hundreds of small blocks per request (the server gives it to jansson: every
 * create builds and frees two JSON trees). glibc's own per-thread cache holds 7 blocks of a size
 * and the server turns its fast bins off (cmd_server.c), so past those 7 every free() merged its
 * neighbours and every malloc() split them again.
 *
 * The cached blocks are plain malloc() blocks: anything xp_block_cache_malloc() returns may be
 * given to free(), and anything malloc() returned to xp_block_cache_free(). A block is filed by
 * its usable size (malloc_usable_size()) and handed out only for a request it holds, so a block
 * freed by another thread than the one that made it is fine. What a thread holds is freed when
 * it exits, or by xp_block_cache_drain(); what the depot holds by xp_block_cache_drain_all().
 *
 * A block freed a second time while cached (jansson's double free) aborts with a message, as
 * glibc's free() would: its second word marks it as cached. A second free after the block was
 * handed out again is as invisible here as it is to glibc.
 */
#pragma once

#include <stddef.h>

/* Blocks of a usable size up to XP_BLOCK_CACHE_LARGEST bytes are cached, at most
 * XP_BLOCK_CACHE_DEPTH of each 16-byte size class and XP_BLOCK_CACHE_BYTES in all (each block
 * counted at its class's least size) per thread; past either a thread gives a batch of the class
 * to the depot below. A request's thread needs about 450 blocks (25 KiB) per create; a thread
 * keeping more only held blocks that other threads missed (docs/store.md "What a create costs":
 * 512 and 128 KiB a thread, without the depot, missed 49 % of the blocks). */
#define XP_BLOCK_CACHE_SMALLEST 24
#define XP_BLOCK_CACHE_CLASSES  16
#define XP_BLOCK_CACHE_LARGEST  (XP_BLOCK_CACHE_SMALLEST + 16 * XP_BLOCK_CACHE_CLASSES - 1)
#define XP_BLOCK_CACHE_DEPTH    256
#define XP_BLOCK_CACHE_BYTES    (64 * 1024)

/* And at most XP_BLOCK_CACHE_PROCESS_BYTES in all threads together: libmicrohttpd's thread per
 * connection would otherwise let a thousand watches hold 64 MiB of blocks nobody asks for.
 * Threads reserve it XP_BLOCK_CACHE_SHARE at a time (one atomic operation per share, not per
 * block) and keep at most two shares spare; past the process's bound a freed block goes to
 * free() at once. */
#define XP_BLOCK_CACHE_PROCESS_BYTES (4 * 1024 * 1024)
#define XP_BLOCK_CACHE_SHARE         (4 * 1024)

/* A thread whose class is full gives XP_BLOCK_CACHE_BATCH of its blocks to a depot that all
 * threads share, and a thread whose class is empty takes a batch from it before it calls
 * malloc(): one lock per batch, not per block. The store's leader frees the trees of other
 * threads' requests; without the depot those threads missed half of their blocks. What the
 * depot holds counts in the process's bound. */
#define XP_BLOCK_CACHE_BATCH 64

/* malloc(size), from the thread's cache when it holds a block large enough. */
void *xp_block_cache_malloc(size_t size);

/* free(p), or p kept for the thread's next xp_block_cache_malloc(); NULL does nothing. */
void xp_block_cache_free(void *p);

/* Frees every block the calling thread holds. */
void xp_block_cache_drain(void);

/* That, and every block of the depot (for tests, and a process that wants its memory back). */
void xp_block_cache_drain_all(void);

/* How many blocks the depot holds (for tests). */
size_t xp_block_cache_depot_held(void);

/* How many blocks the calling thread holds, and their bytes as counted above (for tests). */
size_t xp_block_cache_held(void);
size_t xp_block_cache_held_bytes(void);

/* What all threads together have reserved of XP_BLOCK_CACHE_PROCESS_BYTES: at least the bytes
 * they hold, counted as above (for tests). */
size_t xp_block_cache_process_reserved(void);
