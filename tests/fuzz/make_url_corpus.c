/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_cli_url into a directory:
 *
 *   make_url_corpus DIR
 *
 * URLs of every form docs/CLI.md names, and broken ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const seeds[] = {
    "redis://127.0.0.1:6379/users",
    "redis://localhost/users",
    "redis://:s3cr%2Ft@example.com:6380/f?backend=module",
    "redis://alice:pa%40ss@[::1]:7000/name%20with%20space?timeout=250",
    "redis://alice:raw/slash@host/f",
    "redis+cluster://10.0.0.1:7000/big?shards=16",
    "redis+cluster://10.0.0.1:7000/big?shards=16&backend=module",
    "redis+cluster://h1:7000,[::1]:7001,h3/big?shards=4",
    "redis+cluster://:pw@h1,h2:7002/x", "redis://h1:1,h2:2/x", "redis+cluster://h:1,/x",
    "redis://h/f?backend=bitmap&timeout=0&shards=2",
    "redis://h:0/f", "redis://h:65536/f", "redis://h:/f", "redis://h/",
    "redis://h", "redis:///f", "redis://[::1/f", "redis://h/f?", "redis://h/f?x=1",
    "redis://h/f%0", "redis://h/f%00", "redis://h/f%zz", "redis://u@h/f",
    "redis://h/f?shards=1", "redis://h/f?shards=99999999999", "redis://h/f?timeout=-1",
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_url_corpus DIR\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%03zu", argv[1], i);
        FILE *f = fopen(path, "wb");
        size_t len = strlen(seeds[i]);
        if (!f || fwrite(seeds[i], 1, len, f) != len || fclose(f) != 0) {
            perror(path);
            return 1;
        }
    }
    return 0;
}
