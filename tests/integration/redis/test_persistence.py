# SPDX-License-Identifier: BSD-3-Clause
"""bloomgate filters surviving every way Redis moves a value: SCANDUMP /
LOADCHUNK, RDB (SAVE + restart, DEBUG RELOAD), AOF rewrite + restart,
DUMP / RESTORE, COPY; MEMORY USAGE and DEBUG DIGEST-VALUE; and corrupt
RESTORE payloads and LOADCHUNK chunks answered with an error while the
server keeps running and other keys stay intact."""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK, Err, Status  # noqa: E402
from test_commands import FULL, items, madd_all, mexists_all  # noqa: E402

PONG = Status(b"PONG")
# A key whose chunks are still arriving (bloomgate's own error; RedisBloom
# has no such state: it creates a zeroed filter from the header).
LOADING = Err(b"ERR filter is being loaded by BF.LOADCHUNK")
PROBES = items("probe", 20000)


# ---- Redis's CRC-64 (Jones polynomial, reflected), for DUMP payloads ----------
_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x95AC9329AC4BC9B5 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc64(data):
    crc = 0
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA  # Redis's own test vector


def split_dump(payload):
    """DUMP payload -> (body, rdb version bytes); checks the CRC."""
    body, ver, crc = payload[:-10], payload[-10:-8], payload[-8:]
    assert int.from_bytes(crc, "little") == crc64(body + ver), "DUMP payload CRC mismatch"
    return body, ver


def make_dump(body, ver):
    return body + ver + crc64(body + ver).to_bytes(8, "little")


# ---- building and comparing filters --------------------------------------------


def build_filters(c, prefix=""):
    """A set of filters covering the shapes: several layers, EXPANSION 4,
    full NONSCALING, auto-created, empty. Returns {key: items added}."""
    p = prefix
    made = {}
    assert c.cmd("BF.RESERVE", p + "layers", "0.01", "500") == OK
    made[p + "layers"] = items("L", 6000)
    madd_all(c, p + "layers", made[p + "layers"])
    assert c.cmd("BF.RESERVE", p + "exp4", "0.001", "100", "EXPANSION", "4") == OK
    made[p + "exp4"] = items("E", 1000)
    madd_all(c, p + "exp4", made[p + "exp4"])
    assert c.cmd("BF.RESERVE", p + "full", "0.01", "50", "NONSCALING") == OK
    made[p + "full"] = items("F", 60)
    madd_all(c, p + "full", made[p + "full"])  # the last ones are refused
    made[p + "auto"] = items("A", 300)
    madd_all(c, p + "auto", made[p + "auto"])
    assert c.cmd("BF.RESERVE", p + "empty", "0.05", "10000") == OK
    made[p + "empty"] = []
    return made


def snapshot(c, key, its):
    """Everything a client can observe about a filter."""
    return {
        "info": c.cmd("BF.INFO", key),
        "card": c.cmd("BF.CARD", key),
        "items": mexists_all(c, key, its) if its else [],
        "probes": mexists_all(c, key, PROBES),
        "type": c.cmd("TYPE", key),
    }


def snapshots(c, made):
    return {k: snapshot(c, k, its) for k, its in made.items()}


def scandump(c, key):
    chunks = []
    it = 0
    while True:
        r = c.cmd("BF.SCANDUMP", key, it)
        assert isinstance(r, list) and len(r) == 2, r
        it, data = r
        if it == 0:
            assert h.same(data, b""), "last SCANDUMP chunk must be an empty bulk, got %r" % (data,)
            return chunks
        assert isinstance(it, int) and isinstance(data, bytes) and data, r
        chunks.append((it, data))
        assert len(chunks) < 100000


