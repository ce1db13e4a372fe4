/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread records (thread_records.h). */
#include "thread_records.h"

#include <bloomgate/error.h>

#include "common/alloc.h"

static void rec_release(void *p)
{
    bg__thread_rec *r = p;
    if (r->on_exit)
        r->on_exit(r);
    atomic_store_explicit(&r->in_use, 0, memory_order_release);
}

int bg__thread_recs_init(bg__thread_recs *l)
{
    atomic_init(&l->head, NULL);
    l->key_ok = pthread_key_create(&l->key, rec_release) == 0;
    return l->key_ok ? BG_OK : BG_ENOMEM;
}

void bg__thread_recs_free(bg__thread_recs *l, void (*free_rec)(bg__thread_rec *))
{
    if (l->key_ok) {
        pthread_key_delete(l->key);
        l->key_ok = 0;
    }
    bg__thread_rec *r = atomic_load(&l->head);
    while (r) {
        bg__thread_rec *next = r->next;
        if (free_rec)
            free_rec(r);
        bg__free(r);
        r = next;
    }
    atomic_store(&l->head, NULL);
}

int bg__thread_rec_get(bg__thread_recs *l, size_t size, void (*init)(bg__thread_rec *),
                       void (*on_exit)(bg__thread_rec *), bg__thread_rec **out)
{
    bg__thread_rec *r = pthread_getspecific(l->key);
    if (r) {
        *out = r;
        return BG_OK;
    }
    for (r = atomic_load(&l->head); r; r = r->next) {
        int idle = 0;
        if (atomic_load_explicit(&r->in_use, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&r->in_use, &idle, 1, memory_order_acquire,
                                                    memory_order_relaxed))
            break;
    }
    int fresh = r == NULL;
    if (fresh) {
        r = bg__calloc(1, size);
        if (!r)
            return BG_ENOMEM;
        atomic_init(&r->in_use, 1);
        r->on_exit = on_exit;
        if (init)
            init(r);
    }
    if (pthread_setspecific(l->key, r) != 0) {
        if (fresh)
            bg__free(r);
        else
            atomic_store_explicit(&r->in_use, 0, memory_order_release);
        return BG_ENOMEM;
    }
    if (fresh) {
        bg__thread_rec *head = atomic_load(&l->head);
        do
            r->next = head;
        while (!atomic_compare_exchange_weak(&l->head, &head, r));
    }
    *out = r;
    return BG_OK;
}
