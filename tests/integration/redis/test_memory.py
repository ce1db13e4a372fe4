# SPDX-License-Identifier: BSD-3-Clause
"""What small filters cost: MEMORY USAGE of a filter reserved at (0.01, 200),
NONSCALING and scaling, and what such a key really adds to used_memory,
measured over many keys so that jemalloc's slabs and the keyspace's hash
table average out, each at most RedisBloom 2.6.28's; MEMORY USAGE tells the
truth (within 10% of the real cost). Such a key is one block while its
filter has one layer (docs/REDIS.md, memory): its answers, image, digest
and persistence are the library filter's, before and after it grows. What
a grown one costs: LAYERS auto against LAYERS standard."""

import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK, Err  # noqa: E402

KEYS = 100000
BATCH = 1000

# Per (0.01, 200) key named as bench/redis_bench.py names them
# ("small:nonscaling:000000": a 32-byte key string), RedisBloom 2.6.28's
# MEMORY USAGE and the used_memory it adds per key (NONSCALING). Ours:
# one block, 256 bytes (16 of header, 240 of bits) NONSCALING, 320 scaling
# (296 of bits, sized for p / 2 with a margin), plus Redis's robj and
# moduleValue (32) and, in MEMORY USAGE, the key string (32) and dictEntry
# (24): 344 and 408; used_memory also has jemalloc's 32 for the dictEntry
# and the hash table's slot, about 10.5 bytes at 10^5 keys.
RB_USAGE = {"nonscaling": 368, "scaling": 408}
RB_USED = 442
MAX_USAGE = {"nonscaling": 344, "scaling": 408}
MAX_USED = {"nonscaling": 372, "scaling": 436}


def image(c, key):
    """The key's BF.SCANDUMP image, all chunks."""
    it, parts = 0, []
    while True:
        r = c.cmd("BF.SCANDUMP", key, it)
        if r[0] == 0:
            return b"".join(parts)
        it = r[0]
        parts.append(r[1])


class SmallKeys(h.RespTestCase):
    def per_key(self, c, kind, args):
        """MEMORY USAGE of one key, and used_memory's growth per key."""
        self.assertReply(c.cmd("FLUSHALL"), OK)
        used0 = int(h.info_field(c, "memory", "used_memory"))
        for at in range(0, KEYS, BATCH):
            replies = c.pipeline([["BF.RESERVE", "small:%s:%06d" % (kind, i), "0.01", "200"] + args
                                  for i in range(at, at + BATCH)])
            self.assertEqual(replies, [OK] * BATCH)
        used1 = int(h.info_field(c, "memory", "used_memory"))
        return (c.cmd("MEMORY", "USAGE", "small:%s:000007" % kind, "SAMPLES", "0"),
                (used1 - used0) / KEYS)

    def test_small_filters(self):
        s = h.Server()
        self.addCleanup(s.cleanup)
        s.start()
        c = s.conn()
        for name, args in (("nonscaling", ["NONSCALING"]), ("scaling", [])):
            with self.subTest(name):
                usage, used = self.per_key(c, name, args)
                self.assertLessEqual(usage, MAX_USAGE[name])
                self.assertLessEqual(usage, RB_USAGE[name])
                self.assertLessEqual(used, MAX_USED[name])
                self.assertLessEqual(used, RB_USED)
                self.assertLess(abs(usage - used) / used, 0.10,
                                "MEMORY USAGE %d against %.1f bytes of used_memory per key"
                                % (usage, used))


# SHA-256 of BF.SCANDUMP's image of a (0.01, 200) key after BF.MADD of
# item0..item149, then of item150..item399, and DEBUG DIGEST-VALUE at each
# point: what the module made when every filter was the library's (the
# release before compact keys), so that a compact key's image and digest
# are shown to be that filter's, before it grows and after.
PINNED = {
    ("scaling", 150): ("dc26d08387a8134960b7d7b34ebcc492c9e7e3e3508f5f020fa3fc6339aa2dec",
                       b"82580187224fb841c018fd5b36305c65365c2f9f"),
    ("nonscaling", 150): ("6e2173238883441589b3100ec6f0c88288aa29fd54db1f5710d2beccb93f0c47",
                          b"25f6329c9b6b39954c32521e562fc6839d95af01"),
    ("scaling", 400): ("95515037bb57ed6ab0d2104c75b832dea14b3ccc2d6c2d496905d68f29271f62",
                       b"66735ddb54f35b69743ac59d684833242c875d74"),
    ("nonscaling", 400): ("c5db5a46df04e50bbef06ff3a8f5aca51b7f70998662c68686b7b968fab0f20e",
                          b"0d5c99b227ee1025c2f5d556b246b41cbbe82f52"),
}

ABSENT_ITEMS = ["never%d" % i for i in range(5000)]


