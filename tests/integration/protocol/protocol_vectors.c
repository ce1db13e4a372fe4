/* SPDX-License-Identifier: BSD-3-Clause */
/* What the library answers for docs/PROTOCOL.md's test vectors, for
 * test_protocol.py to compare with the document. Public API only: a client
 * written from the document must agree with this.
 *
 *   protocol_vectors hash <seed> <key hex>
 *       h1 and h2 of bg_hash_key, as 0x%016x each
 *   protocol_vectors probes <m> <k> <seed> <key hex>
 *       the key's k positions in probe order (bg_layout_positions)
 *   protocol_vectors positions <m> <k> <seed> <key hex>
 *       the bits a standard filter (m, k, seed) sets when the key is added
 *       to it empty, ascending (a key's positions may repeat: those are
 *       printed once)
 *   protocol_vectors bytes <m> <k> <seed> <key hex>...
 *       the payload (ceil(m / 8) bytes, hex) of a standard filter (m, k,
 *       seed) after adding the keys in order
 *   protocol_vectors shard <shards> <seed> <key hex>
 *       bg_remote_shard_of of the key's hash
 *
 * "-" is the empty key. Exit status 0, or 1 with a message on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/file.h>
#include <bloomgate/filter.h>
#include <bloomgate/hash.h>
#include <bloomgate/layout.h>
#include <bloomgate/remote.h>

/* The payload offset field of a version-1 image (docs/FORMAT.md). */
#define PAYLOAD_OFFSET_FIELD 56

static int fail(const char *what, int rc)
{
    fprintf(stderr, "protocol_vectors: %s: %s\n", what, rc ? bg_err_name(rc) : "bad argument");
    return 1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

/* Decodes hex (or "-", the empty key) into a malloc'd buffer. */
static unsigned char *parse_key(const char *hex, size_t *len)
{
    size_t n = strcmp(hex, "-") == 0 ? 0 : strlen(hex);
    if (n % 2)
        return NULL;
    unsigned char *key = malloc(n / 2 + 1);
    if (!key)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            free(key);
            return NULL;
        }
        key[i] = (unsigned char)v;
    }
    *len = n / 2;
    return key;
}

/* A standard filter of exactly m bits and k hashes with the seed. */
static int new_filter(bg_filter **f, uint64_t m, uint64_t k, uint64_t seed)
{
    if (k == 0 || k > UINT32_MAX)
        return BG_EINVAL;
    bg_filter_options o = {.variant = BG_VARIANT_STANDARD, .bits = m, .hashes = (uint32_t)k,
                           .seed = seed, .max_bytes = m / 8 + 64};
    return bg_filter_new(f, &o);
}

/* The payload's offset in f's image (docs/FORMAT.md). */
static int payload_offset(const bg_filter *f, uint64_t *out)
{
    unsigned char off[8];
    int rc = bg_filter_encode_range(f, PAYLOAD_OFFSET_FIELD, off, sizeof off);
    if (rc != BG_OK)
        return rc;
    *out = 0;
    for (int i = 7; i >= 0; i--)
        *out = *out << 8 | off[i];
    return BG_OK;
}

/* Prints f's payload as hex, or (positions) the numbers of its set bits,
 * reading it a chunk at a time: a filter of 2^32 bits is 512 MiB, mostly
 * untouched zero pages that a copy would make real. */
static int print_payload(const bg_filter *f, int positions)
{
    enum { CHUNK = 1 << 20 };
    static unsigned char buf[CHUNK];
    uint64_t o = 0, bytes = (bg_filter_bits(f) + 7) / 8;
    int rc = payload_offset(f, &o);
    const char *sep = "";
    for (uint64_t at = 0; rc == BG_OK && at < bytes; at += CHUNK) {
        size_t n = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
        if ((rc = bg_filter_encode_range(f, o + at, buf, n)) != BG_OK)
            break;
        for (size_t i = 0; i < n; i++) {
            if (!positions) {
                printf("%02x", buf[i]);
                continue;
            }
            for (unsigned b = 0; buf[i] && b < 8; b++) {
                if (buf[i] & (0x80u >> b)) {
                    printf("%s%" PRIu64, sep, (at + i) * 8 + b);
                    sep = " ";
                }
            }
        }
    }
    printf("\n");
    return rc;
}

