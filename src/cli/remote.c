/* The remote halves of create, add, check, info, push, pull and rebuild:
 * filters in Redis (<bloomgate/remote.h>), named by URLs (url.c).
 *
 * HOW IT WORKS
 * A URL is parsed, one connection is made with its timeouts and
 * credentials, and the filter is opened (or created) on it. add and check
 * hand each batch of keys from the key reader (keys.c) to
 * bg_remote_filter_add_many / _contains_many in round trips of at most
 * CLI_REMOTE_BATCH keys; the output is the files' own.
 *
 * LIMITATIONS
 * Each round trip is atomic on the server, but an add of many keys is not:
 * a failure after some batches leaves those keys added (a file, by
 * contrast, is only replaced at the end). The message says how many were
 * sent before the failure. Bitmap filters cannot remove keys.
 *
 * Built only with BG_BUILD_REMOTE (BG_CLI_REMOTE defined); otherwise every
 * entry point says the tool was built without remote support. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef BG_CLI_REMOTE

#include <bloomgate/remote.h>

struct cli_remote {
    cli_url url;
    bg_remote *r;
    bg_remote_filter *f;
    int failed_rc; /* the status of the last failed add round trip */
};

static const char *backend_word(bg_remote_backend b)
{
    return b == BG_REMOTE_MODULE ? "module" : "bitmap";
}

/* "bloomgate: URL: WHAT: <why>" for a failed remote call with status rc. */
static void remote_error(const char *display, const char *what, int rc, const bg_remote *r)
{
    const char *detail = bg_remote_errstr(r);
    /* Followed by the client's own detail. EVERSION and ECORRUPT come from
     * Redis data here, not from a file: not bg_strerror's file wording. */
    static const struct {
        int rc;
        const char *why;
    } with_detail[] = {
        {BG_ECONN, "cannot reach Redis (connection failed, broke or timed out)"},
        {BG_EVERSION, "the filter in Redis was made by another version of bloomgate"},
        {BG_ECORRUPT, "the filter's data in Redis is damaged"},
    };
    for (size_t i = 0; i < sizeof with_detail / sizeof with_detail[0]; i++)
        if (rc == with_detail[i].rc) {
            cli_error("%s: %s: %s%s%s", display, what, with_detail[i].why,
                      detail[0] ? ": " : "", detail);
            return;
        }
    switch (rc) {
    case BG_EREMOTE:
        cli_error("%s: %s: Redis replied an error: %s", display, what,
                  detail[0] ? detail : "(no message)");
        /* The two replies people meet first, with what to do. */
        if (strncmp(detail, "NOAUTH", 6) == 0 || strstr(detail, "unauthenticated"))
            cli_error("%s: the server wants a password: redis://:PASSWORD@HOST:PORT/NAME",
                      display);
        else if (strstr(detail, "unknown command") && strstr(detail, "BF."))
            cli_error("%s: ?backend=module needs bloomgate.so (or RedisBloom) loaded in the "
                      "server; the default bitmap backend needs no module",
                      display);
        break;
    case BG_ESTALE:
        cli_error("%s: %s: the filter was re-created or replaced meanwhile (its parameters "
                  "changed); run the command again",
                  display, what);
        break;
    case BG_ENOTFOUND:
        cli_error("%s: %s: no such filter (create it first: bloomgate create URL -n N -p P)",
                  display, what);
        break;
    case BG_EEXIST:
        cli_error("%s: %s: the filter already exists (use --force to drop and re-create it)",
                  display, what);
        break;
    default:
        cli_error("%s: %s: %s", display, what, bg_strerror(rc));
    }
}

