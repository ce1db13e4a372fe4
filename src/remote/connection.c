/* The connection: connect, AUTH, timeouts, reconnect, and errors as values.
 *
 * SIGPIPE
 * hiredis writes with write(2), so a write to a socket the server closed
 * raises SIGPIPE, whose default action kills the process. A library must
 * not change the process's signal dispositions, so every exchange blocks
 * SIGPIPE in the calling thread, and before unblocking consumes a SIGPIPE
 * that the exchange itself made pending (the EPIPE error is what we report).
 * A SIGPIPE that was already pending before the call is left alone. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "core/alloc_internal.h"
#include "core/clock.h"
#include "remote_internal.h"

int bg__remote_fail(bg_remote *r, int status, const char *fmt, ...)
{
    if (r) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->errstr, sizeof r->errstr, fmt, ap);
        va_end(ap);
    }
    return status;
}

char *bg__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = bg__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int bg__parse_u64(const char *s, size_t len, uint64_t *out)
{
    if (!s || len == 0 || len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static struct timeval ms_to_tv(uint32_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

/* SIGPIPE guard (see the top of this file). */
typedef struct pipe_guard {
    sigset_t old;
    int was_pending;
} pipe_guard;

static void guard_begin(pipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void guard_end(pipe_guard *g)
{
    if (!g->was_pending) {
        sigset_t set, pending;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int bg__remote_error_reply(bg_remote *r, const redisReply *reply)
{
    const char *s = reply->str ? reply->str : "";
    bg__remote_fail(r, BG_EREMOTE, "%s", s);
    if (strncmp(s, "BGSTALE", 7) == 0)
        return BG_ESTALE;
    if (strncmp(s, "BGNOTFOUND", 10) == 0)
        return BG_ENOTFOUND;
    if (strncmp(s, "BGEXISTS", 8) == 0)
        return BG_EEXIST;
    return BG_EREMOTE;
}

/* REPLY LIMITS
 * hiredis allocates an array reply's element pointers as soon as it reads
 * the header "*<n>", before any element has arrived, so a server (or
 * anything else on the port) that sends "*1333333333" makes it ask for
 * 10 GiB; hiredis 0.14 has no limit of its own (1.x added maxelements).
 * Every context's reader therefore builds arrays through r->reply_fn, a
 * copy of hiredis's own functions whose createArray refuses more elements
 * than the command can return: BG__ARRAY_CAP, or a batch's size
 * (bg__remote_allow_array). hiredis then fails the read ("out of memory");
 * io_error reports the real reason, and the connection is dropped like any
 * broken one. Bulk strings need no limit: hiredis keeps only the bytes that
 * really arrived. (Found by tests/fuzz/fuzz_remote_reply.c.) */
static void *capped_array(const redisReadTask *task, int elements)
{
    bg_remote *r = task->privdata;
    if (elements < 0 || (size_t)elements > r->array_cap) {
        r->array_refused = elements;
        return NULL;
    }
    return r->hiredis_create_array(task, elements);
}

static void cap_replies(bg_remote *r, redisContext *c)
{
    if (!r->hiredis_create_array) {
        r->reply_fn = *c->reader->fn;
        r->hiredis_create_array = r->reply_fn.createArray;
        r->reply_fn.createArray = capped_array;
    }
    c->reader->fn = &r->reply_fn;
    c->reader->privdata = r;
}

void bg__remote_allow_array(bg_remote *r, size_t count)
{
    r->array_cap = count > BG__ARRAY_CAP - 2 ? count + 2 : BG__ARRAY_CAP;
}

static int io_error(bg_remote *r, const redisContext *c, const char *what)
{
    if (r->array_refused >= 0 || r->array_refused < -1) {
        long long n = r->array_refused;
        r->array_refused = -1;
        return bg__remote_fail(r, BG_ECONN,
                               "%s: the server sent an array of %lld elements, more than the "
                               "%zu this command can return",
                               what, n, r->array_cap);
    }
    const char *why = c && c->errstr[0] ? c->errstr : "unknown error";
    return bg__remote_fail(r, BG_ECONN, "%s: %s", what, why);
}

/* One command on c (after ASKING when `asking`), one reply into *reply.
 * BG_OK or BG_ECONN; the caller decides what a broken context means. */
static int exchange(bg_remote *r, redisContext *c, int asking, int argc, const char **argv,
                    const size_t *lens, redisReply **reply)
{
    *reply = NULL;
    if (asking) {
        const char *aa[1] = {"ASKING"};
        size_t al[1] = {6};
        if (redisAppendCommandArgv(c, 1, aa, al) != REDIS_OK)
            return io_error(r, c, "cannot format the command");
    }
    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
        return io_error(r, c, "cannot format the command");
    pipe_guard g;
    guard_begin(&g);
    void *rep = NULL;
    int rc = REDIS_OK;
    if (asking) {
        rc = redisGetReply(c, &rep);
        if (rep)
            freeReplyObject(rep); /* +OK; an error shows in the command's reply */
        rep = NULL;
    }
    if (rc == REDIS_OK)
        rc = redisGetReply(c, &rep);
    guard_end(&g);
    if (rc != REDIS_OK || !rep) {
        if (rep)
            freeReplyObject(rep);
        return io_error(r, c, "no reply from Redis");
    }
    *reply = rep;
    return BG_OK;
}

/* Connects to host:port (or the socket) and authenticates, into *out. */
static int open_context(bg_remote *r, const char *host, int port, const char *unix_socket,
                        redisContext **out)
{
    *out = NULL;
    struct timeval ct = ms_to_tv(r->connect_timeout_ms);
    redisContext *c = unix_socket ? redisConnectUnixWithTimeout(unix_socket, ct)
                                  : redisConnectWithTimeout(host, port, ct);
    if (!c)
        return bg__remote_fail(r, BG_ENOMEM, "out of memory connecting");
    int rc = BG_OK;
    if (c->err) {
        if (unix_socket)
            rc = bg__remote_fail(r, BG_ECONN, "cannot connect to %s: %s", unix_socket,
                                 c->errstr);
        else
            rc = bg__remote_fail(r, BG_ECONN, "cannot connect to %s:%d: %s", host, port,
                                 c->errstr);
    } else {
        /* hiredis 0.14 leaves its socket inheritable: a program that runs
         * another (the CLI's rebuild --command, a server that spawns
         * workers) would hand it our connection. */
        (void)fcntl(c->fd, F_SETFD, FD_CLOEXEC);
        cap_replies(r, c);
        if (redisSetTimeout(c, ms_to_tv(r->command_timeout_ms)) != REDIS_OK) {
            rc = io_error(r, c, "cannot set the timeout");
        } else if (r->password) {
            const char *argv[3] = {"AUTH", r->username ? r->username : r->password,
                                   r->password};
            size_t lens[3] = {4, strlen(argv[1]), strlen(r->password)};
            redisReply *rep;
            rc = exchange(r, c, 0, r->username ? 3 : 2, argv, lens, &rep);
            if (rc == BG_OK) {
                if (rep->type == REDIS_REPLY_ERROR)
                    rc = bg__remote_error_reply(r, rep);
                freeReplyObject(rep);
            }
        }
    }
    if (rc != BG_OK) {
        redisFree(c);
        return rc;
    }
    *out = c;
    return BG_OK;
}

/* CLUSTER ROUTING
 *
 * hiredis 0.14 knows nothing of Redis Cluster, so a cluster connection
 * (bg_remote_options.cluster) does it here, by the cluster spec:
 *
 *   slot(key) = CRC16(tag) mod 16384, where CRC16 is the XMODEM variant
 *   (polynomial 0x1021, initial value 0, no reflection; CRC16("123456789")
 *   is 0x31C3) and tag is the part of the key between its first '{' and
 *   the first '}' after it, if that is not empty, else the whole key.
 *
 * CLUSTER SLOTS, asked of the seed (then of any known master), gives the
 * master of every slot range; we keep one hiredis context per master,
 * opened on first use. A command goes to the master of its key's slot (the
 * key is argv[1], or an EVAL/EVALSHA's first key; SCRIPT LOAD and other
 * keyless commands go to the master used last). Replies:
 *   MOVED <slot> <host:port>  the slot has a new owner: remember it, read
 *                             CLUSTER SLOTS again (best effort), retry there.
 *   ASK <slot> <host:port>    the slot is being migrated and the key is
 *                             already on the target: ASKING then the
 *                             command, on the target, this once.
 *   TRYAGAIN, CLUSTERDOWN     a multi-key command during a migration whose
 *                             keys are split, or a cluster in flux: wait a
 *                             little and retry.
 * At most BG__REDIRECTS of these per command; after that the last error
 * reply is returned (BG_EREMOTE). A reply lost with a broken connection is
 * BG_ECONN and never retried (the command may have run), as on one server.
 *
 * A settled cluster needs one redirection (MOVED after a reshard, or ASK
 * during one). More mean the masters disagree for now: a slot handed to the
 * source before the destination has left IMPORTING makes them send the
 * client back and forth with MOVED until the destination learns it too. So
 * the first redirection is followed at once and the n-th after it waits
 * 10n ms (TRYAGAIN and CLUSTERDOWN wait from the first): the 16 tries span
 * about 1.2 s, not the millisecond that 16 round trips take on loopback.
 *
 * FAILOVER
 * A master that dies sends no MOVED: the client cannot connect to it, or
 * its connection breaks. A connection that breaks under a command fails it
 * (BG_ECONN: it may have run) and is closed; the next command for that
 * master cannot connect, and one that cannot connect has sent nothing, so
 * it re-reads the map from another master and goes to the slot's new one
 * if there is one (slot_master): once the cluster has promoted a replica,
 * calls work again without the caller doing anything. Until then each call
 * for the dead master's slots fails with BG_ECONN, at once (below). A
 * keyless command (SCRIPT LOAD) goes on to the next master that answers.
 *
 * HELD-DOWN MASTERS
 * A master whose connect failed is not tried again for a while: the n-th
 * failure in a row holds it down BG__HOLD_MIN_MS * 2^(n-1), at most
 * BG__HOLD_MAX_MS (100, 200, 400, 800, 1000 ms ...); a connect that works
 * clears it. Meanwhile a call for its slots fails with BG_ECONN at once,
 * its message the failed connect's, and re-reads the slot map from the
 * other masters at most once per BG__HOLD_MIN_MS, so a promoted replica is
 * still found within that. Why: a master that is unreachable rather than
 * refusing (a host down, a partition that drops packets) costs every
 * connect the whole connect_timeout_ms, and during a failover (the
 * cluster's node timeout, 15 s by default) a service would pay that on
 * every request for a third of its keys: threads pile up behind a master
 * the cluster is about to replace. bg_remote_reconnect forgets the holds.
 *
 * LIMITATIONS
 * Masters only: no reads from replicas (a replica's answers may miss the
 * latest adds, which for a filter is a false negative). */
#define BG__REDIRECTS 16
#define BG__HOLD_MIN_MS 100u
#define BG__HOLD_MAX_MS 1000u

unsigned bg__key_slot(const char *key, size_t len)
{
    size_t s = 0;
    for (; s < len && key[s] != '{'; s++)
        ;
    if (s < len) {
        size_t e = s + 1;
        for (; e < len && key[e] != '}'; e++)
            ;
        if (e < len && e > s + 1) {
            key += s + 1;
            len = e - s - 1;
        }
    }
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)key[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc & (BG__SLOTS - 1);
}

/* The index of master host:port, added if new; BG__NO_NODE if out of memory. */
static size_t node_index(bg_remote *r, const char *host, size_t hlen, int port)
{
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i].port == port && strlen(r->nodes[i].host) == hlen &&
            memcmp(r->nodes[i].host, host, hlen) == 0)
            return i;
    if (r->nnodes >= BG__NO_NODE - 1)
        return BG__NO_NODE;
    char *h = bg__malloc(hlen + 1);
    bg__node *n = bg__malloc((r->nnodes + 1) * sizeof *n);
    if (!h || !n) {
        bg__free(h);
        bg__free(n);
        return BG__NO_NODE;
    }
    if (r->nnodes)
        memcpy(n, r->nodes, r->nnodes * sizeof *n);
    bg__free(r->nodes);
    r->nodes = n;
    memcpy(h, host, hlen);
    h[hlen] = '\0';
    n[r->nnodes] = (bg__node){.host = h, .port = port, .c = NULL};
    return r->nnodes++;
}

static void node_close(bg_remote *r, size_t i)
{
    if (r->nodes[i].c) {
        if (r->c == r->nodes[i].c)
            r->c = NULL;
        redisFree(r->nodes[i].c);
        r->nodes[i].c = NULL;
    }
}

/* Connects to master i unless it is held down (HELD-DOWN MASTERS). */
static int node_ready(bg_remote *r, size_t i)
{
    bg__node *n = &r->nodes[i];
    if (n->c)
        return BG_OK;
    uint64_t now = bg__now_ms();
    if (now < n->retry_at)
        return bg__remote_fail(r, BG_ECONN, "%s (held down for %" PRIu64 " ms more)", n->why,
                               n->retry_at - now);
    r->connects++;
    int rc = open_context(r, n->host, n->port, NULL, &n->c);
    if (rc == BG_ECONN) {
        n->failures++;
        unsigned shift = n->failures - 1 < 4 ? n->failures - 1 : 4;
        uint64_t hold = (uint64_t)BG__HOLD_MIN_MS << shift;
        n->retry_at = bg__now_ms() + (hold < BG__HOLD_MAX_MS ? hold : BG__HOLD_MAX_MS);
        memcpy(n->why, r->errstr, sizeof n->why);
    } else if (rc == BG_OK) {
        n->failures = 0;
        n->retry_at = 0;
    }
    return rc;
}

/* Parses "<slot> <host>:<port>" after MOVED / ASK. */
static size_t redirect_target(bg_remote *r, const char *s, unsigned *slot)
{
    char *end;
    unsigned long sl = strtoul(s, &end, 10);
    if (end == s || *end != ' ' || sl >= BG__SLOTS)
        return BG__NO_NODE;
    const char *host = end + 1;
    const char *colon = strrchr(host, ':');
    if (!colon)
        return BG__NO_NODE;
    long port = strtol(colon + 1, &end, 10);
    if (port <= 0 || port > 65535)
        return BG__NO_NODE;
    *slot = (unsigned)sl;
    return node_index(r, host, (size_t)(colon - host), (int)port);
}

/* Reads CLUSTER SLOTS from the first master that answers, other than
 * `avoid` (one that just failed; BG__NO_NODE for none), into the map. */
static int refresh_slots(bg_remote *r, size_t avoid)
{
    int rc = BG_ECONN;
    for (size_t i = 0; i < r->nnodes; i++) {
        if (i == avoid || (rc = node_ready(r, i)) != BG_OK)
            continue;
        const char *argv[2] = {"CLUSTER", "SLOTS"};
        size_t lens[2] = {7, 5};
        redisReply *rep;
        if ((rc = exchange(r, r->nodes[i].c, 0, 2, argv, lens, &rep)) != BG_OK) {
            node_close(r, i);
            continue;
        }
        if (rep->type == REDIS_REPLY_ERROR) {
            rc = bg__remote_error_reply(r, rep);
            freeReplyObject(rep);
            continue;
        }
        rc = BG_OK;
        if (rep->type != REDIS_REPLY_ARRAY)
            rc = bg__remote_fail(r, BG_EREMOTE, "CLUSTER SLOTS: unexpected reply");
        for (size_t j = 0; rc == BG_OK && j < rep->elements; j++) {
            const redisReply *e = rep->element[j];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
                e->element[0]->type != REDIS_REPLY_INTEGER ||
                e->element[1]->type != REDIS_REPLY_INTEGER ||
                e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
                e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
                e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
                rc = bg__remote_fail(r, BG_EREMOTE, "CLUSTER SLOTS: unexpected entry");
                break;
            }
            long long lo = e->element[0]->integer, hi = e->element[1]->integer;
            const redisReply *h = e->element[2]->element[0];
            /* An empty host means "the address you reached me at". */
            const char *host = h->len ? h->str : r->nodes[i].host;
            size_t hlen = h->len ? h->len : strlen(r->nodes[i].host);
            size_t ni = node_index(r, host, hlen, (int)e->element[2]->element[1]->integer);
            if (ni == BG__NO_NODE) {
                rc = BG_ENOMEM;
                break;
            }
            for (long long s = lo < 0 ? 0 : lo; s <= hi && s < BG__SLOTS; s++)
                r->slot_node[s] = (uint16_t)ni;
        }
        freeReplyObject(rep);
        if (rc == BG_OK || rc == BG_ENOMEM)
            return rc;
    }
    if (rc == BG_ECONN && r->nnodes > 1) {
        char last[BG__REMOTE_ERRSTR];
        memcpy(last, r->errstr, sizeof last);
        bg__remote_fail(r, rc, "no node of the cluster answers (%zu tried; the last: %s)",
                        r->nnodes - (avoid < r->nnodes), last);
    }
    return rc;
}

