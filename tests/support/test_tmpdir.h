/* SPDX-License-Identifier: BSD-3-Clause */
/* A scratch directory for tests that write files: made under $TMPDIR (or
 * /tmp), removed with everything in it (test_tmpdir.c). */
#ifndef BG_TEST_TMPDIR_H
#define BG_TEST_TMPDIR_H

#include "test_util.h"

#include <dirent.h>
#include <unistd.h>

typedef struct tu_tmpdir {
    char path[256];
} tu_tmpdir;

/* Makes "$TMPDIR/bg-TAG-XXXXXX". */
void tu_tmpdir_make(tu_tmpdir *d, const char *tag);

/* "DIR/NAME", in one of four static buffers (so a call may use a few). */
const char *tu_tmp_file(const tu_tmpdir *d, const char *name);

/* Entries in the directory, other than . and .. */
int tu_dir_entries(const tu_tmpdir *d);

/* Removes the directory's files and empty subdirectories, then it. */
void tu_tmpdir_remove(tu_tmpdir *d);

#endif