class Persistence(h.RespTestCase):
    def server(self, **kw):
        s = h.Server(**kw)
        self.addCleanup(s.cleanup)
        s.start()
        return s

    def assertSnapshotsEqual(self, before, after, what):
        for key in before:
            for field in before[key]:
                self.assertReply(after[key][field], before[key][field], "%s: %s %s" % (what, key, field))

    def check_full_stays_full(self, c, key="full"):
        self.assertReply(c.cmd("BF.ADD", key, "brand-new-item"), FULL)

    # -- SCANDUMP / LOADCHUNK --
    def test_scandump_loadchunk_other_server(self):
        a = self.server()
        b = self.server()
        ca, cb = a.conn(), b.conn()
        made = build_filters(ca)
        before = snapshots(ca, made)
        for key in made:
            chunks = scandump(ca, key)
            self.assertGreaterEqual(len(chunks), 1)
            for n, (it, data) in enumerate(chunks):
                self.assertReply(cb.cmd("BF.LOADCHUNK", "copy-" + key, it, data), OK, "%s chunk %d" % (key, n))
        after = {k: snapshot(cb, "copy-" + k, its) for k, its in made.items()}
        self.assertSnapshotsEqual(before, after, "LOADCHUNK on a second server")
        self.check_full_stays_full(cb, "copy-full")
        # The copy is a working filter.
        self.assertReply(cb.cmd("BF.ADD", "copy-layers", "after-load"), 1)
        self.assertReply(cb.cmd("BF.EXISTS", "copy-layers", "after-load"), 1)

    def test_loadchunk_states(self):
        s = self.server()
        c = s.conn()
        self.assertReply(c.cmd("BF.RESERVE", "src", "0.01", "200"), OK)
        its = items("x", 3000)
        madd_all(c, "src", its)
        chunks = scandump(c, "src")
        self.assertGreaterEqual(len(chunks), 2, "a multi-layer filter should dump in more than one chunk")
        # The header never replaces an existing filter.
        self.assertReply(c.cmd("BF.LOADCHUNK", "src", chunks[0][0], chunks[0][1]), Err(b"ERR received bad data"))
        # Nor does a data chunk write into a complete filter (RedisBloom would
        # overwrite its bits behind its counters; dump.c, docs/REDIS.md).
        self.assertReply(c.cmd("BF.LOADCHUNK", "src", chunks[1][0], b"\xff" * len(chunks[1][1])),
                         Err(b"ERR received bad data"))
        self.assertReply(c.cmd("BF.CARD", "src"), snapshot(c, "src", its)["card"])
        self.assertEqual(mexists_all(c, "src", its), [1] * len(its))
        # A non-header chunk needs the key.
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", chunks[1][0], chunks[1][1]), Err(b"ERR not found"))
        self.assertReply(c.cmd("EXISTS", "dst"), 0)
        # Half loaded: the key exists but answers "being loaded".
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", chunks[0][0], chunks[0][1]), OK)
        self.assertReply(c.cmd("EXISTS", "dst"), 1)
        self.assertReply(c.cmd("TYPE", "dst"), Status(b"bloomgate"))
        for cmd in [["BF.ADD", "dst", "a"], ["BF.MADD", "dst", "a"], ["BF.EXISTS", "dst", "a"],
                    ["BF.MEXISTS", "dst", "a"], ["BG.MEXISTS", "dst", "a"], ["BF.INFO", "dst"],
                    ["BF.CARD", "dst"],
                    ["BF.INSERT", "dst", "ITEMS", "a"], ["BF.RESERVE", "dst", "0.01", "10"]]:
            r = c.cmd(*cmd)
            if cmd[0] == "BF.RESERVE":
                self.assertReply(r, Err(b"ERR item exists"), repr(cmd))
            else:
                self.assertReply(r, LOADING, repr(cmd))
        # Chunks of any size are taken: the first data chunk goes in halves.
        it1, data = chunks[1]
        half = len(data) // 2
        first, second = (it1 - len(data) + half, data[:half]), (it1, data[half:])
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", *first), OK)
        # A refused header changes nothing: the load goes on where it was.
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", chunks[0][0], b"garbage"), Err(b"ERR received bad data"))
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", *second), OK)
        for it, data in chunks[2:]:
            self.assertReply(c.cmd("BF.LOADCHUNK", "dst", it, data), OK)
        self.assertEqual(snapshot(c, "dst", its), snapshot(c, "src", its))
        # A header on a key being loaded starts its load over: the bytes so
        # far are dropped, so the second half is no longer the next chunk.
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst2", chunks[0][0], chunks[0][1]), OK)
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst2", *first), OK)
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst2", chunks[0][0], chunks[0][1]), OK)
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst2", *second), Err(b"ERR received bad data"))
        self.assertReply(c.cmd("BF.EXISTS", "dst2", "a"), LOADING)
        for it, data in chunks[1:]:
            self.assertReply(c.cmd("BF.LOADCHUNK", "dst2", it, data), OK)
        self.assertEqual(snapshot(c, "dst2", its), snapshot(c, "src", its))
        # A header never replaces the filter that load made.
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", chunks[0][0], chunks[0][1]), Err(b"ERR received bad data"))
        self.assertEqual(snapshot(c, "dst", its), snapshot(c, "src", its))

    def test_dump_of_a_growing_filter(self):
        """A layer added between two SCANDUMP calls makes the next chunk too
        big for the image its header announced: refused, the key stays being
        loaded, and a dump started again from its header loads the grown
        filter (docs/REDIS.md, differences from RedisBloom)."""
        s = self.server()
        c = s.conn()
        self.assertReply(c.cmd("BF.RESERVE", "src", "0.01", "100"), OK)
        its = items("g", 100)
        madd_all(c, "src", its)
        it0, hdr = c.cmd("BF.SCANDUMP", "src", "0")
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", it0, hdr), OK)
        more = items("h", 50)
        madd_all(c, "src", more)
        self.assertReply(c.cmd("BF.INFO", "src", "FILTERS"), [2], "the adds should open a second layer")
        it1, data = c.cmd("BF.SCANDUMP", "src", it0)
        self.assertReply(c.cmd("BF.LOADCHUNK", "dst", it1, data),
                         Err(b"ERR invalid chunk - Too big for current filter"))
        self.assertReply(c.cmd("BF.EXISTS", "dst", its[0]), LOADING)
        for it, chunk in scandump(c, "src"):
            self.assertReply(c.cmd("BF.LOADCHUNK", "dst", it, chunk), OK)
        self.assertEqual(snapshot(c, "dst", its + more), snapshot(c, "src", its + more))

    def test_corrupt_chunks(self):
        s = self.server()
        c = s.conn()
        self.assertReply(c.cmd("BF.ADD", "keep", "me"), 1)
        self.assertReply(c.cmd("BF.RESERVE", "src", "0.01", "200"), OK)
        madd_all(c, "src", items("x", 3000))
        chunks = scandump(c, "src")
        self.assertGreaterEqual(len(chunks), 2)
        (it0, hdr) = chunks[0]

        def assert_fine():
            self.assertReply(c.cmd("PING"), PONG)
            self.assertReply(c.cmd("BF.EXISTS", "keep", "me"), 1)
            self.assertReply(c.cmd("BF.CARD", "keep"), 1)

        # A bad header: nothing is created.
        for n, bad in enumerate([b"garbage", b"", hdr[:-1], hdr[: len(hdr) // 2], b"\x00" * len(hdr),
                                 bytes([hdr[0] ^ 0xFF]) + hdr[1:], b"\xff" * 4096]):
            self.assertErr(c.cmd("BF.LOADCHUNK", "bad%d" % n, it0, bad), "bad header %d" % n)
            self.assertReply(c.cmd("EXISTS", "bad%d" % n), 0, "bad header %d left a key" % n)
            assert_fine()
        # A header claiming a huge image (total at 88, max bytes at 72, n0 at
        # 48): refused at once, before any allocation; the server stays up.
        for off, val in [(88, 1 << 50), (88, (1 << 63) - 1), (88, (1 << 64) - 1)]:
            huge = hdr[:off] + val.to_bytes(8, "little") + hdr[off + 8:]
            self.assertReply(c.cmd("BF.LOADCHUNK", "huge", it0, huge), Err(b"ERR received bad data"),
                             "header with %d at %d" % (val, off))
            self.assertReply(c.cmd("EXISTS", "huge"), 0)
            assert_fine()
        # The container's own cap (max bytes, at 72) and n0 (at 48) are only
        # checked against the layers, which come later, so a header with huge
        # ones may be taken; but the image must not complete.
        for off, val in [(72, 1 << 60), (48, 1 << 62)]:
            raised = hdr[:off] + val.to_bytes(8, "little") + hdr[off + 8:]
            replies = [c.cmd("BF.LOADCHUNK", "raised", it0, raised)] + [c.cmd("BF.LOADCHUNK", "raised", it, d)
                                                                        for it, d in chunks[1:]]
            self.assertTrue(any(isinstance(r, Err) for r in replies), "%d at %d: %r" % (val, off, replies))
            self.assertReply(c.cmd("EXISTS", "raised"), 0)
            assert_fine()
        # Iterators that make no sense.
        for it in ["0", "-1", "-9223372036854775808", "18446744073709551616"]:
            self.assertErr(c.cmd("BF.LOADCHUNK", "badit", it, hdr), "iterator %s" % it)
        assert_fine()

        def load(key, seq):
            """LOADCHUNK a sequence; replies."""
            return [c.cmd("BF.LOADCHUNK", key, it, data) for it, data in seq]

        src_its = items("x", 3000)
        src_snap = snapshot(c, "src", src_its)

        def assert_not_usable(key, replies, what, allow=()):
            """At least one error reply, and whatever is left of `key` is not
            a complete filter that differs from the source. `allow`: outcomes
            that are also fine without an error ("same": the chunks were all
            there, so an offset-addressed loader may rightly finish the same
            filter; "loading": a missing chunk leaves the key being loaded)."""
            errors = [r for r in replies if isinstance(r, Err)]
            card = c.cmd("BF.CARD", key)
            if card == LOADING:
                state = "loading"
            elif card == 0 and c.cmd("EXISTS", key) == 0:
                state = "absent"
            elif isinstance(card, int) and snapshot(c, key, src_its) == src_snap:
                state = "same"
            else:
                state = "different: card %r" % (card,)
            self.assertFalse(state.startswith("different"), "%s: left a complete, different filter (%s)" % (what, state))
            if not errors:
                self.assertIn(state, allow, "%s: no error reply (%r), key %s" % (what, replies, state))
            assert_fine()

        # Out of order: chunks swapped or sent twice; or one missing.
        if len(chunks) >= 3:
            assert_not_usable("o1", load("o1", [chunks[0], chunks[2]] + chunks[1:2] + chunks[3:]), "swapped chunks",
                              allow=("same",))
        assert_not_usable("o2", load("o2", [chunks[0], chunks[1], chunks[1]] + chunks[2:]), "repeated chunk",
                          allow=("same",))
        assert_not_usable("o3", load("o3", [chunks[0]] + chunks[2:]), "missing chunk", allow=("loading",))
        # Oversized: a data chunk with extra bytes.
        it_last, last = chunks[-1]
        assert_not_usable("big", load("big", chunks[:-1] + [(it_last, last + b"\x00" * 17)]), "oversized last chunk")
        assert_not_usable("big2", load("big2", [chunks[0], (chunks[1][0], chunks[1][1] + b"\x01" * (1 << 20))]),
                          "oversized chunk")
        # A flipped byte in the data: the checksum must catch it.
        for idx in range(0, len(chunks)):
            it, data = chunks[idx]
            for pos in (0, len(data) // 2, len(data) - 1):
                flipped = data[:pos] + bytes([data[pos] ^ 0x10]) + data[pos + 1:]
                seq = chunks[:idx] + [(it, flipped)] + chunks[idx + 1:]
                key = "flip%d_%d" % (idx, pos)
                assert_not_usable(key, load(key, seq), "byte %d of chunk %d flipped" % (pos, idx))
        # Iterator pointing past the filter.
        assert_not_usable("past", load("past", [chunks[0], (10 ** 12, chunks[1][1])]), "iterator past the end")
        # The good sequence still loads afterwards, on the keys that failed too.
        c.cmd("DEL", "big")
        for it, data in chunks:
            self.assertReply(c.cmd("BF.LOADCHUNK", "big", it, data), OK)
        self.assertReply(c.cmd("BF.CARD", "big"), c.cmd("BF.CARD", "src"))
        assert_fine()

    def test_max_bytes_on_load(self):
        # A filter bigger than the loading server's MAX_BYTES is refused by
        # LOADCHUNK (at the header, docs/REDIS.md) and by RESTORE (type.c).
        a = self.server()
        b = self.server(module_args=["MAX_BYTES", "1048576"])
        ca, cb = a.conn(), b.conn()
        self.assertReply(ca.cmd("BF.RESERVE", "big", "0.01", "2000000", "NONSCALING"), OK)
        self.assertReply(cb.cmd("BF.ADD", "keep", "x"), 1)
        chunks = scandump(ca, "big")
        self.assertErr(cb.cmd("BF.LOADCHUNK", "big", *chunks[0]))
        self.assertReply(cb.cmd("EXISTS", "big"), 0)
        self.assertReply(cb.cmd("RESTORE", "big", "0", ca.cmd("DUMP", "big")), Err(b"ERR Bad data format"))
        self.assertReply(cb.cmd("EXISTS", "big"), 0)
        self.assertReply(cb.cmd("PING"), PONG)
        self.assertReply(cb.cmd("BF.EXISTS", "keep", "x"), 1)

    # -- RDB --
    def test_rdb_restart(self):
        s = self.server()
        c = s.conn()
        made = build_filters(c)
        before = snapshots(c, made)
        self.assertReply(c.cmd("SAVE"), OK)
        s.restart()
        s.wait_loaded()
        c = s.conn()
        self.assertSnapshotsEqual(before, snapshots(c, made), "SAVE + restart")
        self.check_full_stays_full(c)
        self.assertReply(c.cmd("BF.ADD", "layers", "after-restart"), 1)

    def test_debug_reload(self):
        s = self.server()
        c = s.conn()
        made = build_filters(c)
        before = snapshots(c, made)
        digests = {k: c.cmd("DEBUG", "DIGEST-VALUE", k) for k in made}
        self.assertReply(c.cmd("DEBUG", "RELOAD"), OK)
        self.assertSnapshotsEqual(before, snapshots(c, made), "DEBUG RELOAD")
        for k in made:
            self.assertReply(c.cmd("DEBUG", "DIGEST-VALUE", k), digests[k], "digest of %s after reload" % k)
        self.check_full_stays_full(c)

    # -- AOF --
    def test_aof_rewrite_restart(self):
        s = self.server(extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"])
        c = s.conn()
        made = build_filters(c)
        self.assertReply(c.cmd("BGREWRITEAOF"), Status(b"Background append only file rewriting started"))
        h.wait_until(lambda: h.info_field(c, "persistence", "aof_rewrite_in_progress") == "0" and
                     h.info_field(c, "persistence", "aof_rewrite_scheduled") == "0", 30, what="AOF rewrite")
        self.assertEqual(h.info_field(c, "persistence", "aof_last_bgrewrite_status"), "ok")
        base = glob.glob(os.path.join(s.dir, "appendonlydir", "*.base.aof"))
        self.assertEqual(len(base), 1, os.listdir(s.dir))
        with open(base[0], "rb") as f:
            text = f.read()
        self.assertTrue(text.startswith(b"*"), "the rewrite should emit commands, starts %r" % text[:16])
        self.assertNotIn(b"REDIS00", text[:16])
        # Writes after the rewrite go to the incremental file.
        madd_all(c, "auto", items("after-rewrite", 50))
        made["auto"] = made["auto"] + items("after-rewrite", 50)
        before = snapshots(c, made)
        s.restart()
        s.wait_loaded()
        c = s.conn()
        self.assertSnapshotsEqual(before, snapshots(c, made), "AOF rewrite + restart")
        self.check_full_stays_full(c)
        # And through DEBUG LOADAOF too.
        self.assertReply(c.cmd("DEBUG", "LOADAOF"), OK)
        self.assertSnapshotsEqual(before, snapshots(c, made), "DEBUG LOADAOF")

    # -- DUMP / RESTORE, COPY --
    def test_dump_restore_copy(self):
        s = self.server()
        c = s.conn()
        made = build_filters(c)
        for key, its in made.items():
            want = snapshot(c, key, its)
            payload = c.cmd("DUMP", key)
            self.assertIsInstance(payload, bytes)
            self.assertReply(c.cmd("RESTORE", "r-" + key, "0", payload), OK)
            self.assertEqual(snapshot(c, "r-" + key, its), want, "RESTORE of %s" % key)
            self.assertReply(c.cmd("RESTORE", "r-" + key, "0", payload),
                             Err(b"BUSYKEY Target key name already exists."))
            self.assertReply(c.cmd("RESTORE", "r-" + key, "0", payload, "REPLACE"), OK)
            # COPY: supported (RedisBloom has no copy callback and replies
            # "ERR not supported for this module key"; docs/REDIS.md).
            self.assertReply(c.cmd("COPY", key, "c-" + key), 1)
            self.assertEqual(snapshot(c, "c-" + key, its), want, "COPY of %s" % key)
            self.assertReply(c.cmd("COPY", key, "c-" + key), 0)
            self.assertReply(c.cmd("DEBUG", "DIGEST-VALUE", "c-" + key), c.cmd("DEBUG", "DIGEST-VALUE", key))
            self.assertReply(c.cmd("DEBUG", "DIGEST-VALUE", "r-" + key), c.cmd("DEBUG", "DIGEST-VALUE", key))
        # The copy is deep: writing to it leaves the original alone.
        self.assertReply(c.cmd("BF.ADD", "c-layers", "only-in-copy"), 1)
        self.assertReply(c.cmd("BF.EXISTS", "layers", "only-in-copy"), 0)
        self.assertReply(c.cmd("BF.CARD", "c-layers"), c.cmd("BF.CARD", "layers") + 1)
        self.assertReply(c.cmd("COPY", "layers", "c-layers", "REPLACE"), 1)
        self.assertReply(c.cmd("BF.EXISTS", "c-layers", "only-in-copy"), 0)
        self.assertReply(c.cmd("DEL", "layers"), 1)
        self.assertReply(c.cmd("BF.EXISTS", "c-layers", made["layers"][0]), 1)
        # RENAME and EXPIRE behave as for any key.
        self.assertReply(c.cmd("RENAME", "c-layers", "renamed"), OK)
        self.assertReply(c.cmd("BF.EXISTS", "renamed", made["layers"][-1]), 1)
        self.assertReply(c.cmd("OBJECT", "ENCODING", "renamed"), b"raw")
        self.assertReply(c.cmd("SETBIT", "renamed", "1", "1"), h.WRONGTYPE)

    def test_memory_usage(self):
        s = self.server()
        c = s.conn()
        used0 = int(h.info_field(c, "memory", "used_memory"))
        self.assertReply(c.cmd("BF.RESERVE", "big", "0.01", "1000000", "NONSCALING"), OK)
        used1 = int(h.info_field(c, "memory", "used_memory"))
        # 1e6 items at 1%: -n ln p / ln^2 2 = 9,585,059 bits at the very least.
        min_bytes = 9585059 // 8
        mu = c.cmd("MEMORY", "USAGE", "big")
        self.assertIsInstance(mu, int)
        self.assertGreaterEqual(mu, min_bytes)
        self.assertLess(mu, 4 * min_bytes)
        size = c.cmd("BF.INFO", "big", "SIZE")[0]
        self.assertGreaterEqual(mu, size, "MEMORY USAGE below BF.INFO Size")
        # The filter's memory goes through Redis's allocator (used_memory, maxmemory).
        self.assertGreaterEqual(used1 - used0, min_bytes)
        # More layers, more memory.
        self.assertReply(c.cmd("BF.RESERVE", "grow", "0.01", "1000"), OK)
        m1 = c.cmd("MEMORY", "USAGE", "grow")
        madd_all(c, "grow", items("g", 10000))
        m2 = c.cmd("MEMORY", "USAGE", "grow")
        self.assertGreater(m2, 4 * m1)
        self.assertReply(c.cmd("DEL", "big"), 1)
        used2 = int(h.info_field(c, "memory", "used_memory"))
        self.assertLess(used2, used1 - min_bytes // 2, "DEL should free the filter")

    def test_digest(self):
        s = self.server()
        c = s.conn()
        for k in ("d1", "d2", "d3"):
            self.assertReply(c.cmd("BF.RESERVE", k, "0.01", "100"), OK)
        empty = c.cmd("DEBUG", "DIGEST-VALUE", "d1")
        self.assertIsInstance(empty, list)
        for k in ("d1", "d2", "d3"):
            madd_all(c, k, items("same", 500))
        self.assertReply(c.cmd("BF.ADD", "d3", "different"), 1)
        d1, d2, d3 = (c.cmd("DEBUG", "DIGEST-VALUE", k)[0] for k in ("d1", "d2", "d3"))
        self.assertIsInstance(d1, bytes)
        self.assertEqual(d1, d2)
        self.assertNotEqual(d1, d3)
        self.assertNotEqual(d1, empty[0])
        self.assertNotEqual(d1, Status(b"0" * 40))

    # -- corrupt RESTORE payloads --
    def test_corrupt_restore(self):
        # No LZF: with compression a flipped byte often only changes a
        # back-reference into a run of zeros, and the module gets the very
        # same image (which it rightly accepts); uncompressed, every byte of
        # the payload is a byte the module reads.
        s = self.server(extra=["--rdbcompression", "no"])
        c = s.conn()
        self.assertReply(c.cmd("SET", "keep", "v"), OK)
        self.assertReply(c.cmd("BF.ADD", "keepbf", "x"), 1)
        self.assertReply(c.cmd("BF.RESERVE", "src", "0.01", "50"), OK)
        madd_all(c, "src", items("x", 300))  # three layers
        payload = c.cmd("DUMP", "src")
        body, ver = split_dump(payload)
        card = c.cmd("BF.CARD", "src")

        def assert_fine():
            self.assertReply(c.cmd("PING"), PONG)
            self.assertReply(c.cmd("GET", "keep"), b"v")
            self.assertReply(c.cmd("BF.EXISTS", "keepbf", "x"), 1)

        # Bytes flipped without fixing the CRC: Redis's own check.
        bad = bytearray(payload)
        bad[len(bad) // 2] ^= 0xFF
        self.assertReply(c.cmd("RESTORE", "t", "0", bytes(bad)),
                         Err(b"ERR DUMP payload version or checksum are wrong"))
        self.assertReply(c.cmd("EXISTS", "t"), 0)

        def try_restore(data, what, must_fail):
            r = c.cmd("RESTORE", "t", "0", make_dump(data, ver), "REPLACE")
            if must_fail:
                self.assertErr(r, what)
            if r == OK:
                # Accepted: only fine if it is the very same filter (it DUMPs
                # to the original payload); and nothing may crash using it.
                same = c.cmd("DUMP", "t") == payload
                for cmd in (["BF.INFO", "t"], ["BF.EXISTS", "t", "x:1"], ["BF.ADD", "t", "new"],
                            ["BF.SCANDUMP", "t", "0"], ["MEMORY", "USAGE", "t"], ["DEBUG", "DIGEST-VALUE", "t"]):
                    c.cmd(*cmd)
                c.cmd("DEL", "t")
                assert_fine()
                return "same" if same else "different"
            else:
                self.assertErr(r, what)
                self.assertReply(c.cmd("EXISTS", "t"), 0, what)
            assert_fine()
            return r

        # Truncated module data (CRC fixed so that the module sees it).
        for cut in sorted({1, 2, 8, 9, 16, 64, len(body) // 2, len(body) - 12}):
            if cut < len(body) - 1:
                try_restore(body[: len(body) - cut], "truncated by %d" % cut, True)
        # A flipped byte anywhere in the module's data (CRC fixed): the
        # filter image's own checksum or field checks must refuse it. The
        # first 10 bytes are Redis's (RDB type 7, module id): changing them
        # makes another type's value, Redis's business, not ours.
        self.assertEqual(body[0], 7)
        accepted = []
        step = max(1, len(body) // 400)
        for pos in range(10, len(body), step):
            m = bytearray(body)
            m[pos] ^= 0x04
            if try_restore(bytes(m), "byte %d flipped" % pos, False) == "different":
                accepted.append(pos)
        self.assertEqual(accepted, [], "corrupt payloads accepted as a different filter at offsets %s of %d"
                         % (accepted, len(body)))
        # Fields claiming huge sizes: 8 bytes of 0xff / 0x7f.. at every offset
        # of the first 400 bytes (lengths, counts, m, capacity, whatever is there).
        for pos in range(10, min(len(body) - 8, 400)):
            for pat in (b"\xff" * 8, b"\xff\xff\xff\xff\xff\xff\xff\x7f", b"\x00\x00\x00\x00\x00\x01\x00\x00"):
                m = body[:pos] + pat + body[pos + 8:]
                if m != body:
                    self.assertNotEqual(try_restore(m, "huge at %d" % pos, False), "different",
                                        "8 bytes %s at %d accepted" % (pat.hex(), pos))
        # The original still restores.
        self.assertReply(c.cmd("RESTORE", "t", "0", payload, "REPLACE"), OK)
        self.assertReply(c.cmd("BF.CARD", "t"), card)


if __name__ == "__main__":
    h.main()