/* The command's key (see CLUSTER ROUTING); 0 for a keyless one. */
static int command_key(int argc, const char **argv, const size_t *lens, const char **key,
                       size_t *klen)
{
    if (argc < 2)
        return 0;
    if (strcasecmp(argv[0], "EVAL") == 0 || strcasecmp(argv[0], "EVALSHA") == 0) {
        if (argc < 4 || strcmp(argv[2], "0") == 0)
            return 0;
        *key = argv[3];
        *klen = lens[3];
        return 1;
    }
    if (strcasecmp(argv[0], "SCRIPT") == 0 || strcasecmp(argv[0], "CLUSTER") == 0 ||
        strcasecmp(argv[0], "PING") == 0 || strcasecmp(argv[0], "INFO") == 0)
        return 0;
    *key = argv[1];
    *klen = lens[1];
    return 1;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Into *out, the master of `slot`, connected. One that cannot be reached
 * may have failed over: its replica, promoted, serves the slot now, but our
 * map still names the dead master, and only a live one could answer MOVED.
 * So the map is read again from the other masters (at most once per
 * BG__HOLD_MIN_MS: HELD-DOWN MASTERS) and, if the slot has a new master,
 * that one is tried. Nothing has been sent yet: trying another
 * master is safe. Until the cluster has promoted a replica, the map still
 * names the dead one and the call fails (BG_ECONN, its connect error). */
static int slot_master(bg_remote *r, unsigned slot, size_t *out)
{
    if (r->slot_node[slot] == BG__NO_NODE)
        (void)refresh_slots(r, BG__NO_NODE);
    size_t ni = r->slot_node[slot];
    if (ni == BG__NO_NODE)
        return bg__remote_fail(r, BG_EREMOTE, "no master serves slot %u", slot);
    int rc = node_ready(r, ni);
    if (rc == BG_OK) {
        *out = ni;
        return BG_OK;
    }
    uint64_t now = bg__now_ms();
    if (rc != BG_ECONN || now - r->slots_read_at < BG__HOLD_MIN_MS)
        return rc; /* read again a moment ago (HELD-DOWN MASTERS) */
    r->slots_read_at = now;
    char keep[BG__REMOTE_ERRSTR];
    memcpy(keep, r->errstr, sizeof keep);
    if (refresh_slots(r, ni) == BG_OK && r->slot_node[slot] != BG__NO_NODE &&
        r->slot_node[slot] != ni) {
        ni = r->slot_node[slot];
        r->redirects++;
        if ((rc = node_ready(r, ni)) == BG_OK)
            *out = ni;
        return rc;
    }
    memcpy(r->errstr, keep, sizeof keep);
    return rc;
}

/* The wait before following a command's redirection number `tries` (0 is
 * the first): see CLUSTER ROUTING. */
static void settle_pause(int tries, int always)
{
    long n = always ? tries + 1 : tries;
    if (n > 0)
        pause_ms(10L * n);
}

static int cluster_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                           redisReply **reply)
{
    const char *key = NULL;
    size_t klen = 0;
    int keyed = command_key(argc, argv, lens, &key, &klen);
    unsigned slot = keyed ? bg__key_slot(key, klen) : 0;
    int asking = 0;
    size_t ni = 0;
    for (int tries = 0;; tries++) {
        int rc;
        if (!asking && keyed) {
            if ((rc = slot_master(r, slot, &ni)) != BG_OK)
                return rc;
        } else {
            if (!asking) {
                ni = 0;
                for (size_t i = 0; i < r->nnodes; i++)
                    if (r->c && r->nodes[i].c == r->c)
                        ni = i;
            }
            rc = node_ready(r, ni);
            /* A keyless command (SCRIPT LOAD) may go to any master: past a
             * dead one to the next that answers. */
            for (size_t i = 0; rc != BG_OK && !asking && i < r->nnodes; i++)
                if (i != ni && (rc = node_ready(r, i)) == BG_OK)
                    ni = i;
            if (rc != BG_OK)
                return rc;
        }
        r->errstr[0] = '\0'; /* a dead master passed on the way is no error */
        r->c = r->nodes[ni].c;
        redisReply *rep;
        rc = exchange(r, r->c, asking, argc, argv, lens, &rep);
        if (rc != BG_OK) {
            node_close(r, ni);
            return rc;
        }
        asking = 0;
        if (rep->type != REDIS_REPLY_ERROR || !rep->str || tries >= BG__REDIRECTS) {
            *reply = rep;
            return BG_OK;
        }
        unsigned s;
        if (strncmp(rep->str, "MOVED ", 6) == 0) {
            size_t to = redirect_target(r, rep->str + 6, &s);
            if (to == BG__NO_NODE) {
                *reply = rep;
                return BG_OK;
            }
            freeReplyObject(rep);
            r->redirects++;
            settle_pause(tries, 0);
            (void)refresh_slots(r, BG__NO_NODE);
            r->slot_node[s] = (uint16_t)to; /* the redirect is the freshest word */
            r->errstr[0] = '\0';
        } else if (strncmp(rep->str, "ASK ", 4) == 0) {
            size_t to = redirect_target(r, rep->str + 4, &s);
            if (to == BG__NO_NODE) {
                *reply = rep;
                return BG_OK;
            }
            freeReplyObject(rep);
            r->redirects++;
            settle_pause(tries, 0);
            asking = 1;
            ni = to;
        } else if (strncmp(rep->str, "TRYAGAIN", 8) == 0 ||
                   strncmp(rep->str, "CLUSTERDOWN", 11) == 0) {
            freeReplyObject(rep);
            r->redirects++;
            settle_pause(tries, 1);
        } else {
            *reply = rep;
            return BG_OK;
        }
    }
}