class SmallKeyGrowth(h.RespTestCase):
    """A small key from one block to the library's filter: the same
    answers, images, digests and BF.INFO as the library's filter gives at
    every step, across DEBUG RELOAD, DUMP/RESTORE, BF.SCANDUMP/LOADCHUNK and
    COPY of either form; the block stays one block until a scaling filter
    grows, and a NONSCALING one never grows."""

    # Each kind's key, and its copies under names of the same length (so
    # that MEMORY USAGE, which counts the name, compares too).
    KEYS = {"scaling": ("sc:0", ["0.01", "200"]),
            "nonscaling": ("ns:0", ["0.01", "200", "NONSCALING"])}

    def state(self, c, key):
        info = c.cmd("BF.INFO", key)
        fields = {bytes(info[i]).decode(): info[i + 1] for i in range(0, len(info), 2)}
        return {
            "image": hashlib.sha256(image(c, key)).hexdigest(),
            "digest": c.cmd("DEBUG", "DIGEST-VALUE", key)[0],
            "info": fields,
            "usage": c.cmd("MEMORY", "USAGE", key, "SAMPLES", "0"),
            "absent": c.cmd("BF.MEXISTS", key, *ABSENT_ITEMS),
        }

    def check_pinned(self, st, kind, items):
        self.assertEqual((st["image"], bytes(st["digest"])), PINNED[(kind, items)])

    def test_growth_and_reload(self):
        s = h.start_server(self)
        c = s.conn()
        st = {}
        for kind, (key, args) in self.KEYS.items():
            self.assertReply(c.cmd("BF.RESERVE", key, *args), OK)
            new = c.cmd("BF.MADD", key, *["item%d" % i for i in range(150)])
            self.assertEqual(len(new), 150)
            st[kind] = self.state(c, key)
            self.check_pinned(st[kind], kind, 150)
            self.assertEqual(st[kind]["info"]["Number of filters"], 1)
            self.assertEqual(st[kind]["info"]["Capacity"], 200)
            self.assertEqual(st[kind]["info"]["Number of items inserted"], sum(new))
            self.assertLessEqual(st[kind]["usage"], 400)  # one block (+ Redis's share)

        with self.subTest("one block across DEBUG RELOAD, DUMP/RESTORE, LOADCHUNK, COPY"):
            self.assertReply(c.cmd("DEBUG", "RELOAD"), OK)
            for kind, (key, _) in self.KEYS.items():
                self.assertEqual(self.state(c, key), st[kind])
                base = key[:-1]
                self.assertReply(c.cmd("RESTORE", base + "r", "0", c.cmd("DUMP", key)), OK)
                self.assertReply(c.cmd("COPY", key, base + "c"), 1)
                it, chunks = 0, []
                while True:
                    r = c.cmd("BF.SCANDUMP", key, it)
                    if r[0] == 0:
                        break
                    it = r[0]
                    chunks.append((r[0], r[1]))
                for it, data in chunks:
                    self.assertReply(c.cmd("BF.LOADCHUNK", base + "l", it, data), OK)
                for copy in "rcl":
                    self.assertEqual(self.state(c, base + copy), st[kind])

        with self.subTest("growth"):
            more = ["item%d" % i for i in range(150, 400)]
            r = c.cmd("BF.MADD", "ns:0", *more)
            self.assertEqual(r[-1], Err(b"ERR non scaling filter is full"))
            self.assertEqual(c.cmd("BF.INFO", "ns:0", "ITEMS"), [200])
            self.assertEqual(c.cmd("BF.ADD", "ns:0", "item0"), 0)
            r = c.cmd("BF.MADD", "sc:0", *more)
            self.assertEqual(len(r), len(more))
            self.assertNotIn(Err(b"ERR problem inserting into filter"), r)
            after = {kind: self.state(c, key) for kind, (key, _) in self.KEYS.items()}
            self.assertEqual(after["scaling"]["info"]["Number of filters"], 2)
            self.assertEqual(after["scaling"]["info"]["Capacity"], 600)
            self.assertGreater(after["scaling"]["usage"], st["scaling"]["usage"])
            self.assertEqual(after["nonscaling"]["usage"], st["nonscaling"]["usage"])
            # Bits are kept: every item, and every absent item that was a
            # false positive, is still found.
            self.assertEqual(c.cmd("BF.MEXISTS", "sc:0", *["item%d" % i for i in range(400)]),
                             [1] * 400)
            for kind in self.KEYS:
                self.assertTrue(all(a >= b for a, b in zip(after[kind]["absent"], st[kind]["absent"])))
            self.check_pinned(after["scaling"], "scaling", 400)
            self.check_pinned(after["nonscaling"], "nonscaling", 400)
            for key in ("sc:c", "ns:c"):  # the copies grow alike
                c.cmd("BF.MADD", key, *more)
            self.assertEqual(self.state(c, "sc:c"), after["scaling"])
            self.assertEqual(self.state(c, "ns:c"), after["nonscaling"])

        with self.subTest("both forms across a restart from RDB"):
            s.restart(save=True)
            c = s.conn()
            for kind, (key, _) in self.KEYS.items():
                self.assertEqual(self.state(c, key), after[kind])

    def test_twin_in_the_library_form(self):
        """A key at a rate the header cannot hold (17 significant digits)
        keeps the library's form; at that rate and 0.01 the sizing gives
        the same m and k, so its twin at 0.01 is one block with the same
        bits: every answer and every BF.INFO field but Size agree, before
        and after growth and across DEBUG RELOAD."""
        s = h.start_server(self)
        c = s.conn()
        odd = "0.0100000000000001"
        for kind, (_, args) in self.KEYS.items():
            with self.subTest(kind):
                flags = args[2:]
                a, b = "a:" + kind, "b:" + kind  # one block; the library's form
                self.assertReply(c.cmd("BF.RESERVE", a, "0.01", "200", *flags), OK)
                self.assertReply(c.cmd("BF.RESERVE", b, odd, "200", *flags), OK)

                def same(label):
                    ia, ib = (dict(zip(*[iter(c.cmd("BF.INFO", k))] * 2)) for k in (a, b))
                    ia.pop(b"Size")
                    ib.pop(b"Size")
                    self.assertEqual(ia, ib, label)
                    self.assertEqual(c.cmd("BF.MEXISTS", a, *ABSENT_ITEMS),
                                     c.cmd("BF.MEXISTS", b, *ABSENT_ITEMS), label)

                same("empty")
                for first in (0, 150):
                    items = ["item%d" % i for i in range(first, first + 150)]
                    self.assertEqual(c.cmd("BF.MADD", a, *items), c.cmd("BF.MADD", b, *items))
                    one = "one%d" % first
                    self.assertEqual(c.cmd("BF.ADD", a, one), c.cmd("BF.ADD", b, one))
                    same("after %d items" % (first + 150))
                    if first == 0:
                        usage = [c.cmd("MEMORY", "USAGE", k, "SAMPLES", "0") for k in (a, b)]
                        self.assertGreater(usage[1], usage[0] + 150)  # the library's three blocks, one
                self.assertReply(c.cmd("DEBUG", "RELOAD"), OK)
                same("reloaded")

    def test_loaded_with_other_arguments(self):
        """A filter saved by a server with other module arguments is kept
        as the library's filter (one that the block would rebuild
        differently): the same digest and answers, the library's memory."""
        s = h.start_server(self)
        c = s.conn()
        self.assertReply(c.cmd("BF.RESERVE", "k", "0.01", "200"), OK)
        c.cmd("BF.MADD", "k", *["item%d" % i for i in range(150)])
        before = self.state(c, "k")
        s.stop(save=True)
        s.module_args = ["MAX_BYTES", str(1 << 30)]
        s.start()
        c = s.conn()
        after = self.state(c, "k")
        self.assertGreater(after.pop("usage"), before.pop("usage"))
        self.assertGreater(after["info"].pop("Size"), before["info"].pop("Size"))
        self.assertEqual(after, before)
        self.assertReply(c.cmd("BF.RESERVE", "fresh", "0.01", "200"), OK)
        self.assertLessEqual(c.cmd("MEMORY", "USAGE", "fresh", "SAMPLES", "0"), 400)


