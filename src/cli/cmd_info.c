/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate info: everything about a filter file.
 *
 * The file is mapped (verifying the checksum unless --no-verify) for the
 * statistics, which scan the bit array; the header fields come from
 * bg_file_inspect. A file whose checksum does not match still has its header
 * printed, with "checksum: MISMATCH", and the exit status is 2. A remote
 * filter (a URL) is cmd_info_remote.c's. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"
#include "cli_remote.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

static const char *hash_name(uint32_t id)
{
    return id == BG_FILE_HASH_XXH3_128 ? "XXH3-128"
           : id == BG_FILE_HASH_MURMUR ? "MurmurHash (RedisBloom's)"
                                       : "unknown";
}

static const char *checksum_word(bg_checksum_state ck)
{
    return ck == BG_CHECKSUM_OK ? "ok" : ck == BG_CHECKSUM_MISMATCH ? "mismatch" : "not verified";
}

/* What the statistics say: the whole filter's, and for a scalable filter
 * its growth parameters and each layer's. */
typedef struct report {
    bg_filter_stats s;
    bool scalable;
    bg_filter_scaling sc;
    uint32_t nlayers; /* layer statistics in `layers` */
    bg_filter_stats layers[BG_MAX_LAYERS];
    /* A RedisBloom chain: its fields, and each link's (the first
     * BG_MAX_LAYERS; `layers` has their statistics). */
    bool rb;
    bg_rb_chain chain;
    bg_rb_link links[BG_MAX_LAYERS];
} report;

/* Fills r from f. 0, or -1 (message printed). */
static int gather(const bg_filter *f, const char *path, report *r)
{
    int rc = bg_filter_stats_get(f, &r->s);
    r->rb = rc == BG_OK && bg_rb_chain_get(f, &r->chain) == BG_OK;
    r->scalable = rc == BG_OK && bg_filter_scaling_get(f, &r->sc) == BG_OK;
    r->nlayers = 0;
    for (uint32_t i = 0; r->rb && i < r->chain.nfilters && i < BG_MAX_LAYERS && rc == BG_OK; i++)
        rc = bg_rb_link_get(f, i, &r->links[i]);
    if (rc == BG_OK && r->scalable) {
        uint32_t n = r->sc.layers < BG_MAX_LAYERS ? r->sc.layers : BG_MAX_LAYERS;
        for (uint32_t i = 0; i < n && rc == BG_OK; i++)
            rc = bg_filter_layer_stats(f, i, &r->layers[i]);
        r->nlayers = n;
    }
    if (rc != BG_OK) {
        cli_error("%s: cannot read statistics: %s", path, bg_strerror(rc));
        return -1;
    }
    return 0;
}

static void print_layer_json(const bg_filter_stats *l, uint32_t i)
{
    char d[32];
    printf("{\"layer\":%u,\"variant\":\"%s\",\"capacity\":%llu,\"items\":%llu,", i,
           bg_variant_name(l->variant), (unsigned long long)l->capacity,
           (unsigned long long)l->items);
    printf("\"bits\":%llu,\"hashes\":%u,\"bytes\":%llu,", (unsigned long long)l->bits, l->hashes,
           (unsigned long long)l->bytes);
    printf("\"error_rate\":%s,", cli_fmt_double(d, l->error_rate));
    printf("\"bits_set\":%llu,\"fill_ratio\":%s,", (unsigned long long)l->bits_set,
           cli_fmt_double(d, l->fill_ratio));
    printf("\"estimated_items\":%s,", cli_fmt_double(d, l->estimated_items));
    printf("\"estimated_fp_rate\":%s}", cli_fmt_double(d, l->estimated_fp_rate));
}

/* The names of a RedisBloom chain's option bits, space-separated. */
static const char *rb_option_names(uint32_t options, char *buf, size_t size)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{BG_RB_NOROUND, "NOROUND"},
                 {BG_RB_ENTS_IS_BITS, "ENTS_IS_BITS"},
                 {BG_RB_FORCE64, "FORCE64"},
                 {BG_RB_NO_SCALING, "NO_SCALING"}};
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (options & names[i].bit)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? " " : "", names[i].name);
    if (options & ~BG_RB_OPTIONS_KNOWN)
        snprintf(buf + at, size - at, "%sunknown 0x%x", at ? " " : "",
                 options & ~BG_RB_OPTIONS_KNOWN);
    return buf[0] ? buf : "none";
}