int bg__remote_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                       redisReply **reply, int keep_errors)
{
    *reply = NULL;
    int rc = bg__remote_ready(r);
    if (rc != BG_OK)
        return rc;
    redisReply *rep = NULL;
    if (r->cluster) {
        rc = cluster_command(r, argc, argv, lens, &rep);
    } else {
        rc = exchange(r, r->c, 0, argc, argv, lens, &rep);
        if (rc != BG_OK)
            r->broken = 1;
    }
    if (rc != BG_OK)
        return rc;
    if (rep->type == REDIS_REPLY_ERROR && !keep_errors) {
        rc = bg__remote_error_reply(r, rep);
        freeReplyObject(rep);
        return rc;
    }
    *reply = rep;
    return BG_OK;
}

int bg_remote_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                      redisReply **reply)
{
    if (reply)
        *reply = NULL;
    if (!r || argc < 1 || !argv || !lens || !reply)
        return BG_EINVAL;
    for (int i = 0; i < argc; i++)
        if (!argv[i])
            return BG_EINVAL;
    return bg__remote_command(r, argc, argv, lens, reply, 0);
}

int bg__remote_del(bg_remote *r, const char *key, int *deleted)
{
    const char *argv[2] = {"DEL", key};
    size_t lens[2] = {3, strlen(key)};
    redisReply *rep;
    int rc = bg__remote_command(r, 2, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    if (deleted)
        *deleted = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
    freeReplyObject(rep);
    return BG_OK;
}

/* PIPELINING ACROSS MASTERS
 * bg__remote_fanout writes every call to its master's connection first,
 * flushes them all, and only then reads the replies, each connection's in
 * the order written. The masters work at the same time, so a batch split
 * into S parts costs about one round trip instead of S (on one server it is
 * plain pipelining). A call that was not executed where it was sent (MOVED,
 * ASK, TRYAGAIN, CLUSTERDOWN) gets reply NULL: the caller sends it again on
 * its own through bg__remote_command, which follows redirections. A broken
 * connection fails the whole fanout with BG_ECONN and is not retried: the
 * calls sent on it may have been applied (ERRORS in remote.h). */
static int must_resend(const redisReply *rep)
{
    if (rep->type != REDIS_REPLY_ERROR || !rep->str)
        return 0;
    return strncmp(rep->str, "MOVED ", 6) == 0 || strncmp(rep->str, "ASK ", 4) == 0 ||
           strncmp(rep->str, "TRYAGAIN", 8) == 0 || strncmp(rep->str, "CLUSTERDOWN", 11) == 0;
}

/* The connection of node `ni` (cluster) or the only one. */
static redisContext *fan_context(bg_remote *r, size_t ni)
{
    return r->cluster ? r->nodes[ni].c : r->c;
}

static void fan_close(bg_remote *r, size_t ni)
{
    if (r->cluster) {
        node_close(r, ni);
    } else if (r->c) {
        redisFree(r->c);
        r->c = NULL;
        r->broken = 1;
    }
}

int bg__remote_fanout(bg_remote *r, bg__call *calls, size_t n)
{
    for (size_t i = 0; i < n; i++)
        calls[i].reply = NULL;
    int rc = bg__remote_ready(r);
    if (rc != BG_OK || n == 0)
        return rc;
    size_t *node = bg__calloc(n, sizeof *node);
    if (!node)
        return BG_ENOMEM;
    /* Route: every call's master, connected. */
    for (size_t i = 0; r->cluster && i < n; i++) {
        const char *key = NULL;
        size_t klen = 0;
        if (!command_key(calls[i].argc, calls[i].argv, calls[i].lens, &key, &klen)) {
            rc = bg__remote_fail(r, BG_EINVAL, "a fanout call without a key");
            goto out;
        }
        if ((rc = slot_master(r, bg__key_slot(key, klen), &node[i])) != BG_OK)
            goto out;
    }
    /* Write: append everything, then flush each connection once. */
    for (size_t i = 0; i < n; i++)
        if (redisAppendCommandArgv(fan_context(r, node[i]), calls[i].argc, calls[i].argv,
                                   calls[i].lens) != REDIS_OK) {
            /* Commands already appended would never be read: drop them all. */
            rc = io_error(r, fan_context(r, node[i]), "cannot format the command");
            for (size_t j = 0; j <= i; j++)
                if (fan_context(r, node[j]))
                    fan_close(r, node[j]);
            goto out;
        }
    pipe_guard g;
    guard_begin(&g);
    for (size_t i = 0; i < n; i++) {
        redisContext *c = fan_context(r, node[i]);
        int done = 0;
        while (c && !done)
            if (redisBufferWrite(c, &done) != REDIS_OK) {
                if (rc == BG_OK)
                    rc = io_error(r, c, "cannot send to Redis");
                fan_close(r, node[i]);
                c = NULL;
            }
    }
    /* Read: each call's reply, connections in parallel, each in order. */
    for (size_t i = 0; i < n; i++) {
        redisContext *c = fan_context(r, node[i]);
        if (!c)
            continue; /* broke: rc says so */
        void *rep = NULL;
        if (redisGetReply(c, &rep) != REDIS_OK || !rep) {
            if (rc == BG_OK)
                rc = io_error(r, c, "no reply from Redis");
            fan_close(r, node[i]);
            continue;
        }
        if (must_resend(rep)) {
            freeReplyObject(rep);
            r->redirects++;
            continue;
        }
        calls[i].reply = rep;
    }
    guard_end(&g);
    if (rc != BG_OK)
        for (size_t i = 0; i < n; i++)
            if (calls[i].reply) {
                freeReplyObject(calls[i].reply);
                calls[i].reply = NULL;
            }
out:
    bg__free(node);
    return rc;
}

/* Connects anew (closing the old connections) and authenticates; a cluster
 * connection reads the slot map from the seed. */
static int do_connect(bg_remote *r)
{
    if (r->cluster) {
        for (size_t i = 0; i < r->nnodes; i++) {
            node_close(r, i);
            r->nodes[i].failures = 0;
            r->nodes[i].retry_at = 0;
        }
        r->c = NULL;
        for (size_t s = 0; s < BG__SLOTS; s++)
            r->slot_node[s] = BG__NO_NODE;
        /* The seeds in turn (then any master learned before a reconnect). */
        int rc = refresh_slots(r, BG__NO_NODE);
        if (rc != BG_OK)
            return rc;
        r->errstr[0] = '\0';
        return BG_OK;
    }
    if (r->c) {
        redisFree(r->c);
        r->c = NULL;
    }
    r->broken = 1;
    int rc = open_context(r, r->host, r->port, r->unix_socket, &r->c);
    if (rc != BG_OK)
        return rc;
    r->broken = 0;
    r->errstr[0] = '\0';
    return BG_OK;
}

int bg__remote_ready(bg_remote *r)
{
    r->errstr[0] = '\0';
    if (r->cluster)
        return BG_OK; /* masters connect on first use */
    if (!r->broken && r->c)
        return BG_OK;
    return do_connect(r);
}

/* Adds every "HOST:PORT" of the comma-separated `list` as a node: BG_OK,
 * BG_EINVAL (an empty item, no port, a port out of 1..65535, an unclosed
 * '[') or BG_ENOMEM. */
static int add_seeds(bg_remote *r, const char *list)
{
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        const char *host = p, *colon = NULL;
        size_t hlen;
        if (len > 0 && *p == '[') { /* an IPv6 literal */
            const char *close = memchr(p, ']', len);
            if (!close || close + 1 >= p + len || close[1] != ':')
                return BG_EINVAL;
            host = p + 1;
            hlen = (size_t)(close - host);
            colon = close + 1;
        } else {
            for (const char *c = p; c < p + len; c++)
                if (*c == ':')
                    colon = c;
            if (!colon)
                return BG_EINVAL;
            hlen = (size_t)(colon - p);
        }
        size_t digits = (size_t)(p + len - colon - 1);
        long port = 0;
        for (size_t i = 1; i <= digits && i <= 5; i++) {
            if (colon[i] < '0' || colon[i] > '9')
                return BG_EINVAL;
            port = port * 10 + (colon[i] - '0');
        }
        if (hlen == 0 || digits == 0 || digits > 5 || port < 1 || port > 65535)
            return BG_EINVAL;
        if (node_index(r, host, hlen, (int)port) == BG__NO_NODE)
            return BG_ENOMEM;
        if (p[len] == '\0')
            return BG_OK;
        p += len + 1;
    }
}

