/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread records that outlive their threads, shared by the guard
 * (swap.c: hazard slots and remote handles) and the Redis cache adapter
 * (redis_cache.c: a connection per thread). Internal.
 *
 * A thread finds its record through a pthread key. Its first call adopts a
 * record that a finished thread gave back (in_use CAS 0 -> 1) or allocates
 * one and pushes it on a push-only list: next pointers never change once a
 * record is published, so the list can be walked without a lock (the
 * guard's reclaimer does). When the thread exits, the key's destructor runs
 * the record's on_exit and sets in_use = 0; the record, with whatever it
 * holds (a connection), then serves the next new thread. A server that runs
 * a thread per request so reuses a few records instead of making one per
 * request. Records are freed only by bg__thread_recs_free, after every
 * thread is done with the owner. */
#ifndef BG_GUARD_THREAD_RECORDS_H
#define BG_GUARD_THREAD_RECORDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* The first member of every record. */
typedef struct bg__thread_rec {
    atomic_int in_use;                        /* a live thread owns it */
    struct bg__thread_rec *next;              /* immutable once published */
    void (*on_exit)(struct bg__thread_rec *); /* when its thread ends, or NULL */
} bg__thread_rec;

typedef struct bg__thread_recs {
    pthread_key_t key;
    int key_ok;
    _Atomic(bg__thread_rec *) head; /* push-only list of every record */
} bg__thread_recs;

/* BG_OK or BG_ENOMEM (no pthread key). */
int bg__thread_recs_init(bg__thread_recs *l);

/* Deletes the key (no destructor runs afterwards) and frees every record,
 * after free_rec (may be NULL) has released what it holds. */
void bg__thread_recs_free(bg__thread_recs *l, void (*free_rec)(bg__thread_rec *));

/* The calling thread's record into *out: its own, an adopted one, or a new
 * one of `size` bytes (zeroed, then init, which may be NULL, before it is
 * published), with on_exit set. BG_OK or BG_ENOMEM. */
int bg__thread_rec_get(bg__thread_recs *l, size_t size, void (*init)(bg__thread_rec *),
                       void (*on_exit)(bg__thread_rec *), bg__thread_rec **out);

#endif
