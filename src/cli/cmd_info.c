/* bloomgate info: everything about a filter file.
 *
 * The file is mapped (verifying the checksum unless --no-verify) for the
 * statistics, which scan the bit array; the header fields come from
 * bg_file_inspect. A file whose checksum does not match still has its header
 * printed, with "checksum: MISMATCH", and the exit status is 2. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

enum checksum_state { CK_OK, CK_MISMATCH, CK_UNVERIFIED };

static const char *hash_name(uint32_t id)
{
    return id == BG_FILE_HASH_XXH3_128 ? "XXH3-128" : "unknown";
}

static const char *checksum_word(enum checksum_state ck)
{
    return ck == CK_OK ? "ok" : ck == CK_MISMATCH ? "mismatch" : "not verified";
}

static void print_json(const char *path, const bg_file_info *in, const bg_filter_stats *s,
                       enum checksum_state ck)
{
    char d[32];
    const char *vname = bg_variant_name(in->variant);
    printf("{\"file\":");
    cli_json_string(stdout, path);
    printf(",\"file_bytes\":%llu,\"version\":%u,\"header_bytes\":%u,",
           (unsigned long long)in->file_bytes, in->version, in->header_bytes);
    printf("\"variant\":\"%s\",\"hash\":\"%s\",\"hash_id\":%u,\"seed\":%llu,",
           vname ? vname : "unknown", hash_name(in->hash_id), in->hash_id,
           (unsigned long long)in->seed);
    printf("\"bits\":%llu,\"hashes\":%u,\"capacity\":%llu,\"items\":%llu,",
           (unsigned long long)in->bits, in->hashes, (unsigned long long)in->capacity,
           (unsigned long long)in->items);
    printf("\"payload_offset\":%llu,\"payload_bytes\":%llu,",
           (unsigned long long)in->payload_offset, (unsigned long long)in->payload_bytes);
    if (in->capacity)
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
    } else {
        printf("\"bytes\":null,\"bits_set\":null,\"fill_ratio\":null,"
               "\"estimated_items\":null,\"estimated_fp_rate\":null,");
    }
    printf("\"checksum\":\"0x%016llx\",\"checksum_status\":\"%s\"}\n",
           (unsigned long long)in->checksum, checksum_word(ck));
}

static void print_text(const char *path, const bg_file_info *in, const bg_filter_stats *s,
                       enum checksum_state ck)
{
    char size[32];
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
    cli_fmt_bytes(size, sizeof size, in->payload_bytes);
    printf("payload:           %llu bytes (%s) at offset %llu\n",
           (unsigned long long)in->payload_bytes, size, (unsigned long long)in->payload_offset);
    if (s) {
        cli_fmt_bytes(size, sizeof size, s->bytes);
        printf("bytes:             %llu (%s, the bit array in memory)\n",
               (unsigned long long)s->bytes, size);
        printf("bits set:          %llu\n", (unsigned long long)s->bits_set);
        printf("fill ratio:        %.6f\n", s->fill_ratio);
        printf("estimated items:   %.0f\n", s->estimated_items);
        printf("estimated p now:   %.6g\n", s->estimated_fp_rate);
    }
    if (ck == CK_MISMATCH)
        printf("checksum:          MISMATCH (stored 0x%016llx): the file is damaged\n",
               (unsigned long long)in->checksum);
    else if (ck == CK_OK)
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
            return cli_bad_option(&cli_cmd_info, c, argv);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_info, "no FILE given");
    const char *path = argv[optind++];
    if (optind < argc)
        return cli_usage_error(&cli_cmd_info, "unexpected argument '%s'", argv[optind]);

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
            print_json(path, &in, NULL, rc == BG_OK ? CK_OK : CK_MISMATCH);
        else
            print_text(path, &in, NULL, rc == BG_OK ? CK_OK : CK_MISMATCH);
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
    bg_filter_stats s;
    bg_filter_stats_get(f, &s);
    bg_filter_free(f);
    if (in.bits != s.bits || in.hashes != s.hashes || in.seed != s.seed ||
        in.variant != s.variant) {
        cli_error("%s: the file was replaced while being read; try again", path);
        return CLI_EXIT_ERROR;
    }
    enum checksum_state ck = (flags & BG_FILE_NO_VERIFY) ? CK_UNVERIFIED : CK_OK;
    if (json)
        print_json(path, &in, &s, ck);
    else
        print_text(path, &in, &s, ck);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

const cli_command cli_cmd_info = {
    .name = "info",
    .summary = "show a filter file's parameters, fill and checksum status",
    .usage = "bloomgate info [--json] [--no-verify] FILE\n",
    .help =
        "Prints every parameter of the filter in FILE (format version, variant,\n"
        "hash, seed, m, k, capacity, items, payload offset and size), the file's\n"
        "size, and what the bit array says now: bits set, fill ratio, estimated\n"
        "number of keys and estimated current false-positive rate. Verifies the\n"
        "checksum: a damaged file still has its header printed, with\n"
        "'checksum: MISMATCH', and the exit status is 2.\n"
        "\n"
        "      --json        one JSON object on stdout\n"
        "      --no-verify   do not verify the checksum\n"
        "  -h, --help        this help\n",
    .run = run,
};
