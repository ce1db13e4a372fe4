/* SPDX-License-Identifier: BSD-3-Clause */
/* The names of the store kinds (store.h), apart from the stores
 * themselves: the flag parser (config.c) needs them, and so does its
 * fuzzer, which links no database. */
#include <strings.h>

#include "store.h"

int store_kind_parse(const char *name, store_kind *out)
{
    if (!name || !out)
        return -1;
    if (strcasecmp(name, "sqlite") == 0 || strcasecmp(name, "sqlite3") == 0)
        *out = STORE_SQLITE;
    else if (strcasecmp(name, "postgres") == 0 || strcasecmp(name, "postgresql") == 0)
        *out = STORE_POSTGRES;
    else if (strcasecmp(name, "mariadb") == 0 || strcasecmp(name, "mysql") == 0)
        *out = STORE_MARIADB;
    else
        return -1;
    return 0;
}

const char *store_kind_name(store_kind k)
{
    switch (k) {
    case STORE_SQLITE:
        return "sqlite";
    case STORE_POSTGRES:
        return "postgres";
    case STORE_MARIADB:
        return "mariadb";
    }
    return "unknown";
}
