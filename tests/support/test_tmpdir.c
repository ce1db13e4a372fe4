/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_tmpdir.h. */
#include "test_tmpdir.h"

void tu_tmpdir_make(tu_tmpdir *d, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(d->path, sizeof d->path, "%s/bg-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    assert_non_null(mkdtemp(d->path));
}

const char *tu_tmp_file(const tu_tmpdir *d, const char *name)
{
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 512, "%s/%s", d->path, name);
    return p;
}

int tu_dir_entries(const tu_tmpdir *d)
{
    DIR *dir = opendir(d->path);
    assert_non_null(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dir);
    return n;
}

void tu_tmpdir_remove(tu_tmpdir *d)
{
    DIR *dir = opendir(d->path);
    assert_non_null(dir);
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        const char *p = tu_tmp_file(d, e->d_name);
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && unlink(p) != 0)
            assert_int_equal(rmdir(p), 0);
    }
    closedir(dir);
    assert_int_equal(rmdir(d->path), 0);
}