int bg_remote_connect(bg_remote **out, const bg_remote_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!o || o->port < 0 || o->port > 65535 || (o->cluster && o->unix_socket) ||
        (o->seeds && !o->cluster))
        return BG_EINVAL;
    bg_remote *r = bg__calloc(1, sizeof *r);
    if (!r)
        return BG_ENOMEM;
    r->host = bg__strdup(o->host ? o->host : "127.0.0.1");
    r->unix_socket = bg__strdup(o->unix_socket);
    r->username = bg__strdup(o->username);
    r->password = bg__strdup(o->password);
    if (!r->host || (o->unix_socket && !r->unix_socket) || (o->username && !r->username) ||
        (o->password && !r->password)) {
        bg_remote_free(r);
        return BG_ENOMEM;
    }
    r->port = o->port ? o->port : 6379;
    r->array_cap = BG__ARRAY_CAP;
    r->array_refused = -1;
    r->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 2000;
    r->command_timeout_ms = o->command_timeout_ms ? o->command_timeout_ms : 2000;
    if (o->cluster) {
        r->cluster = 1;
        r->slot_node = bg__malloc(BG__SLOTS * sizeof *r->slot_node);
        if (!r->slot_node || node_index(r, r->host, strlen(r->host), r->port) != 0) {
            bg_remote_free(r);
            return BG_ENOMEM;
        }
        int sr = o->seeds ? add_seeds(r, o->seeds) : BG_OK;
        if (sr != BG_OK) {
            bg_remote_free(r);
            return sr;
        }
    }
    int rc = do_connect(r);
    if (rc == BG_ENOMEM) {
        bg_remote_free(r);
        return rc;
    }
    *out = r;
    return rc;
}