static int cmd_hash(int argc, char **argv)
{
    uint64_t seed;
    size_t len;
    unsigned char *key;
    if (argc != 2 || parse_u64(argv[0], &seed) != 0 || !(key = parse_key(argv[1], &len)))
        return fail("hash <seed> <key hex>", 0);
    bg_hash h;
    int rc = bg_hash_key(key, len, seed, &h);
    free(key);
    if (rc != BG_OK)
        return fail("bg_hash_key", rc);
    printf("0x%016" PRIx64 " 0x%016" PRIx64 "\n", h.h1, h.h2);
    return 0;
}

static int cmd_filter(int argc, char **argv, int positions)
{
    uint64_t m, k, seed;
    if (argc < 4 || (positions && argc != 4) || parse_u64(argv[0], &m) != 0 ||
        parse_u64(argv[1], &k) != 0 || parse_u64(argv[2], &seed) != 0)
        return fail(positions ? "positions <m> <k> <seed> <key hex>"
                              : "bytes <m> <k> <seed> <key hex>...", 0);
    bg_filter *f;
    int rc = new_filter(&f, m, k, seed);
    if (rc != BG_OK)
        return fail("bg_filter_new", rc);
    for (int i = 3; i < argc; i++) {
        size_t len;
        unsigned char *key = parse_key(argv[i], &len);
        if (!key) {
            bg_filter_free(f);
            return fail("a key is not hex", 0);
        }
        rc = bg_filter_add(f, key, len);
        free(key);
        if (rc < 0) {
            bg_filter_free(f);
            return fail("bg_filter_add", rc);
        }
    }
    rc = print_payload(f, positions);
    bg_filter_free(f);
    return rc == BG_OK ? 0 : fail("the payload", rc);
}

static int cmd_probes(int argc, char **argv)
{
    uint64_t m, k, seed, pos[BG_MAX_K];
    size_t len;
    unsigned char *key;
    if (argc != 4 || parse_u64(argv[0], &m) != 0 || parse_u64(argv[1], &k) != 0 ||
        k > BG_MAX_K || parse_u64(argv[2], &seed) != 0 || !(key = parse_key(argv[3], &len)))
        return fail("probes <m> <k> <seed> <key hex>", 0);
    bg_hash h;
    int rc = bg_hash_key(key, len, seed, &h);
    free(key);
    if (rc == BG_OK)
        rc = bg_layout_positions(h, m, (uint32_t)k, pos);
    if (rc != BG_OK)
        return fail("bg_layout_positions", rc);
    for (uint64_t j = 0; j < k; j++)
        printf("%s%" PRIu64, j ? " " : "", pos[j]);
    printf("\n");
    return 0;
}

static int cmd_shard(int argc, char **argv)
{
    uint64_t shards, seed;
    size_t len;
    unsigned char *key;
    if (argc != 3 || parse_u64(argv[0], &shards) != 0 || shards == 0 || shards > UINT32_MAX ||
        parse_u64(argv[1], &seed) != 0 || !(key = parse_key(argv[2], &len)))
        return fail("shard <shards> <seed> <key hex>", 0);
    bg_hash h;
    int rc = bg_hash_key(key, len, seed, &h);
    free(key);
    if (rc != BG_OK)
        return fail("bg_hash_key", rc);
    printf("%" PRIu32 "\n", bg_remote_shard_of(h, (uint32_t)shards));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "hash") == 0)
        return cmd_hash(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "probes") == 0)
        return cmd_probes(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "positions") == 0)
        return cmd_filter(argc - 2, argv + 2, 1);
    if (argc >= 2 && strcmp(argv[1], "bytes") == 0)
        return cmd_filter(argc - 2, argv + 2, 0);
    if (argc >= 2 && strcmp(argv[1], "shard") == 0)
        return cmd_shard(argc - 2, argv + 2);
    return fail("usage: protocol_vectors hash|probes|positions|bytes|shard ...", 0);
}
