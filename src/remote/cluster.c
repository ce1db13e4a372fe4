/* SPDX-License-Identifier: BSD-3-Clause */
/* Cluster routing: a cluster connection (bg_remote_options.cluster) sends
 * each command to the master of its key's slot, following redirections and
 * failovers (CLUSTER ROUTING below); connection.c does the rest. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "remote_internal.h"

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
 * master of every slot range; the client keeps one hiredis context per master,
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

void bg__cluster_node_close(bg_remote *r, size_t i)
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
    BG__REMOTE_TESTING_COUNT(r, connects);
    int rc = bg__remote_open_context(r, n->host, n->port, NULL, &n->c);
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
        if ((rc = bg__remote_exchange(r, r->nodes[i].c, 0, 2, argv, lens, &rep)) != BG_OK) {
            bg__cluster_node_close(r, i);
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
        BG__REMOTE_TESTING_COUNT(r, redirects);
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

int bg__cluster_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
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
        rc = bg__remote_exchange(r, r->c, asking, argc, argv, lens, &rep);
        if (rc != BG_OK) {
            bg__cluster_node_close(r, ni);
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
            BG__REMOTE_TESTING_COUNT(r, redirects);
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
            BG__REMOTE_TESTING_COUNT(r, redirects);
            settle_pause(tries, 0);
            asking = 1;
            ni = to;
        } else if (strncmp(rep->str, "TRYAGAIN", 8) == 0 ||
                   strncmp(rep->str, "CLUSTERDOWN", 11) == 0) {
            freeReplyObject(rep);
            BG__REMOTE_TESTING_COUNT(r, redirects);
            settle_pause(tries, 1);
        } else {
            *reply = rep;
            return BG_OK;
        }
    }
}

int bg__cluster_route(bg_remote *r, int argc, const char **argv, const size_t *lens, size_t *node)
{
    const char *key = NULL;
    size_t klen = 0;
    if (!command_key(argc, argv, lens, &key, &klen))
        return bg__remote_fail(r, BG_EINVAL, "a fanout call without a key");
    return slot_master(r, bg__key_slot(key, klen), node);
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

int bg__cluster_init(bg_remote *r, const char *seeds)
{
    r->slot_node = bg__malloc(BG__SLOTS * sizeof *r->slot_node);
    if (!r->slot_node || node_index(r, r->host, strlen(r->host), r->port) != 0)
        return BG_ENOMEM;
    return seeds ? add_seeds(r, seeds) : BG_OK;
}

int bg__cluster_connect(bg_remote *r)
{
    for (size_t i = 0; i < r->nnodes; i++) {
        bg__cluster_node_close(r, i);
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

void bg__cluster_free(bg_remote *r)
{
    for (size_t i = 0; i < r->nnodes; i++) {
        bg__cluster_node_close(r, i);
        bg__free(r->nodes[i].host);
    }
    r->c = NULL;
    bg__free(r->nodes);
    bg__free(r->slot_node);
}