int bg_remote_reconnect(bg_remote *r)
{
    if (!r)
        return BG_EINVAL;
    return do_connect(r);
}

void bg_remote_free(bg_remote *r)
{
    if (!r)
        return;
    if (r->cluster) {
        for (size_t i = 0; i < r->nnodes; i++) {
            node_close(r, i);
            bg__free(r->nodes[i].host);
        }
        r->c = NULL;
    }
    if (r->c)
        redisFree(r->c);
    bg__free(r->nodes);
    bg__free(r->slot_node);
    bg__free(r->host);
    bg__free(r->unix_socket);
    bg__free(r->username);
    bg__free(r->password);
    bg__free(r);
}

const char *bg_remote_errstr(const bg_remote *r)
{
    return r ? r->errstr : "";
}

/* SCRIPTS
 * A script's SHA1 is learnt with SCRIPT LOAD once per connection handle
 * (r->sha[idx]); a server that has not seen it (restarted, SCRIPT FLUSH, a
 * cluster master) answers NOSCRIPT, and the call is sent again as EVAL
 * with the source, which nothing executed before. */
int bg__remote_load_script(bg_remote *r, int idx, const char *src)
{
    if (r->sha[idx][0])
        return BG_OK;
    const char *la[3] = {"SCRIPT", "LOAD", src};
    size_t ll[3] = {6, 4, strlen(src)};
    redisReply *rep;
    int rc = bg__remote_command(r, 3, la, ll, &rep, 0);
    if (rc != BG_OK)
        return rc;
    if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
        freeReplyObject(rep);
        return bg__remote_fail(r, BG_EREMOTE, "SCRIPT LOAD: unexpected reply");
    }
    memcpy(r->sha[idx], rep->str, 40);
    r->sha[idx][40] = '\0';
    freeReplyObject(rep);
    return BG_OK;
}