/* A RedisBloom chain's fields and links, as JSON members (r: the loaded
 * filter; NULL for a damaged file, which has only its header's counts). */
static void print_rb_json(const bg_file_info *in, const report *r)
{
    char d[32], names[96];
    if (!r || !r->rb) {
        printf("\"link_count\":%u,\"links\":null,", in->layers);
        return;
    }
    printf("\"options\":%u,\"option_names\":\"%s\",\"growth\":%u,\"link_count\":%u,\"links\":[",
           r->chain.options, rb_option_names(r->chain.options, names, sizeof names),
           r->chain.growth, r->chain.nfilters);
    for (uint32_t i = 0; i < r->nlayers; i++) {
        const bg_rb_link *l = &r->links[i];
        printf("%s{\"link\":%u,\"entries\":%llu,\"size\":%llu,\"bits\":%llu,\"bytes\":%llu,",
               i ? "," : "", i, (unsigned long long)l->entries, (unsigned long long)l->size,
               (unsigned long long)l->bits, (unsigned long long)l->bytes);
        printf("\"hashes\":%u,\"n2\":%u,\"error\":%s,", l->hashes, l->n2,
               cli_fmt_double(d, l->error));
        printf("\"bpe\":%s,", cli_fmt_double(d, l->bpe));
        printf("\"bits_set\":%llu,\"fill_ratio\":%s}", (unsigned long long)r->layers[i].bits_set,
               cli_fmt_double(d, r->layers[i].fill_ratio));
    }
    printf("],");
}

/* The text of a RedisBloom chain: options, growth, one line per link. */
static void print_rb_text(const bg_file_info *in, const report *r)
{
    char names[96];
    if (!r || !r->rb) {
        printf("links:             %u\n", in->layers);
        return;
    }
    const bg_rb_chain *c = &r->chain;
    printf("options:           %u (%s)\n", c->options,
           rb_option_names(c->options, names, sizeof names));
    if (c->options & BG_RB_NO_SCALING)
        printf("growth:            none (NO_SCALING): adding a new key when the link is full "
               "fails\n");
    else
        printf("growth:            %u: a new link has capacity x%u and error rate x0.5 (%s)\n",
               c->growth, c->growth,
               c->options & BG_RB_NOROUND ? "exact sizes" : "power-of-two sizes");
    printf("hashing:           %s\n", c->options & BG_RB_FORCE64 ? "MurmurHash64A (64-bit)"
                                                              : "MurmurHash2 (32-bit)");
    printf("error rate (p):    %.6g (the links' rates added up)\n", r->s.error_rate);
    printf("links:             %u%s\n", c->nfilters,
           c->nfilters > r->nlayers ? " (the first ones below)" : "");
    printf("%5s %14s %14s %14s %12s %3s %3s %13s %20s %9s\n", "link", "entries", "size",
           "bits", "bytes", "k", "n2", "error", "bpe", "fill");
    for (uint32_t i = 0; i < r->nlayers; i++) {
        const bg_rb_link *l = &r->links[i];
        printf("%5u %14llu %14llu %14llu %12llu %3u %3u %13.6g %20.17g %9.6f\n", i,
               (unsigned long long)l->entries, (unsigned long long)l->size,
               (unsigned long long)l->bits, (unsigned long long)l->bytes, l->hashes, l->n2,
               l->error, l->bpe, r->layers[i].fill_ratio);
    }
}

/* A scalable filter's growth: from the filter, or, when the file is damaged
 * and there is no filter, from its header. NULL for other variants. */
static const bg_filter_scaling *scaling_of(const bg_file_info *in, const report *r)
{
    if (in->variant != BG_VARIANT_SCALABLE)
        return NULL;
    return r && r->scalable ? &r->sc : &in->scaling;
}