GROWN = 100000  # items added to a key BF.ADD created (capacity 100): 10 layers
ABSENT = 20000


class GrownKeys(h.RespTestCase):
    """LAYERS auto against LAYERS standard (RedisBloom's halving rates): a
    key BF.ADD created and grown has the same capacity and layer count on
    both, costs less under auto, and answers absent items within its error
    rate; a small key costs the same on both."""

    def grow(self, c):
        self.assertEqual(c.cmd("BF.ADD", "g", "start"), 1)
        for at in range(0, GROWN, BATCH):
            c.pipeline([["BF.MADD", "g"] + ["item%d" % i for i in range(at + j, at + j + 100)]
                        for j in range(0, BATCH, 100)])
        info = c.cmd("BF.INFO", "g")
        fields = {bytes(info[i]).decode(): info[i + 1] for i in range(0, len(info), 2)}
        found = 0
        for at in range(0, ABSENT, 100):
            found += sum(c.cmd("BF.MEXISTS", "g", *["never%d" % i for i in range(at, at + 100)]))
        self.assertEqual(c.cmd("BF.RESERVE", "small", "0.01", "200"), OK)
        return (fields["Capacity"], fields["Number of filters"], c.cmd("MEMORY", "USAGE", "g"),
                found / ABSENT, c.cmd("MEMORY", "USAGE", "small"))

    def test_auto_against_standard(self):
        got = {}
        for layers in ("auto", "standard"):
            s = h.start_server(self, module_args=["LAYERS", layers])
            with s.conn() as c:
                got[layers] = self.grow(c)
        auto, std = got["auto"], got["standard"]
        self.assertEqual(auto[:2], std[:2])  # RedisBloom's capacities and layer count
        self.assertEqual(auto[1], 10)  # 100 (2^10 - 1) >= 100001 > 100 (2^9 - 1)
        self.assertLess(auto[2], 0.95 * std[2], "MEMORY USAGE auto %d, standard %d"
                        % (auto[2], std[2]))
        self.assertLessEqual(auto[3], 0.01)
        self.assertLessEqual(std[3], 0.01)
        self.assertEqual(auto[4], std[4])  # a small key is unchanged


if __name__ == "__main__":
    h.main()