static int connect_url(const cli_url *u, bg_remote **out)
{
    bg_remote_options ro = {
        .host = u->host,
        .port = u->port,
        .username = u->username,
        .password = u->password,
        .connect_timeout_ms = u->timeout_ms,
        .command_timeout_ms = u->timeout_ms,
        .cluster = u->cluster,
        .seeds = u->seeds,
    };
    int rc = bg_remote_connect(out, &ro);
    if (rc != BG_OK) {
        remote_error(u->display, "cannot connect", rc, *out);
        bg_remote_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* Parses and connects (no filter opened yet). */
static int begin(const char *text, cli_remote **out)
{
    cli_remote *rf = calloc(1, sizeof *rf);
    if (!rf) {
        cli_error("out of memory");
        return -1;
    }
    if (cli_url_parse(text, &rf->url) != 0) {
        free(rf);
        return -1;
    }
    if (connect_url(&rf->url, &rf->r) != 0) {
        cli_url_free(&rf->url);
        free(rf);
        return -1;
    }
    *out = rf;
    return 0;
}

void cli_remote_close(cli_remote *rf)
{
    if (!rf)
        return;
    bg_remote_filter_close(rf->f);
    bg_remote_free(rf->r);
    cli_url_free(&rf->url);
    free(rf);
}

int cli_remote_open(const char *url, cli_remote **out)
{
    cli_remote *rf;
    if (begin(url, &rf) != 0)
        return -1;
    int rc = bg_remote_filter_open(&rf->f, rf->r, rf->url.name,
                                   (bg_remote_backend)rf->url.backend);
    if (rc != BG_OK) {
        remote_error(rf->url.display, "cannot open", rc, rf->r);
        cli_remote_close(rf);
        return -1;
    }
    *out = rf;
    return 0;
}

const char *cli_remote_display(const cli_remote *rf)
{
    return rf->url.display;
}

int64_t cli_remote_add_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                            size_t n, uint8_t *results, size_t *sent)
{
    int64_t total = 0;
    *sent = 0;
    for (size_t at = 0; at < n; at += CLI_REMOTE_BATCH) {
        size_t count = n - at < CLI_REMOTE_BATCH ? n - at : CLI_REMOTE_BATCH;
        int64_t rc = bg_remote_filter_add_many(rf->f, keys + at, lens + at, count,
                                               results ? results + at : NULL);
        if (rc < 0) {
            remote_error(rf->url.display, "cannot add", (int)rc, rf->r);
            rf->failed_rc = (int)rc;
            return -1;
        }
        *sent += count;
        total += rc;
    }
    return total;
}

int64_t cli_remote_contains_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                                 size_t n, uint8_t *results)
{
    int64_t total = 0;
    for (size_t at = 0; at < n; at += CLI_REMOTE_BATCH) {
        size_t count = n - at < CLI_REMOTE_BATCH ? n - at : CLI_REMOTE_BATCH;
        int64_t rc = bg_remote_filter_contains_many(rf->f, keys + at, lens + at, count,
                                                    results + at);
        if (rc < 0) {
            remote_error(rf->url.display, "cannot check", (int)rc, rf->r);
            return -1;
        }
        total += rc;
    }
    return total;
}

const char *cli_remote_failed_batch(const cli_remote *rf)
{
    if (rf->failed_rc == 0) /* no round trip failed (the keys could not be read) */
        return NULL;
    if (rf->failed_rc == BG_ECONN)
        return "the round trip cut off by a broken connection may or may not have been";
    if (bg_remote_filter_shards(rf->f) > 1)
        return "the failed round trip may have been in part: a sharded filter's shards take "
               "their parts of it one by one";
    if (bg_remote_filter_backend(rf->f) == BG_REMOTE_MODULE)
        return "the failed round trip may have been in part: the module takes the keys before "
               "the one it fails on";
    return NULL;
}

int cli_remote_counts(cli_remote *rf, uint64_t *items, uint64_t *capacity)
{
    bg_remote_filter_stats s;
    int rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        remote_error(rf->url.display, "cannot read the statistics", rc, rf->r);
        return -1;
    }
    *items = s.items;
    *capacity = s.capacity;
    return 0;
}

/* ---- create ----------------------------------------------------------- */

/* What in `a` does not apply to backend b; NULL if all of it does. */
static const char *create_args_error(bg_remote_backend b, const cli_remote_create_args *a)
{
    if (a->other_scaling)
        return "--max-layers, --layer-variant, --tightening and --max-bytes do not apply to "
               "a remote filter";
    if (b == BG_REMOTE_BITMAP) {
        if (a->variant && a->variant != BG_VARIANT_STANDARD)
            return "a bitmap remote filter is a standard filter: drop --variant (or use "
                   "?backend=module for a scalable one)";
        if (a->expansion || a->nonscaling)
            return "--expansion and --nonscaling apply to ?backend=module only";
        return cli_sizing_given_error(&a->given);
    }
    if (a->variant)
        return "?backend=module: the module chooses its own variant: drop --variant";
    if (a->given.m || a->given.k || a->seed_given)
        return "?backend=module is sized by -n and -p only (the module picks m, k and its "
               "hashing): drop -m, -k and --seed";
    if (!a->given.n || a->given.p == 0)
        return "?backend=module needs -n (capacity) and -p (error rate)";
    if (a->expansion && a->nonscaling)
        return "--nonscaling makes one layer that never grows: --expansion does not apply";
    return NULL;
}