static void print_json(const char *path, const bg_file_info *in, const report *r,
                       bg_checksum_state ck)
{
    char d[32];
    const bg_filter_stats *s = r ? &r->s : NULL;
    bool rb = in->variant == BG_VARIANT_REDISBLOOM;
    bool scalable = in->variant == BG_VARIANT_SCALABLE || rb;
    const bg_filter_scaling *sc = scaling_of(in, r);
    const char *vname = bg_variant_name(in->variant);
    printf("{\"file\":");
    cli_json_string(stdout, path);
    printf(",\"file_bytes\":%llu,\"version\":%u,\"header_bytes\":%u,",
           (unsigned long long)in->file_bytes, in->version, in->header_bytes);
    printf("\"variant\":\"%s\",\"hash\":\"%s\",\"hash_id\":%u,\"seed\":%llu,",
           vname ? vname : "unknown", hash_name(in->hash_id), in->hash_id,
           (unsigned long long)in->seed);
    /* A scalable file's header sums up its layers; the statistics have the
     * same totals from the layers themselves. */
    uint64_t bits = scalable && s ? s->bits : in->bits;
    uint32_t hashes = scalable && s ? s->hashes : in->hashes;
    uint64_t capacity = scalable && s ? s->capacity : in->capacity;
    uint64_t items = scalable && s ? s->items : in->items;
    printf("\"bits\":%llu,\"hashes\":%u,\"capacity\":%llu,\"items\":%llu,",
           (unsigned long long)bits, hashes, (unsigned long long)capacity,
           (unsigned long long)items);
    printf("\"payload_offset\":%llu,\"payload_bytes\":%llu,",
           (unsigned long long)in->payload_offset, (unsigned long long)in->payload_bytes);
    if (rb)
        printf("\"error_rate\":%s,", s ? cli_fmt_double(d, s->error_rate) : "null");
    else if (scalable)
        printf("\"error_rate\":%s,", cli_fmt_double(d, sc->error_rate));
    else if (in->capacity)
        printf("\"error_rate\":%s,",
               cli_fmt_double(d, bg_sizing_fp_rate(in->variant, in->bits, in->capacity,
                                                   in->hashes)));
    else
        printf("\"error_rate\":null,");
    if (s) {
        printf("\"bytes\":%llu,\"bits_set\":%llu,", (unsigned long long)s->bytes,
               (unsigned long long)s->bits_set);
        printf("\"fill_ratio\":%s,", cli_fmt_double(d, s->fill_ratio));
        printf("\"estimated_items\":%s,", cli_fmt_double(d, s->estimated_items));
        printf("\"estimated_fp_rate\":%s,", cli_fmt_double(d, s->estimated_fp_rate));
        if (in->variant == BG_VARIANT_COUNTING)
            printf("\"saturated\":%llu,", (unsigned long long)s->saturated);
    } else {
        printf("\"bytes\":null,\"bits_set\":null,\"fill_ratio\":null,"
               "\"estimated_items\":null,\"estimated_fp_rate\":null,");
        if (in->variant == BG_VARIANT_COUNTING)
            printf("\"saturated\":null,");
    }
    if (rb)
        print_rb_json(in, r);
    else if (scalable) {
        /* The layers' statistics need the filter; a damaged file has only
         * its header's count. */
        cli_print_scaling_json(stdout, sc);
        printf(",\"layer_count\":%u,\"layers\":", r ? r->nlayers : in->layers);
        if (r) {
            putchar('[');
            for (uint32_t i = 0; i < r->nlayers; i++) {
                if (i)
                    putchar(',');
                print_layer_json(&r->layers[i], i);
            }
            printf("],");
        } else {
            printf("null,");
        }
    }
    printf("\"checksum\":\"0x%016llx\",\"checksum_status\":\"%s\"}\n",
           (unsigned long long)in->checksum, checksum_word(ck));
}

/* The scalable part of the text: growth, then one line per layer (r: the
 * statistics, NULL for a damaged file). */
