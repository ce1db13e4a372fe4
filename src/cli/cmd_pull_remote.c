/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate pull URL FILE: the filter as it was at one moment
 * (bg_remote_filter_fetch; a key of RedisBloom's type through BF.SCANDUMP),
 * saved as create saves: never over an existing file without --force. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_output.h"
#include "cli_signals.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* BF.SCANDUMP name it: the reply's next iterator and data (borrowed from
 * *reply, which the caller frees). 0, or -1 (message printed). */
static int scandump(cli_remote *rf, int64_t it, redisReply **reply, int64_t *next,
                    const char **data, size_t *len)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)it);
    const char *argv[] = {"BF.SCANDUMP", rf->url.name, num};
    size_t lens[] = {11, strlen(rf->url.name), strlen(num)};
    int rc = bg_remote_command(rf->r, 3, argv, lens, reply);
    if (rc != BG_OK) {
        cli_remote_error(rf->url.display, "cannot pull (BF.SCANDUMP)", rc, rf->r);
        return -1;
    }
    redisReply *r = *reply;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_STRING) {
        cli_error("%s: cannot pull: BF.SCANDUMP %s replied what RedisBloom does not",
                  rf->url.display, num);
        freeReplyObject(r);
        *reply = NULL;
        return -1;
    }
    *next = r->element[0]->integer;
    *data = r->element[1]->str;
    *len = r->element[1]->len;
    return 0;
}

/* A key of RedisBloom's type (MBbloom--, held by RedisBloom or by
 * bloomgate.so) pulled as RedisBloom copies one: its BF.SCANDUMP header,
 * then every chunk placed as BF.LOADCHUNK places it, into a RedisBloom
 * chain (<bloomgate/redisbloom.h>). The header is asked for again at the
 * end: an add meanwhile changes it, and the pull then fails rather than
 * save a mix of two states. 1: the key is of another type (or none), 0:
 * *out made, -1: failed (message printed). */
static int pull_redisbloom(cli_remote *rf, bg_filter **out)
{
    const char *argv[] = {"TYPE", rf->url.name};
    size_t lens[] = {4, strlen(rf->url.name)};
    redisReply *r;
    int rc = bg_remote_command(rf->r, 2, argv, lens, &r);
    if (rc != BG_OK) {
        cli_remote_error(rf->url.display, "cannot pull (TYPE)", rc, rf->r);
        return -1;
    }
    bool rb = (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) &&
              strcmp(r->str, "MBbloom--") == 0;
    freeReplyObject(r);
    if (!rb)
        return 1;
    int64_t next;
    const char *data;
    size_t len;
    if (scandump(rf, 0, &r, &next, &data, &len) != 0)
        return -1;
    bg_filter *f;
    rc = bg_rb_header_decode(&f, data, len, 0);
    char *head = rc == BG_OK ? malloc(len ? len : 1) : NULL;
    size_t head_len = len;
    if (head)
        memcpy(head, data, len);
    freeReplyObject(r);
    if (rc != BG_OK || head == NULL) {
        cli_error("%s: cannot pull: its BF.SCANDUMP header: %s", rf->url.display,
                  bg_strerror(rc != BG_OK ? rc : BG_ENOMEM));
        bg_filter_free(f);
        return -1;
    }
    /* Each chunk moves the iterator forward inside the header's links, so
     * the loop ends within their bytes. */
    int64_t it = next;
    for (;;) {
        if (scandump(rf, it, &r, &next, &data, &len) != 0)
            goto fail;
        if (next == 0) {
            freeReplyObject(r);
            break;
        }
        rc = next > it ? bg_rb_load_chunk(f, next, data, len) : BG_ECORRUPT;
        freeReplyObject(r);
        if (rc != BG_OK) {
            cli_error("%s: cannot pull: BF.SCANDUMP %lld: %s", rf->url.display, (long long)it,
                      bg_strerror(rc));
            goto fail;
        }
        it = next;
    }
    if (scandump(rf, 0, &r, &next, &data, &len) != 0)
        goto fail;
    bool same = len == head_len && memcmp(data, head, len) == 0;
    freeReplyObject(r);
    if (!same) {
        cli_error("%s: cannot pull: the filter changed while it was read; try again",
                  rf->url.display);
        goto fail;
    }
    free(head);
    *out = f;
    return 0;
fail:
    free(head);
    bg_filter_free(f);
    return -1;
}

int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json)
{
    /* Fail before downloading what may be hundreds of MiB; cli_save_new
     * makes the refusal race-free. */
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        if (!cli_target_never_replaced(path))
            cli_error("%s: already exists (use --force to replace it)", path);
        return CLI_EXIT_ERROR;
    }
    cli_remote *rf;
    bg_filter *f = NULL;
    if (cli_remote_begin(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    int got = pull_redisbloom(rf, &f);
    if (got < 0) {
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    if (got == 0) {
        bool saved = cli_save_new(f, path, force) == 0;
        bg_rb_chain ch;
        (void)bg_rb_chain_get(f, &ch);
        uint64_t bytes = bg_filter_bytes(f);
        bg_filter_free(f);
        if (saved && json) {
            printf("{\"url\":");
            cli_json_string(stdout, rf->url.display);
            printf(",\"file\":");
            cli_json_string(stdout, path);
            printf(",\"backend\":\"redisbloom\",\"links\":%u,\"bytes\":%llu,\"items\":%llu}\n",
                   ch.nfilters, (unsigned long long)bytes, (unsigned long long)ch.size);
        }
        if (saved && !quiet)
            fprintf(stderr, "bloomgate: pulled %s into %s: redisbloom, %u links (%llu bytes), "
                    "%llu items\n", rf->url.display, path, ch.nfilters,
                    (unsigned long long)bytes, (unsigned long long)ch.size);
        cli_remote_close(rf);
        if (!saved || (json && cli_stdout_close() != 0))
            return CLI_EXIT_ERROR;
        return CLI_EXIT_OK;
    }
    int rc = bg_remote_filter_open(&rf->f, rf->r, rf->url.name, (bg_remote_backend)rf->url.backend);
    if (rc != BG_OK) {
        cli_remote_error(rf->url.display, "cannot open", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    bool module = rf->url.backend == CLI_URL_MODULE;
    rc = bg_remote_filter_fetch(rf->f, &f);
    if (rc != BG_OK) {
        if (rc == BG_EINVAL) /* the one reason left: shards */
            cli_error("%s: cannot pull: a sharded filter has no single file to go into",
                      rf->url.display);
        else
            cli_remote_error(rf->url.display, "cannot pull", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    cli_moved m;
    cli_moved_of(f, &m);
    m.generation = module ? 0 : bg_remote_filter_generation(rf->f);
    if (cli_save_new(f, path, force) != 0) {
        bg_filter_free(f);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    bg_filter_free(f);
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, rf->url.display);
        printf(",\"file\":");
        cli_json_string(stdout, path);
        cli_moved_json(module, &m);
    }
    if (!quiet) {
        char words[128];
        cli_moved_words(module, &m, words, sizeof words);
        if (module)
            fprintf(stderr, "bloomgate: pulled %s into %s: %s\n", rf->url.display, path, words);
        else
            fprintf(stderr, "bloomgate: pulled %s (generation %llu) into %s: %s\n",
                    rf->url.display, (unsigned long long)m.generation, path, words);
    }
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}