static void print_created(const cli_remote *rf, const bg_remote_filter_stats *s,
                          const cli_remote_create_args *a)
{
    char d[32], size[32];
    const char *url = rf->url.display;
    if (a->json) {
        printf("{\"url\":");
        cli_json_string(stdout, url);
        printf(",\"name\":");
        cli_json_string(stdout, rf->url.name);
        printf(",\"backend\":\"%s\",", backend_word(s->backend));
        if (s->backend == BG_REMOTE_BITMAP) {
            printf("\"variant\":\"standard\",\"capacity\":%llu,\"error_rate\":%s,",
                   (unsigned long long)s->capacity,
                   s->capacity ? cli_fmt_double(d, s->error_rate) : "null");
            printf("\"bits\":%llu,\"hashes\":%u,\"seed\":%llu,\"bytes\":%llu",
                   (unsigned long long)s->bits, s->hashes, (unsigned long long)s->seed,
                   (unsigned long long)s->bytes);
            /* a sharded filter has a generation per shard, none of its own */
            uint32_t shards = bg_remote_filter_shards(rf->f);
            if (shards > 1)
                printf(",\"shards\":%u}\n", shards);
            else
                printf(",\"generation\":%llu}\n", (unsigned long long)s->generation);
        } else {
            printf("\"capacity\":%llu,\"error_rate\":%s,\"bytes\":%llu,\"layers\":%u}\n",
                   (unsigned long long)s->capacity, cli_fmt_double(d, a->given.p),
                   (unsigned long long)s->bytes, s->layers);
        }
    }
    if (a->quiet)
        return;
    cli_fmt_bytes(size, sizeof size, s->bytes);
    if (s->backend == BG_REMOTE_BITMAP) {
        fprintf(stderr, "bloomgate: created %s: standard (bitmap backend), m = %llu bits (%s), "
                        "k = %u",
                url, (unsigned long long)s->bits, size, s->hashes);
        if (s->capacity)
            fprintf(stderr, ", for %llu keys at p = %.4g (model)", (unsigned long long)s->capacity,
                    s->error_rate);
        fputc('\n', stderr);
    } else {
        fprintf(stderr,
                "bloomgate: created %s: module backend, for %llu keys at p = %.4g; %s on the "
                "server\n",
                url, (unsigned long long)s->capacity, a->given.p, size);
    }
}

