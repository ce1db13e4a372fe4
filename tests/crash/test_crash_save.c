/* SPDX-License-Identifier: BSD-3-Clause */
/* Crash safety of bg_filter_save (<bloomgate/file.h>, CRASH SAFETY): a
 * writer killed with SIGKILL at any moment of a save leaves the target as
 * the complete old filter or the complete new one, and it loads.
 *
 * HOW IT WORKS
 * Two filters A and B of one shape (a large bit array, so that a save takes
 * long enough to be cut: BG_CRASH_MIB MiB, default 64) hold different key
 * sets. The target starts as A. Each round forks a child that saves the
 * other filter over the target once; the parent waits for the child's "about
 * to save" byte on a pipe, sleeps a random time in [0, window], SIGKILLs it
 * and reaps it. Then the target must
 *   - pass bg_file_inspect and bg_filter_load with the checksum verified,
 *   - be byte for byte encode(A) or encode(B), i.e. the old or the new image
 *     (a full memcmp of the mapped file),
 *   - and the loaded filter must hold every key of that image's set;
 * if the child reported that its save returned BG_OK before the kill, it
 * must be the new one. The directory may hold nothing but the target and
 * temporaries named ".<target>.<random>.tmp", which are removed each round.
 *
 * TIMING
 * The window is 1.2 times the length of a save: measured once in the
 * parent, then a moving average over the saves children complete. Rounds
 * end "new" (the kill came after the rename) or "old"; an old round that
 * left a temporary file is a kill that landed in the middle of writing.
 * The test needs all three: old, new and mid-save; while one is missing
 * after BG_CRASH_ROUNDS rounds (default 50) it widens or narrows the window
 * and goes on, up to three times as many. The random delays come from
 * SplitMix64 with seed BG_CRASH_SEED (printed; the scheduler still adds its
 * own noise).
 *
 * Two more tests: saving a read-only mapped filter (to another path, and
 * over the very file it maps), and saving while another thread adds, whose
 * files must load and lie between the filter before and after the save.
 *
 * Each test works in a fresh directory under $TMPDIR (or /tmp), removed at
 * the end (kept with BG_CRASH_KEEP=1). */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (UINT64_C(1) << 20)
#define BATCH 4096u

enum { SET_A = 11, SET_B = 12, SET_MAPPED = 13, SET_PRELOADED = 14, SET_CONCURRENT = 15 };

/* ---- scratch directories ------------------------------------------------ */

static void path_join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    TU_TRUE(n > 0 && (size_t)n < cap);
}

/* Removes every file in `dir`, then `dir`; 0 on success. */
static int dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[4096];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || unlink(p) != 0)
            rc = -1;
    }
    closedir(d);
    return rmdir(dir) == 0 ? rc : -1;
}

/* Each test gets a fresh directory as its state; it is removed afterwards,
 * whether the test passed or not, unless BG_CRASH_KEEP=1 (to look at the
 * files a failure left). */
static int dir_setup(void **state)
{
    char *dir = malloc(4096);
    if (dir == NULL)
        return -1;
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, 4096, "%s/bg-crash.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (n <= 0 || n >= 4096 || mkdtemp(dir) == NULL) {
        free(dir);
        return -1;
    }
    *state = dir;
    return 0;
}

static int dir_teardown(void **state)
{
    char *dir = *state;
    int rc = 0;
    if (tu_env_long("BG_CRASH_KEEP", 0))
        print_message("crash: kept %s\n", dir);
    else
        rc = dir_remove(dir);
    free(dir);
    return rc;
}

/* 1 if `name` is a temporary file of bg_filter_save for `target`:
 * ".<target>.<random>.tmp" with a non-empty random part. */
static int is_temp_of(const char *name, const char *target)
{
    size_t n = strlen(name), t = strlen(target);
    return n > t + 6 && name[0] == '.' && strncmp(name + 1, target, t) == 0 &&
           name[t + 1] == '.' && strcmp(name + n - 4, ".tmp") == 0 && n - 4 > t + 2;
}

/* Checks that `dir` holds each of names[0, count) and otherwise only their
 * temporaries; removes the temporaries and returns how many there were. */