static void print_scaling_text(const bg_filter_scaling *sc, const bg_file_info *in,
                               const report *r)
{
    char cap[32];
    printf("layer variant:     %s\n", bg_variant_name(sc->layer_variant));
    if (sc->nonscaling) {
        printf("scaling:           none (--nonscaling): one layer; adding a new key when it "
               "is full fails\n");
    } else {
        cli_fmt_bytes(cap, sizeof cap, sc->max_bytes);
        printf("scaling:           capacity x%u and error rate x%g per layer; at most %u "
               "layers and %llu bytes (%s)\n",
               sc->expansion, sc->tightening, sc->max_layers, (unsigned long long)sc->max_bytes,
               cap);
        /* The schedule (filter.h SCALABLE): layer 0 gets p s, layer i >= 1
         * p (1 - s) (1 - t) t^(i-1); s = 1 - t makes it p (1 - t) t^i. */
        if (sc->first_share == 1.0 - sc->tightening)
            printf("first share:       %g (layer 0 at p x %g, 1 - tightening: the default)\n",
                   sc->first_share, sc->first_share);
        else
            printf("first share:       %g (layer 0 at p x %g, layer i >= 1 at p x %g x %g^(i-1))"
                   "\n",
                   sc->first_share, sc->first_share,
                   (1.0 - sc->first_share) * (1.0 - sc->tightening), sc->tightening);
        if (sc->blocked_from)
            printf("blocked from:      layer %u (layers %u and up are blocked, those below %s)\n",
                   sc->blocked_from, sc->blocked_from, bg_variant_name(sc->layer_variant));
        else
            printf("blocked from:      none (every layer is %s)\n",
                   bg_variant_name(sc->layer_variant));
    }
    if (!r) {
        printf("error rate (p):    %g for all layers together (asked)\n", sc->error_rate);
        printf("layers:            %u\n", in->layers);
        return;
    }
    printf("error rate (p):    %g for all layers together (asked); %.6g at the layers' "
           "capacities now\n",
           sc->error_rate, r->s.error_rate);
    printf("layers:            %u\n", r->nlayers);
    printf("%5s  %-8s %14s %14s %14s %3s %12s  %13s  %8s  %11s\n", "layer", "variant",
           "capacity", "items", "m (bits)", "k", "bytes", "p at capacity", "fill", "est. p now");
    for (uint32_t i = 0; i < r->nlayers; i++) {
        const bg_filter_stats *l = &r->layers[i];
        printf("%5u  %-8s %14llu %14llu %14llu %3u %12llu  %13.6g  %8.6f  %11.6g\n", i,
               bg_variant_name(l->variant), (unsigned long long)l->capacity,
               (unsigned long long)l->items, (unsigned long long)l->bits, l->hashes,
               (unsigned long long)l->bytes, l->error_rate, l->fill_ratio, l->estimated_fp_rate);
    }
    const bg_filter_stats *t = &r->s;
    printf("%5s  %-8s %14llu %14llu %14llu %3s %12llu  %13.6g  %8.6f  %11.6g\n", "total", "",
           (unsigned long long)t->capacity, (unsigned long long)t->items,
           (unsigned long long)t->bits, "", (unsigned long long)t->bytes, t->error_rate,
           t->fill_ratio, t->estimated_fp_rate);
}