int cli_remote_create(const char *url, const cli_remote_create_args *a)
{
    cli_url u;
    if (cli_url_parse(url, &u) != 0)
        return CLI_EXIT_ERROR;
    const char *bad = create_args_error((bg_remote_backend)u.backend, a);
    cli_url_free(&u);
    if (bad)
        return cli_usage_error(&cli_cmd_create, "%s", bad);

    cli_remote *rf;
    if (begin(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    bg_remote_backend b = (bg_remote_backend)rf->url.backend;
    bg_remote_filter_options fo = {
        .backend = b,
        .capacity = a->given.n,
        .error_rate = a->given.p,
        .bits = a->given.m,
        .hashes = a->given.k,
        .seed = a->seed,
        .expansion = a->expansion,
        .nonscaling = a->nonscaling,
        .shards = rf->url.shards,
    };
    int rc = bg_remote_filter_create(&rf->f, rf->r, rf->url.name, &fo);
    if (rc == BG_EEXIST && a->force) {
        /* Drop what is there, also a sharded filter's shards in any state
         * and the leftovers of a failed create, and try again; if someone
         * else drops it first, nothing is found, which is as good. */
        rc = bg_remote_filter_destroy(rf->r, rf->url.name, b);
        if (rc != BG_OK && rc != BG_ENOTFOUND) {
            remote_error(rf->url.display, "cannot drop the existing filter", rc, rf->r);
            cli_remote_close(rf);
            return CLI_EXIT_ERROR;
        }
        rc = bg_remote_filter_create(&rf->f, rf->r, rf->url.name, &fo);
    }
    if (rc != BG_OK) {
        if (rc == BG_ETOOBIG)
            cli_error("%s: cannot create: the filter would need more than %llu bits (512 MiB), "
                      "the most a bitmap filter has",
                      rf->url.display, (unsigned long long)BG_REMOTE_MAX_BITS);
        else if (rc == BG_EINVAL || rc == BG_EOVERFLOW || rc == BG_EUNDERDET) {
            char why[200];
            cli_sizing_explain(BG_VARIANT_STANDARD, &a->given, rc, why, sizeof why);
            cli_error("%s: cannot create: %s", rf->url.display, why);
        } else
            remote_error(rf->url.display, "cannot create", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    bg_remote_filter_stats s;
    rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        remote_error(rf->url.display, "created, but cannot read its statistics", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    print_created(rf, &s, a);
    cli_remote_close(rf);
    if (a->json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}

/* ---- info ------------------------------------------------------------- */

int cli_remote_info(const char *url, bool json)
{
    cli_remote *rf;
    if (cli_remote_open(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    bg_remote_filter_stats s;
    int rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        remote_error(rf->url.display, "cannot read the statistics", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    const char *disp = rf->url.display;
    char d[32], size[32];
    bool bitmap = s.backend == BG_REMOTE_BITMAP;
    /* From the bits set X of m, with k probes: the usual estimates,
     * n ~ -(m / k) ln(1 - X / m) (Swamidass & Baldi 2007) and p ~ (X / m)^k. */
    double fill = 0, est_items = 0, est_p = 0;
    if (bitmap && s.bits > 0 && s.hashes > 0) {
        fill = (double)s.bits_set / (double)s.bits;
        est_items = fill < 1.0 ? -((double)s.bits / s.hashes) * log1p(-fill) : INFINITY;
        est_p = pow(fill, (double)s.hashes);
    }
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"name\":");
        cli_json_string(stdout, rf->url.name);
        printf(",\"backend\":\"%s\",", backend_word(s.backend));
        if (bitmap) {
            printf("\"variant\":\"standard\",\"seed\":%llu,\"bits\":%llu,\"hashes\":%u,",
                   (unsigned long long)s.seed, (unsigned long long)s.bits, s.hashes);
            printf("\"capacity\":%llu,\"error_rate\":%s,", (unsigned long long)s.capacity,
                   s.capacity ? cli_fmt_double(d, s.error_rate) : "null");
            printf("\"items\":%llu,\"bytes\":%llu,\"bits_set\":%llu,",
                   (unsigned long long)s.items, (unsigned long long)s.bytes,
                   (unsigned long long)s.bits_set);
            printf("\"fill_ratio\":%s,", cli_fmt_double(d, fill));
            printf("\"estimated_items\":%s,", cli_fmt_double(d, est_items));
            printf("\"estimated_fp_rate\":%s,", cli_fmt_double(d, est_p));
            uint32_t shards = bg_remote_filter_shards(rf->f);
            printf("\"shards\":%u", shards);
            /* a sharded filter has a generation per shard, none of its own */
            if (shards > 1)
                printf("}\n");
            else
                printf(",\"generation\":%llu}\n", (unsigned long long)s.generation);
        } else {
            printf("\"capacity\":%llu,\"items\":%llu,\"bytes\":%llu,\"layers\":%u}\n",
                   (unsigned long long)s.capacity, (unsigned long long)s.items,
                   (unsigned long long)s.bytes, s.layers);
        }
    } else {
        printf("url:               %s\n", disp);
        printf("name:              %s\n", rf->url.name);
        printf("backend:           %s\n", backend_word(s.backend));
        cli_fmt_bytes(size, sizeof size, s.bytes);
        if (bitmap) {
            printf("variant:           standard\n");
            printf("seed:              %llu (0x%llx)\n", (unsigned long long)s.seed,
                   (unsigned long long)s.seed);
            printf("bits (m):          %llu\n", (unsigned long long)s.bits);
            printf("hashes (k):        %u\n", s.hashes);
            if (s.capacity) {
                printf("capacity (n):      %llu\n", (unsigned long long)s.capacity);
                printf("error rate (p):    %.6g at capacity (the model's)\n", s.error_rate);
            } else {
                printf("capacity (n):      0 (sized by m and k)\n");
            }
            printf("items:             %llu\n", (unsigned long long)s.items);
            printf("bytes:             %llu (%s, the bit array in Redis)\n",
                   (unsigned long long)s.bytes, size);
            printf("bits set:          %llu\n", (unsigned long long)s.bits_set);
            printf("fill ratio:        %.6f\n", fill);
            printf("estimated items:   %.0f\n", est_items);
            printf("estimated p now:   %.6g\n", est_p);
            uint32_t shards = bg_remote_filter_shards(rf->f);
            if (shards > 1)
                printf("shards:            %u (%s:s0 .. %s:s%u, each with its own generation; "
                       "the figures above are their sums)\n",
                       shards, rf->url.name, rf->url.name, shards - 1);
            else
                printf("generation:        %llu\n", (unsigned long long)s.generation);
        } else {
            printf("capacity (n):      %llu (BF.INFO)\n", (unsigned long long)s.capacity);
            printf("items:             %llu\n", (unsigned long long)s.items);
            printf("bytes:             %llu (%s, BF.INFO Size)\n", (unsigned long long)s.bytes,
                   size);
            printf("layers:            %u\n", s.layers);
        }
    }
    cli_remote_close(rf);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

/* ---- push and pull ---------------------------------------------------- */

/* What push and pull report of a filter: the shape (bitmap) or the layers
 * (module). */
typedef struct moved {
    uint64_t bits, seed, items, bytes, generation;
    uint32_t hashes, layers;
} moved;

static void moved_of(const bg_filter *f, moved *m)
{
    bg_filter_scaling sc = {0};
    (void)bg_filter_scaling_get(f, &sc);
    *m = (moved){.bits = bg_filter_bits(f), .seed = bg_filter_seed(f),
                 .items = bg_filter_items(f), .bytes = bg_filter_bytes(f),
                 .hashes = bg_filter_hashes(f), .layers = sc.layers};
}

/* The JSON fields after "file" and "url" (push) or "url" and "file" (pull). */
static void moved_json(bool module, const moved *m)
{
    if (module)
        printf(",\"backend\":\"module\",\"layers\":%u,\"bytes\":%llu,\"items\":%llu}\n",
               m->layers, (unsigned long long)m->bytes, (unsigned long long)m->items);
    else
        printf(",\"bits\":%llu,\"hashes\":%u,\"seed\":%llu,\"items\":%llu,\"generation\":%llu}\n",
               (unsigned long long)m->bits, m->hashes, (unsigned long long)m->seed,
               (unsigned long long)m->items, (unsigned long long)m->generation);
}

/* "m = ... bits, k = ..., N items" or "scalable, L layers (B), N items". */
static void moved_words(bool module, const moved *m, char *buf, size_t size)
{
    if (module) {
        char b[32];
        cli_fmt_bytes(b, sizeof b, m->bytes);
        snprintf(buf, size, "scalable, %u layer%s (%s), %llu items", m->layers,
                 m->layers == 1 ? "" : "s", b, (unsigned long long)m->items);
    } else {
        snprintf(buf, size, "m = %llu bits, k = %u, %llu items", (unsigned long long)m->bits,
                 m->hashes, (unsigned long long)m->items);
    }
}

int cli_remote_push(const char *path, const char *url, bool quiet, bool json)
{
    cli_url u;
    if (cli_url_parse(url, &u) != 0)
        return CLI_EXIT_ERROR;
    bool module = u.backend == CLI_URL_MODULE;
    cli_url_free(&u);
    bg_filter *f;
    int rc = bg_filter_map(&f, path, 0);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot open", rc, errno);
        return CLI_EXIT_ERROR;
    }
    bg_variant want = module ? BG_VARIANT_SCALABLE : BG_VARIANT_STANDARD;
    if (bg_filter_variant(f) != want) {
        if (module)
            cli_error("%s: is a %s filter; only a scalable one can be pushed to the module "
                      "backend (the module's filters are scalable: create the file with "
                      "--variant scalable)",
                      path, bg_variant_name(bg_filter_variant(f)));
        else
            cli_error("%s: is a %s filter; only a standard one can be pushed to the bitmap "
                      "backend (create the file with --variant standard, or push a scalable "
                      "one to ?backend=module)",
                      path, bg_variant_name(bg_filter_variant(f)));
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    cli_remote *rf;
    if (begin(url, &rf) != 0) {
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    rc = bg_remote_filter_publish(rf->r, rf->url.name,
                                  module ? BG_REMOTE_MODULE : BG_REMOTE_BITMAP, f);
    if (rc != BG_OK) {
        if (rc == BG_ETOOBIG)
            cli_error("%s: cannot push %s: it has more than %llu bits, the most a bitmap "
                      "filter has",
                      rf->url.display, path, (unsigned long long)BG_REMOTE_MAX_BITS);
        else if (rc == BG_EEXIST) /* remote.h: only a sharded filter or its shards */
            cli_error("%s: cannot push: a sharded filter (or shards of one) has that name, "
                      "and push replaces only an unsharded filter; push to another name, or "
                      "drop it first (bloomgate create URL --force ... re-creates it)",
                      rf->url.display);
        else
            remote_error(rf->url.display, "cannot push", rc, rf->r);
        if (rc == BG_EREMOTE && strstr(bg_remote_errstr(rf->r), "MAX_BYTES"))
            cli_error("%s: recreate the file with --max-bytes at most the server's MAX_BYTES "
                      "(512 MiB by default)", path);
        bg_filter_free(f);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    moved m;
    moved_of(f, &m);
    bg_filter_free(f);
    /* The generation now current: someone may already have pushed again,
     * so it is reported as read back, not as pushed. */
    if (!module && bg_remote_filter_open(&rf->f, rf->r, rf->url.name, BG_REMOTE_BITMAP) == BG_OK)
        m.generation = bg_remote_filter_generation(rf->f);
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"url\":");
        cli_json_string(stdout, rf->url.display);
        moved_json(module, &m);
    }
    if (!quiet) {
        char words[128];
        moved_words(module, &m, words, sizeof words);
        if (module)
            fprintf(stderr, "bloomgate: pushed %s to %s: %s\n", path, rf->url.display, words);
        else
            fprintf(stderr, "bloomgate: pushed %s to %s: %s; now generation %llu\n", path,
                    rf->url.display, words, (unsigned long long)m.generation);
    }
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}

int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json)
{
    /* Fail before downloading what may be hundreds of MiB; cli_save_new
     * makes the refusal race-free. */
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        cli_error("%s: already exists (use --force to replace it)", path);
        return CLI_EXIT_ERROR;
    }
    cli_remote *rf;
    if (cli_remote_open(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    bool module = rf->url.backend == CLI_URL_MODULE;
    bg_filter *f;
    int rc = bg_remote_filter_fetch(rf->f, &f);
    if (rc != BG_OK) {
        if (rc == BG_EINVAL) /* the one reason left: shards */
            cli_error("%s: cannot pull: a sharded filter has no single file to go into",
                      rf->url.display);
        else
            remote_error(rf->url.display, "cannot pull", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    moved m;
    moved_of(f, &m);
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
        moved_json(module, &m);
    }
    if (!quiet) {
        char words[128];
        moved_words(module, &m, words, sizeof words);
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

/* ---- rebuild ---------------------------------------------------------- */

/* rebuild URL: bg_remote_filter_rebuild_begin, a rebuild_add_many per batch
 * of keys, then one commit that swaps the new filter in (per shard for a
 * sharded filter). Readers see the old filter until then, and adds from
 * other clients reach both. Any failure before the commit cancels the
 * rebuild, leaving the filter as it was.
 *
 * With --command the CLI starts the source itself once begin has returned
 * (producer.c), reads its output as it reads stdin, and commits only if it
 * exited with status 0.
 *
 * An interrupt (SIGINT, SIGTERM, SIGHUP, SIGQUIT) before the commit is
 * caught (cli_catch_signals): the reading stops, --command's command is
 * ended, the rebuild is cancelled, and then the CLI dies of the signal. A
 * second one ends it at once, in case Redis does not answer the cancel.
 * One that comes during the commit or after it stops nothing: the rebuild
 * is done, the CLI says so and exits 0, so that a job runner does not take
 * a committed rebuild for a failed one (and run it again).
 *
 * LIMITATIONS
 * SIGKILL, or a second interrupt, leaves the rebuild pending, every add
 * writing twice, until its lease runs out or someone runs `rebuild
 * --abort`. */

/* What in `a` does not apply to backend b; NULL if all of it does. */
static const char *rebuild_args_error(bg_remote_backend b, const cli_remote_rebuild_args *a)
{
    const bg_sizing *g = &a->given;
    bool sized = g->n || g->p != 0 || g->m || g->k;
    if (b == BG_REMOTE_BITMAP && !sized && !a->expansion && !a->nonscaling)
        return NULL; /* the same shape */
    if (b == BG_REMOTE_MODULE && (g->m || g->k))
        return "?backend=module is sized by -n and -p only (the module picks m and k): drop "
               "-m and -k";
    if (b == BG_REMOTE_MODULE && (!g->n || g->p == 0))
        return "?backend=module: give the new filter's -n (capacity) and -p (error rate); "
               "Redis does not report a module filter's error rate, so its shape cannot be kept";
    cli_remote_create_args ca = {
        .given = *g, .expansion = a->expansion, .nonscaling = a->nonscaling};
    return create_args_error(b, &ca);
}

typedef struct rebuilder {
    cli_remote *rf;
    double lease_s;
    bool gone;       /* the rebuild is no longer this handle's: nothing to cancel */
    bool committing; /* a failed commit may have swapped some shards already */
    bool committed;  /* the new filter is current: nothing left to cancel */
} rebuilder;

static void rebuild_error(rebuilder *b, const char *what, int rc)
{
    const char *disp = b->rf->url.display;
    if (rc == BG_ESTALE) {
        b->gone = true;
        cli_error("%s: %s: the rebuild was cancelled meanwhile (by 'rebuild --abort', a push, "
                  "a re-creation of the filter, or its lease of %g s running out between two "
                  "batches)",
                  disp, what, b->lease_s);
    } else if (rc == BG_ENOTFOUND) {
        b->gone = true;
        cli_error("%s: %s: the filter was dropped meanwhile", disp, what);
    } else {
        remote_error(disp, what, rc, b->rf->r);
    }
}

/* After a failure: cancels the rebuild, unless it is gone already (on a
 * handle without a rebuild of its own, abort cancels whichever rebuild is
 * pending: maybe another client's). */
static void rebuild_cancel(rebuilder *b)
{
    const char *disp = b->rf->url.display;
    if (b->gone) {
        if (!b->committing)
            cli_error("%s: nothing of this rebuild was committed", disp);
        return;
    }
    int rc = bg_remote_filter_rebuild_abort(b->rf->f);
    if (rc == BG_OK || rc == BG_ENOTFOUND) {
        cli_error(b->committing ? "%s: the rest of the rebuild was cancelled"
                                : "%s: the rebuild was cancelled: the filter is as it was",
                  disp);
        return;
    }
    remote_error(disp, "cannot cancel the rebuild", rc, b->rf->r);
    cli_error("%s: readers still see the old filter; the rebuild stays pending (adds write "
              "twice) until its lease of %g s runs out, or: bloomgate rebuild --abort URL",
              disp, b->lease_s);
}

static int rebuild_batch(void *ctx, const void *const *keys, const size_t *lens, size_t count,
                         uint64_t before)
{
    rebuilder *b = ctx;
    (void)before;
    if (cli_caught_signal)
        return -1; /* rebuild_run says so */
    for (size_t at = 0; at < count; at += CLI_REMOTE_BATCH) {
        size_t n = count - at < CLI_REMOTE_BATCH ? count - at : CLI_REMOTE_BATCH;
        int64_t rc = bg_remote_filter_rebuild_add_many(b->rf->f, keys + at, lens + at, n, NULL);
        if (rc < 0) {
            rebuild_error(b, "cannot rebuild", (int)rc);
            return -1;
        }
    }
    return 0;
}

/* rebuild --abort: this handle began no rebuild, so the library cancels
 * whichever is pending (a rebuilder that died, say). */
static int rebuild_abort_pending(cli_remote *rf, bool quiet, bool json)
{
    const char *disp = rf->url.display;
    int rc = bg_remote_filter_rebuild_abort(rf->f);
    if (rc != BG_OK && rc != BG_ENOTFOUND) {
        remote_error(disp, "cannot cancel the rebuild", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"cancelled\":%s}\n", rc == BG_OK ? "true" : "false");
    } else if (!quiet) {
        fprintf(stderr, "bloomgate: %s: %s\n", disp,
                rc == BG_OK ? "the pending rebuild was cancelled" : "no rebuild was pending");
    }
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}

static void print_rebuilt(const cli_remote *rf, const bg_remote_filter_stats *s, int64_t read,
                          const cli_remote_rebuild_args *a)
{
    const char *disp = rf->url.display;
    bool module = s->backend == BG_REMOTE_MODULE;
    /* A sharded filter has a generation per shard, none of its own (0). */
    if (a->json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"keys\":%lld,\"items\":%llu,\"capacity\":%llu", (long long)read,
               (unsigned long long)s->items, (unsigned long long)s->capacity);
        if (module)
            printf(",\"backend\":\"module\",\"layers\":%u,\"bytes\":%llu", s->layers,
                   (unsigned long long)s->bytes);
        else
            printf(",\"bits\":%llu,\"hashes\":%u,\"seed\":%llu", (unsigned long long)s->bits,
                   s->hashes, (unsigned long long)s->seed);
        if (s->generation)
            printf(",\"generation\":%llu", (unsigned long long)s->generation);
        printf("}\n");
    } else if (!a->quiet) {
        fprintf(stderr, "bloomgate: rebuilt %s: %lld keys read; now %llu items", disp,
                (long long)read, (unsigned long long)s->items);
        if (!module)
            fprintf(stderr, ", m = %llu bits, k = %u", (unsigned long long)s->bits, s->hashes);
        if (s->generation)
            fprintf(stderr, " (generation %llu)", (unsigned long long)s->generation);
        fputc('\n', stderr);
    }
    if (!a->quiet && s->capacity > 0 && s->items > s->capacity)
        fprintf(stderr, "bloomgate: %s: warning: %llu items exceed the capacity %llu (rebuild "
                        "with a larger -n)\n",
                disp, (unsigned long long)s->items, (unsigned long long)s->capacity);
}

/* Whether a signal that ends the CLI came meanwhile (cli_catch_signals):
 * says so. The rebuild is then cancelled, and the CLI dies of it after. */
static bool interrupted(const char *disp)
{
    int sig = cli_caught_signal;
    if (!sig)
        return false;
    cli_error("%s: rebuild: interrupted by signal %d (%s)", disp, sig, strsignal(sig));
    return true;
}

/* The rebuild itself, from begin to the report, on b->rf; an exit status.
 * Signals are caught meanwhile: one that comes before the commit cancels
 * the rebuild (a pipeline's producer killed by the same Ctrl-C ends its
 * output early, which must not be committed). */
static int rebuild_run(rebuilder *b, bg_remote_backend backend, const cli_remote_rebuild_args *a)
{
    cli_remote *rf = b->rf;
    const char *disp = rf->url.display;
    const bg_sizing *g = &a->given;
    bool resize = g->n || g->p != 0 || g->m || g->k;
    bg_remote_filter_options o = {
        .backend = backend,
        .capacity = g->n,
        .error_rate = g->p,
        .bits = g->m,
        .hashes = g->k,
        /* A key's probes, and its shard, come from the seed: a rebuild with
         * another one would be another filter (remote.h refuses it for a
         * sharded one). The module has none (0). */
        .seed = bg_remote_filter_seed(rf->f),
        .expansion = a->expansion,
        .nonscaling = a->nonscaling,
    };
    int rc = bg_remote_filter_rebuild_begin(rf->f, resize ? &o : NULL);
    if (rc != BG_OK) {
        if (rc == BG_EEXIST)
            cli_error("%s: cannot rebuild: another rebuild is pending (another client's, or one "
                      "whose rebuilder stopped); it expires with its lease (%g s by default) "
                      "unless committed, or cancel it now: bloomgate rebuild --abort URL",
                      disp, BG_REMOTE_REBUILD_LEASE_MS / 1e3);
        else if (rc == BG_ETOOBIG)
            cli_error("%s: cannot rebuild: the filter (or each shard) would need more than %llu "
                      "bits (512 MiB), the most a bitmap filter has",
                      disp, (unsigned long long)BG_REMOTE_MAX_BITS);
        else if (resize && (rc == BG_EINVAL || rc == BG_EOVERFLOW || rc == BG_EUNDERDET)) {
            char why[200];
            cli_sizing_explain(BG_VARIANT_STANDARD, g, rc, why, sizeof why);
            cli_error("%s: cannot rebuild: %s", disp, why);
        } else
            remote_error(disp, "cannot rebuild", rc, rf->r);
        return CLI_EXIT_ERROR;
    }
    if (interrupted(disp)) {
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }

    /* The keys are read only now that begin has returned: another client's
     * add before it reached the old filter only, so the new one has that key
     * only if the source, read from here on, holds it (remote.h, REBUILD).
     * A pipeline's producer may have read its source already; --command's
     * starts only now, and says whether it listed every key (exit 0). */
    int64_t read;
    if (a->command) {
        cli_producer prod;
        if (cli_producer_start(&prod, a->command, disp) != 0) {
            rebuild_cancel(b);
            return CLI_EXIT_ERROR;
        }
        read = cli_keys_each_fd(prod.fd, "the command's output", a->sep, "rebuild", disp,
                                a->quiet, rebuild_batch, b);
        if (cli_producer_end(&prod, read < 0 || cli_caught_signal, disp) != 0)
            read = -1;
    } else {
        read = cli_keys_each(a->keys, a->nkeys, a->sep, "rebuild", disp, a->quiet,
                             rebuild_batch, b);
    }
    if (interrupted(disp)) {
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }
    if (read == 0)
        /* Most likely the source failed (a pipeline's producer that died
         * prints nothing): swapping in an empty filter would answer "absent"
         * for every key. */
        cli_error("%s: cannot rebuild: no keys were read, and the filter would be left empty "
                  "(to empty it on purpose: bloomgate create --force URL ...)",
                  disp);
    if (read <= 0) {
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }

    rc = bg_remote_filter_rebuild_commit(rf->f);
    /* BG_ECONN: the request or its reply was lost, so the swap may or may
     * not have happened. A retry is safe either way: it commits now, or
     * finds this rebuild committed and answers BG_OK (remote.h,
     * bg_remote_filter_rebuild_commit); the handle reconnects first. */
    if (rc == BG_ECONN)
        rc = bg_remote_filter_rebuild_commit(rf->f);
    if (rc != BG_OK) {
        b->committing = true;
        rebuild_error(b, "cannot commit the rebuild", rc);
        cli_error("%s: not committed, or on a sharded filter only some shards: each shard is "
                  "complete, old or new, so no key is missing",
                  disp);
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }
    b->committed = true;

    bg_remote_filter_stats s;
    rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        remote_error(disp, "rebuilt, but cannot read the statistics", rc, rf->r);
        return CLI_EXIT_ERROR;
    }
    print_rebuilt(rf, &s, read, a);
    return CLI_EXIT_OK;
}

int cli_remote_rebuild(const char *url, const cli_remote_rebuild_args *a)
{
    _Static_assert(CLI_MAX_LEASE_MS == BG_REMOTE_MAX_REBUILD_LEASE_MS, "--lease's bound");
    cli_url u;
    if (cli_url_parse(url, &u) != 0)
        return CLI_EXIT_ERROR;
    bg_remote_backend backend = (bg_remote_backend)u.backend;
    const char *bad = a->cancel ? NULL : rebuild_args_error(backend, a);
    cli_url_free(&u);
    if (bad)
        return cli_usage_error(&cli_cmd_rebuild, "%s", bad);

    uint64_t lease_ms = a->lease_ms ? a->lease_ms : BG_REMOTE_REBUILD_LEASE_MS;
    rebuilder b = {.lease_s = (double)lease_ms / 1e3};
    if (cli_remote_open(url, &b.rf) != 0)
        return CLI_EXIT_ERROR;
    cli_remote *rf = b.rf;
    if (a->cancel)
        return rebuild_abort_pending(rf, a->quiet, a->json);
    if (a->lease_ms)
        (void)bg_remote_filter_set_rebuild_lease(rf->f, a->lease_ms); /* range checked */
    cli_catch_signals();
    int code = rebuild_run(&b, backend, a);
    if (code == CLI_EXIT_OK && a->json && cli_stdout_close() != 0)
        code = CLI_EXIT_ERROR;
    fflush(stdout);
    if (b.committed && cli_caught_signal) {
        /* It came during the commit or after: it stopped nothing, and the
         * exit status is the rebuild's, done, not "killed". */
        int sig = cli_caught_signal;
        cli_caught_signal = 0;
        cli_error("%s: rebuild: signal %d (%s) came after the commit: the rebuild is done",
                  rf->url.display, sig, strsignal(sig));
    }
    cli_remote_close(rf);
    cli_uncatch_signals(); /* dies of a signal caught before the commit */
    return code;
}

#else /* !BG_CLI_REMOTE */

/* Built without bloomgate_remote: a URL is recognised, and refused. */
static int no_remote(const char *url)
{
    cli_url u;
    if (cli_url_parse(url, &u) == 0) {
        cli_error("%s: built without remote support (configure with -DBG_BUILD_REMOTE=ON)",
                  u.display);
        cli_url_free(&u);
    }
    return -1;
}

int cli_remote_open(const char *url, cli_remote **out)
{
    *out = NULL;
    return no_remote(url);
}

void cli_remote_close(cli_remote *rf)
{
    (void)rf;
}

const char *cli_remote_display(const cli_remote *rf)
{
    (void)rf;
    return "";
}

int64_t cli_remote_add_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                            size_t n, uint8_t *results, size_t *sent)
{
    (void)rf, (void)keys, (void)lens, (void)n, (void)results;
    *sent = 0;
    return -1;
}

const char *cli_remote_failed_batch(const cli_remote *rf)
{
    (void)rf;
    return NULL;
}

int64_t cli_remote_contains_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                                 size_t n, uint8_t *results)
{
    (void)rf, (void)keys, (void)lens, (void)n, (void)results;
    return -1;
}

int cli_remote_counts(cli_remote *rf, uint64_t *items, uint64_t *capacity)
{
    (void)rf, (void)items, (void)capacity;
    return -1;
}

int cli_remote_create(const char *url, const cli_remote_create_args *a)
{
    (void)a;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_info(const char *url, bool json)
{
    (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_push(const char *path, const char *url, bool quiet, bool json)
{
    (void)path, (void)quiet, (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json)
{
    (void)path, (void)force, (void)quiet, (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_rebuild(const char *url, const cli_remote_rebuild_args *a)
{
    (void)a;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

#endif /* BG_CLI_REMOTE */
