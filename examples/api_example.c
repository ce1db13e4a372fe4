/* SPDX-License-Identifier: BSD-3-Clause */
/* The README's API example: size a filter for a million keys at 1%, add
 * some, check some. Built in CI so that the README never lies. */
#include <stdio.h>
#include <string.h>

#include <bloomgate/filter.h>

int main(void)
{
    bg_filter *f;
    bg_filter_options opts = {.capacity = 1000000, .error_rate = 0.01};
    int rc = bg_filter_new(&f, &opts);
    if (rc != BG_OK) {
        fprintf(stderr, "bg_filter_new: %s\n", bg_strerror(rc));
        return 1;
    }

    const char *known[] = {"user:1001", "user:1002", "user:1003"};
    for (size_t i = 0; i < 3; i++)
        bg_filter_add(f, known[i], strlen(known[i]));

    const char *asked[] = {"user:1002", "user:9999"};
    for (size_t i = 0; i < 2; i++) {
        int hit = bg_filter_contains(f, asked[i], strlen(asked[i]));
        printf("%s: %s\n", asked[i], hit ? "maybe present" : "definitely absent");
    }

    bg_filter_stats st;
    bg_filter_stats_get(f, &st);
    printf("%s filter: %llu bits, k = %u, %.2f bits per key\n", bg_variant_name(st.variant),
           (unsigned long long)st.bits, st.hashes, (double)st.bits / (double)st.capacity);
    bg_filter_free(f);
    return 0;
}