static void print_text(const char *path, const bg_file_info *in, const report *r,
                       bg_checksum_state ck)
{
    char size[32];
    const bg_filter_stats *s = r ? &r->s : NULL;
    bool counting = in->variant == BG_VARIANT_COUNTING;
    bool rb = in->variant == BG_VARIANT_REDISBLOOM;
    bool scalable = in->variant == BG_VARIANT_SCALABLE || rb;
    const char *parts = rb ? "links" : "layers";
    const char *vname = bg_variant_name(in->variant);
    cli_fmt_bytes(size, sizeof size, in->file_bytes);
    printf("file:              %s\n", path);
    printf("file size:         %llu bytes (%s)\n", (unsigned long long)in->file_bytes, size);
    printf("format version:    %u\n", in->version);
    printf("header:            %u bytes\n", in->header_bytes);
    printf("variant:           %s\n", vname ? vname : "unknown");
    printf("hash:              %s (id %u)\n", hash_name(in->hash_id), in->hash_id);
    printf("seed:              %llu (0x%llx)\n", (unsigned long long)in->seed,
           (unsigned long long)in->seed);
    if (scalable) {
        /* Totals over the layers; the table below has each one. */
        uint64_t bits = s ? s->bits : in->bits;
        uint64_t capacity = s ? s->capacity : in->capacity;
        uint64_t items = s ? s->items : in->items;
        printf("bits (m):          %llu (all %s)\n", (unsigned long long)bits, parts);
        if (s)
            printf("hashes (k):        %u (the newest %s)\n", s->hashes, rb ? "link" : "layer");
        printf("capacity (n):      %llu (all %s)\n", (unsigned long long)capacity, parts);
        printf("items:             %llu\n", (unsigned long long)items);
    } else {
        if (counting)
            printf("counters (m):      %llu (4 bits each)\n", (unsigned long long)in->bits);
        else
            printf("bits (m):          %llu\n", (unsigned long long)in->bits);
        printf("hashes (k):        %u\n", in->hashes);
        if (in->capacity)
            printf("capacity (n):      %llu\n", (unsigned long long)in->capacity);
        else
            printf("capacity (n):      0 (sized by m and k)\n");
        if (in->capacity)
            printf("error rate (p):    %.6g at capacity (the model's)\n",
                   bg_sizing_fp_rate(in->variant, in->bits, in->capacity, in->hashes));
        printf("items:             %llu\n", (unsigned long long)in->items);
    }
    cli_fmt_bytes(size, sizeof size, in->payload_bytes);
    printf("payload:           %llu bytes (%s) at offset %llu\n",
           (unsigned long long)in->payload_bytes, size, (unsigned long long)in->payload_offset);
    if (s) {
        cli_fmt_bytes(size, sizeof size, s->bytes);
        printf("bytes:             %llu (%s, the %s in memory)\n", (unsigned long long)s->bytes,
               size, counting ? "counters" : rb ? "links' bit arrays" : scalable ? "layers' bit arrays" : "bit array");
        if (counting) {
            printf("counters set:      %llu (non-zero)\n", (unsigned long long)s->bits_set);
            printf("saturated:         %llu (counters at %u: they never go down)\n",
                   (unsigned long long)s->saturated, (unsigned)BG_COUNTER_MAX);
        } else {
            printf("bits set:          %llu\n", (unsigned long long)s->bits_set);
        }
        printf("fill ratio:        %.6f\n", s->fill_ratio);
        printf("estimated items:   %.0f\n", s->estimated_items);
        printf("estimated p now:   %.6g\n", s->estimated_fp_rate);
    }
    const bg_filter_scaling *sc = scaling_of(in, r);
    if (rb)
        print_rb_text(in, r);
    else if (sc)
        print_scaling_text(sc, in, r);
    if (ck == BG_CHECKSUM_MISMATCH)
        printf("checksum:          MISMATCH (stored 0x%016llx): the file is damaged\n",
               (unsigned long long)in->checksum);
    else if (ck == BG_CHECKSUM_OK)
        printf("checksum:          ok (0x%016llx)\n", (unsigned long long)in->checksum);
    else
        printf("checksum:          not verified (--no-verify; stored 0x%016llx)\n",
               (unsigned long long)in->checksum);
}