static unsigned dir_check(const char *dir, const char *const *names, size_t count)
{
    unsigned temps = 0, found = 0;
    DIR *d = opendir(dir);
    TU_TRUE(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        int known = 0;
        for (size_t i = 0; i < count && !known; i++) {
            if (strcmp(name, names[i]) == 0) {
                found++;
                known = 1;
            } else if (is_temp_of(name, names[i])) {
                char p[4096];
                path_join(p, sizeof p, dir, name);
                TU_EQ_I(unlink(p), 0);
                temps++;
                known = 1;
            }
        }
        if (!known)
            TU_FAIL_("unexpected file \"%s\" in %s\n", name, dir);
    }
    closedir(d);
    TU_EQ_U(found, count);
    return temps;
}

/* ---- filters, keys and images ------------------------------------------ */

static bg_filter *filter_make(bg_variant v, uint64_t bits, uint32_t k, uint64_t seed)
{
    bg_filter *f;
    bg_filter_options o = {.variant = v, .bits = bits, .hashes = k, .seed = seed};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    return f;
}

static void keys_add(bg_filter *f, uint64_t set, uint64_t n)
{
    tu_batch b;
    tu_batch_init(&b, BATCH);
    for (uint64_t at = 0; at < n; at += BATCH) {
        size_t c = (size_t)(n - at < BATCH ? n - at : BATCH);
        tu_batch_fill(&b, 0, set, at, c);
        TU_TRUE(bg_filter_add_many(f, b.keys, b.lens, c, NULL) >= 0);
    }
    tu_batch_free(&b);
}

/* How many of keys [0, n) of `set` the filter reports maybe present. */
static uint64_t keys_present(const bg_filter *f, uint64_t set, uint64_t n)
{
    tu_batch b;
    tu_batch_init(&b, BATCH);
    uint64_t hits = 0;
    for (uint64_t at = 0; at < n; at += BATCH) {
        size_t c = (size_t)(n - at < BATCH ? n - at : BATCH);
        tu_batch_fill(&b, 0, set, at, c);
        int64_t h = bg_filter_contains_many(f, b.keys, b.lens, c, NULL);
        TU_TRUE(h >= 0);
        hits += (uint64_t)h;
    }
    tu_batch_free(&b);
    return hits;
}

typedef struct image {
    uint8_t *bytes;
    size_t len;
} image;

static image image_of(const bg_filter *f)
{
    uint64_t size;
    TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
    image im = {malloc((size_t)size), (size_t)size};
    TU_TRUE(im.bytes != NULL);
    size_t written;
    TU_EQ_I(bg_filter_encode(f, im.bytes, im.len, &written), BG_OK);
    TU_EQ_U(written, im.len);
    return im;
}

/* A file mapped read-only (the page cache, not a copy). */
typedef struct mapped {
    const uint8_t *bytes;
    size_t len;
} mapped;

static mapped file_map(const char *path)
{
    int fd = open(path, O_RDONLY);
    TU_TRUE(fd >= 0);
    struct stat st;
    TU_EQ_I(fstat(fd, &st), 0);
    mapped m = {NULL, (size_t)st.st_size};
    if (m.len > 0) {
        void *p = mmap(NULL, m.len, PROT_READ, MAP_SHARED, fd, 0);
        TU_TRUE(p != MAP_FAILED);
        m.bytes = p;
    }
    close(fd);
    return m;
}

static void file_unmap(mapped m)
{
    if (m.len > 0)
        munmap((void *)m.bytes, m.len);
}

/* Which of ims[0, n) the file at `path` equals byte for byte, or -1. */
static int file_which(const char *path, const image *ims, int n)
{
    mapped m = file_map(path);
    int which = -1;
    for (int i = 0; i < n && which < 0; i++)
        if (m.len == ims[i].len && memcmp(m.bytes, ims[i].bytes, m.len) == 0)
            which = i;
    file_unmap(m);
    return which;
}

/* ---- SIGKILL during saves ---------------------------------------------- */

/* What a child writes to the pipe after its save returned. */
typedef struct report {
    int32_t rc;
    double seconds;
} report;

static void read_exact(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        TU_TRUE(r > 0);
        p += r;
        n -= (size_t)r;
    }
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Forks a child that saves `f` over `path` once, kills it `delay` seconds
 * after it said it was about to save, and reaps it. Returns 1 and fills *r
 * if the save returned before the kill, else 0. */