_Atomic(bg__script_fault_fn) bg__remote_script_fault; /* NULL: zero-initialized */

/* Closes the connection the last command used, as a network fault would. */
static int lose_connection(bg_remote *r)
{
    if (r->cluster) {
        for (size_t i = 0; i < r->nnodes; i++)
            if (r->c && r->nodes[i].c == r->c)
                node_close(r, i);
    } else if (r->c) {
        redisFree(r->c);
        r->c = NULL;
        r->broken = 1;
    }
    return bg__remote_fail(r, BG_ECONN, "connection lost (injected fault)");
}

int bg__remote_script(bg_remote *r, int idx, const char *src, int argc, const char **argv,
                      size_t *lens, redisReply **reply)
{
    *reply = NULL;
    redisReply *rep;
    int rc = bg__remote_load_script(r, idx, src);
    if (rc != BG_OK)
        return rc;
    bg__script_fault_fn fault = atomic_load_explicit(&bg__remote_script_fault,
                                                     memory_order_relaxed);
    int inject = fault ? fault(idx) : BG__FAULT_NONE;
    if (inject == BG__FAULT_LOSE_REQUEST)
        return lose_connection(r);
    argv[0] = "EVALSHA";
    lens[0] = 7;
    argv[1] = r->sha[idx];
    lens[1] = 40;
    rc = bg__remote_command(r, argc, argv, lens, &rep, 1);
    if (rc != BG_OK)
        return rc;
    if (rep->type == REDIS_REPLY_ERROR && rep->str && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(rep);
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = src;
        lens[1] = strlen(src);
        rc = bg__remote_command(r, argc, argv, lens, &rep, 1);
        if (rc != BG_OK)
            return rc;
    }
    if (inject == BG__FAULT_LOSE_REPLY) {
        freeReplyObject(rep);
        return lose_connection(r);
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = bg__remote_error_reply(r, rep);
        freeReplyObject(rep);
        return rc;
    }
    *reply = rep;
    return BG_OK;
}

void bg__remote_discard(bg_remote *r, const char *key, int status)
{
    if (status == BG_ECONN)
        return;
    char keep[BG__REMOTE_ERRSTR];
    memcpy(keep, r->errstr, sizeof keep);
    const char *argv[2] = {"UNLINK", key};
    size_t lens[2] = {6, strlen(key)};
    redisReply *rep;
    if (bg__remote_command(r, 2, argv, lens, &rep, 0) == BG_OK)
        freeReplyObject(rep);
    memcpy(r->errstr, keep, sizeof keep);
}