static int run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"json", no_argument, NULL, 'j'},
        {"no-verify", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bool json = false;
    unsigned flags = 0;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'V':
            flags |= BG_FILE_NO_VERIFY;
            break;
        case 'h':
            return cli_help(&cli_cmd_info);
        default:
            return cli_bad_option(&cli_cmd_info, c, argv, longs);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_info, "no FILE given");
    const char *path = argv[optind++];
    if (optind < argc)
        return cli_usage_error(&cli_cmd_info, "unexpected argument '%s'", argv[optind]);
    if (cli_is_url(path))
        return cli_remote_info(path, json);

    bg_file_info in;
    bg_filter *f;
    int rc = bg_filter_map(&f, path, flags);
    if (rc == BG_ECHECKSUM) {
        /* Damaged: the header is still worth showing. */
        rc = bg_file_inspect(path, 0, &in);
        if (rc != BG_ECHECKSUM && rc != BG_OK) {
            cli_file_error(path, "cannot read", rc, errno);
            return CLI_EXIT_ERROR;
        }
        if (json)
            print_json(path, &in, NULL, rc == BG_OK ? BG_CHECKSUM_OK : BG_CHECKSUM_MISMATCH);
        else
            print_text(path, &in, NULL, rc == BG_OK ? BG_CHECKSUM_OK : BG_CHECKSUM_MISMATCH);
        if (cli_stdout_close() != 0)
            return CLI_EXIT_ERROR;
        cli_file_error(path, NULL, BG_ECHECKSUM, 0);
        return CLI_EXIT_ERROR;
    }
    if (rc != BG_OK) {
        cli_file_error(path, "cannot open", rc, errno);
        return CLI_EXIT_ERROR;
    }
    /* The header as stored (format version, offsets, stored checksum):
     * without verifying again, the mapping above did. */
    rc = bg_file_inspect(path, BG_FILE_NO_VERIFY, &in);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot read", rc, errno);
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    static report r; /* 64 layers' statistics: not on the stack */
    if (gather(f, path, &r) != 0) {
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    bg_filter_free(f);
    const bg_filter_stats *s = &r.s;
    /* A scalable file's header sums up its layers: compare the fields that
     * say what the filter is, not how big it has grown. */
    bool same = in.seed == s->seed && in.variant == s->variant;
    if (in.variant != BG_VARIANT_SCALABLE)
        same = same && in.bits == s->bits && in.hashes == s->hashes;
    if (!same) {
        cli_error("%s: the file was replaced while being read; try again", path);
        return CLI_EXIT_ERROR;
    }
    bg_checksum_state ck = (flags & BG_FILE_NO_VERIFY) ? BG_CHECKSUM_SKIPPED : BG_CHECKSUM_OK;
    if (json)
        print_json(path, &in, &r, ck);
    else
        print_text(path, &in, &r, ck);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

const cli_command cli_cmd_info = {
    .name = "info",
    .summary = "show a filter file's parameters, fill and checksum status",
    .usage = "bloomgate info [--json] [--no-verify] FILE|URL\n",
    .help =
        "Prints every parameter of the filter in FILE (format version, variant,\n"
        "hash, seed, m, k, capacity, items, payload offset and size), the file's\n"
        "size, and what the bit array says now: bits set, fill ratio, estimated\n"
        "number of keys and estimated current false-positive rate. A counting\n"
        "filter also shows its saturated counters; a scalable one its growth\n"
        "parameters (first share of p, first blocked layer included) and a table of\n"
        "its layers (variant, capacity, items, m, k, bytes, p at capacity, fill,\n"
        "estimated p now) with the totals; a RedisBloom chain its\n"
        "options, growth and a table of its links' fields (entries, size, bits,\n"
        "bytes, hashes, n2, error, bits per entry) with their fill. Verifies the\n"
        "checksum: a damaged file still has its header printed, with\n"
        "'checksum: MISMATCH', and the exit status is 2.\n"
        "\n"
        "URL, redis://[:PASSWORD@]HOST[:PORT]/NAME[?backend=module], names a remote\n"
        "filter (docs/CLI.md, 'Remote filters'): its parameters and statistics\n"
        "come from the server (bitmap: m, k, seed, capacity, items, bits set, fill,\n"
        "estimates and generation; module: BF.INFO's capacity, items, size and\n"
        "layers); in JSON, \"url\" and \"name\" instead of \"file\".\n"
        "\n"
        "      --json        one JSON object on stdout (a scalable filter's layers\n"
        "                    in a \"layers\" array)\n"
        "      --no-verify   do not verify the checksum\n"
        "  -h, --help        this help\n",
    .run = run,
};