static int save_and_kill(const bg_filter *f, const char *path, double delay, report *r)
{
    int p[2];
    TU_EQ_I(pipe(p), 0);
    pid_t pid = fork();
    TU_TRUE(pid >= 0);
    if (pid == 0) {
        /* The child: no cmocka here (its failure path longjmps). */
        close(p[0]);
        char go = 's';
        if (write(p[1], &go, 1) != 1)
            _exit(2);
        double t0 = tu_now();
        report mine = {bg_filter_save(f, path), 0};
        mine.seconds = tu_now() - t0;
        if (write(p[1], &mine, sizeof mine) != (ssize_t)sizeof mine)
            _exit(2);
        _exit(0);
    }
    close(p[1]);
    char go;
    read_exact(p[0], &go, 1);
    sleep_seconds(delay);
    TU_EQ_I(kill(pid, SIGKILL), 0);
    int status;
    TU_EQ_I(waitpid(pid, &status, 0), pid);
    /* The child is gone, so the pipe holds its whole report or nothing. */
    ssize_t n;
    do
        n = read(p[0], r, sizeof *r);
    while (n < 0 && errno == EINTR);
    close(p[0]);
    TU_TRUE(n == 0 || n == (ssize_t)sizeof *r);
    if (n == 0) {
        TU_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        return 0;
    }
    TU_TRUE((WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
            (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    return 1;
}

static void kill_during_save(void **state)
{
    const char *dir = *state;
    uint64_t mib = (uint64_t)tu_env_long("BG_CRASH_MIB", 64);
    long rounds = tu_env_long("BG_CRASH_ROUNDS", 50);
    uint64_t seed = (uint64_t)tu_env_long("BG_CRASH_SEED", 20241122);
    uint64_t nkeys = (uint64_t)tu_env_long("BG_CRASH_KEYS", 200000);
    uint64_t rng = seed;
    tu_ctx("kill during save, seed %" PRIu64, seed);

    char path[4096];
    const char *target = "filter.bgf";
    path_join(path, sizeof path, dir, target);

    /* A and B: one shape, different keys, so different images. */
    const uint64_t sets[2] = {SET_A, SET_B};
    bg_filter *fs[2];
    image ims[2];
    for (int i = 0; i < 2; i++) {
        fs[i] = filter_make(BG_VARIANT_BLOCKED, mib * MIB * 8, 7, 0x5eed);
        keys_add(fs[i], sets[i], nkeys);
        ims[i] = image_of(fs[i]);
    }
    TU_TRUE(ims[0].len == ims[1].len && memcmp(ims[0].bytes, ims[1].bytes, ims[0].len) != 0);

    /* One save of each, timed; the target starts as A. */
    double t0 = tu_now();
    TU_EQ_I(bg_filter_save(fs[1], path), BG_OK);
    TU_EQ_I(bg_filter_save(fs[0], path), BG_OK);
    double save_s = (tu_now() - t0) / 2;
    TU_EQ_I(file_which(path, ims, 2), 0);
    print_message("crash: seed %" PRIu64 ", %" PRIu64 " MiB, a save takes %.1f ms\n", seed,
                  mib, save_s * 1e3);

    int current = 0;
    double factor = 1.2, t_start = tu_now();
    unsigned old_n = 0, new_n = 0, mid_n = 0, temps_n = 0, completed_n = 0;
    long r;
    for (r = 0; r < 3 * rounds && (r < rounds || !old_n || !new_n || !mid_n); r++) {
        /* Widen the window while no kill came late enough to find the new
         * file, narrow it while none came early enough to cut a write. */
        if (r >= rounds / 2 && new_n == 0)
            factor *= 1.25;
        else if (r >= rounds / 2 && (old_n == 0 || mid_n == 0))
            factor *= 0.8;
        int next = 1 - current;
        double delay = factor * save_s * (double)(tu_next(&rng) >> 11) * 0x1p-53;
        report rep;
        int completed = save_and_kill(fs[next], path, delay, &rep);
        tu_ctx("kill during save, seed %" PRIu64 ", round %ld, delay %.2f ms%s", seed, r,
               delay * 1e3, completed ? ", save completed" : "");
        if (completed) {
            TU_EQ_I(rep.rc, BG_OK);
            completed_n++;
            /* Follow the saves as they really run in a child. */
            save_s = 0.7 * save_s + 0.3 * rep.seconds;
        }

        unsigned temps = dir_check(dir, &target, 1);
        temps_n += temps;

        bg_file_info info;
        TU_EQ_I(bg_file_inspect(path, 0, &info), BG_OK);
        TU_EQ_I(info.checksum_state, BG_CHECKSUM_OK);
        bg_filter *g = NULL;
        TU_EQ_I(bg_filter_load(&g, path, 0), BG_OK);
        int which = file_which(path, ims, 2);
        if (which < 0)
            TU_FAIL_("the target is neither the old nor the new image\n");
        if (completed)
            TU_EQ_I(which, next);
        TU_EQ_U(bg_filter_items(g), bg_filter_items(fs[which]));
        TU_EQ_U(keys_present(g, sets[which], nkeys), nkeys);
        bg_filter_free(g);

        if (which == next) {
            new_n++;
        } else {
            old_n++;
            mid_n += temps > 0;
        }
        current = which;
    }
    print_message("crash: %ld rounds in %.1f s: %u old (%u of them cut mid-write), %u new "
                  "(%u saves completed before the kill); %u temporary files left and removed\n",
                  r, tu_now() - t_start, old_n, mid_n, new_n, completed_n, temps_n);
    TU_TRUE(old_n > 0);
    TU_TRUE(new_n > 0);
    TU_TRUE(mid_n > 0);

    for (int i = 0; i < 2; i++) {
        bg_filter_free(fs[i]);
        free(ims[i].bytes);
    }
    dir_check(dir, &target, 1);
}

/* ---- saving a mapped filter -------------------------------------------- */

static void save_mapped(void **state)
{
    const char *dir = *state;
    const uint64_t nkeys = 100000;
    char path[4096], copy[4096];
    const char *names[] = {"mapped.bgf", "copy.bgf"};
    path_join(path, sizeof path, dir, names[0]);
    path_join(copy, sizeof copy, dir, names[1]);

    bg_filter *f = filter_make(BG_VARIANT_STANDARD, UINT64_C(1) << 26, 5, 77);
    keys_add(f, SET_MAPPED, nkeys);
    image im = image_of(f);
    TU_EQ_I(bg_filter_save(f, path), BG_OK);
    bg_filter_free(f);

    static const unsigned modes[] = {0, BG_FILE_NO_VERIFY};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        tu_ctx("save mapped, flags %u", modes[i]);
        bg_filter *mf = NULL;
        TU_EQ_I(bg_filter_map(&mf, path, modes[i]), BG_OK);
        TU_TRUE(bg_filter_read_only(mf));
        TU_EQ_I(bg_filter_add(mf, "x", 1), BG_EREADONLY);
        TU_EQ_I(bg_filter_clear(mf), BG_EREADONLY);
        TU_EQ_U(keys_present(mf, SET_MAPPED, nkeys), nkeys);

        /* To another path: the same image, and it loads. */
        TU_EQ_I(bg_filter_save(mf, copy), BG_OK);
        TU_EQ_I(file_which(copy, &im, 1), 0);
        bg_filter *g = NULL;
        TU_EQ_I(bg_filter_load(&g, copy, 0), BG_OK);
        TU_EQ_U(keys_present(g, SET_MAPPED, nkeys), nkeys);
        bg_filter_free(g);

        /* Over the file it maps: the mapping keeps the old file, so the
         * filter still answers, and the new file is the same image. */
        TU_EQ_I(bg_filter_save(mf, path), BG_OK);
        TU_EQ_U(keys_present(mf, SET_MAPPED, nkeys), nkeys);
        TU_EQ_I(file_which(path, &im, 1), 0);
        bg_filter_free(mf);
        TU_EQ_I(bg_filter_load(&g, path, 0), BG_OK);
        TU_EQ_U(keys_present(g, SET_MAPPED, nkeys), nkeys);
        bg_filter_free(g);

        TU_EQ_U(dir_check(dir, names, 2), 0); /* successful saves leave no temporary */
    }
    free(im.bytes);
}

/* ---- saving while another thread adds ---------------------------------- */

typedef struct adder {
    bg_filter *f;
    atomic_bool stop;
    _Atomic uint64_t added; /* keys of SET_CONCURRENT added so far */
    atomic_int failed;
} adder;

static void *adder_main(void *arg)
{
    adder *a = arg;
    uint8_t key[TU_DISTINCT_LEN];
    for (uint64_t i = 0; !atomic_load(&a->stop); i++) {
        size_t len = tu_key_distinct(SET_CONCURRENT, i, key);
        if (bg_filter_add(a->f, key, len) != BG_OK)
            atomic_store(&a->failed, 1);
        atomic_store(&a->added, i + 1);
    }
    return NULL;
}

static void save_during_adds(void **state)
{
    const char *dir = *state;
    enum { SAVES = 4 };
    const uint64_t preloaded = 100000;
    char paths[SAVES][4096];
    const char *names[SAVES] = {"s0.bgf", "s1.bgf", "s2.bgf", "s3.bgf"};
    for (int i = 0; i < SAVES; i++)
        path_join(paths[i], sizeof paths[i], dir, names[i]);

    bg_filter *f = filter_make(BG_VARIANT_BLOCKED, UINT64_C(1) << 28, 6, 99);
    keys_add(f, SET_PRELOADED, preloaded);
    image before = image_of(f);
    uint64_t items_before = bg_filter_items(f);

    adder a = {.f = f};
    atomic_init(&a.stop, false);
    atomic_init(&a.added, 0);
    atomic_init(&a.failed, 0);
    pthread_t th;
    TU_EQ_I(pthread_create(&th, NULL, adder_main, &a), 0);
    while (atomic_load(&a.added) < 1000)
        sched_yield();

    uint64_t during = 0; /* keys added while a save ran */
    for (int i = 0; i < SAVES; i++) {
        tu_ctx("save during adds, save %d", i);
        uint64_t n0 = atomic_load(&a.added);
        TU_EQ_I(bg_filter_save(f, paths[i]), BG_OK);
        during += atomic_load(&a.added) - n0;
    }
    atomic_store(&a.stop, true);
    TU_EQ_I(pthread_join(th, NULL), 0);
    TU_EQ_I(atomic_load(&a.failed), 0);
    image after = image_of(f);
    uint64_t items_after = bg_filter_items(f);
    print_message("crash: %" PRIu64 " keys added during %d saves\n", during, SAVES);
    TU_TRUE(during > 0);

    /* Each file loads with its checksum verified, and is a state between
     * the filter before the saves and after them: its header's item count
     * and each payload bit. Saves in sequence only ever see more bits. */
    mapped prev = {NULL, 0};
    for (int i = 0; i < SAVES; i++) {
        tu_ctx("save during adds, file %d", i);
        bg_filter *g = NULL;
        TU_EQ_I(bg_filter_load(&g, paths[i], 0), BG_OK);
        TU_EQ_U(keys_present(g, SET_PRELOADED, preloaded), preloaded);
        TU_EQ_U(bg_filter_bits(g), bg_filter_bits(f));
        TU_EQ_U(bg_filter_hashes(g), bg_filter_hashes(f));
        TU_EQ_U(bg_filter_seed(g), bg_filter_seed(f));
        TU_TRUE(bg_filter_items(g) >= items_before && bg_filter_items(g) <= items_after);
        bg_filter_free(g);

        mapped m = file_map(paths[i]);
        TU_EQ_U(m.len, before.len);
        uint64_t below = 0, above = 0, behind = 0;
        for (size_t j = BG_FILE_HEADER_BYTES; j < m.len; j++) {
            below += (before.bytes[j] & ~m.bytes[j]) != 0;
            above += (m.bytes[j] & ~after.bytes[j]) != 0;
            behind += prev.len && (prev.bytes[j] & ~m.bytes[j]) != 0;
        }
        TU_EQ_U(below, 0);  /* a bit set before the save is missing */
        TU_EQ_U(above, 0);  /* a bit set that the filter never had */
        TU_EQ_U(behind, 0); /* a bit of the previous save is missing */
        file_unmap(prev);
        prev = m;
    }
    file_unmap(prev);
    TU_EQ_U(dir_check(dir, names, SAVES), 0);

    bg_filter_free(f);
    free(before.bytes);
    free(after.bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(kill_during_save, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(save_mapped, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(save_during_adds, dir_setup, dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
