# SPDX-License-Identifier: BSD-3-Clause
"""Each of the remote client's scripts on its own: src/remote/lua/<name>.lua
run by `redis-cli --eval` against a real redis-server, a small case each
(replies, errors, effects on the keys), as docs/PROTOCOL.md and the
scripts' headers describe them. test_every_script_has_a_case fails when a
.lua file has no test_<name> here.

The module_* scripts need bloomgate.so ($BLOOMGATE_MODULE); without it they
are skipped."""

import os
import re
import unittest

import lua_cli
from lua_cli import ScriptError, harness

MODULE = os.environ.get("BLOOMGATE_MODULE") or None
HAVE_MODULE = bool(MODULE and os.path.isfile(MODULE))

META, NAME = "{f}:meta", "{f}"
M, K, SEED, LINEAGE = 64, 3, 42, 7
STAGE_TTL = 600000


def bits_key(gen):
    return "%s:bits:%s" % (NAME, gen)


class ScriptCase(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        cls._cleanups = []
        kw = {"load_module": True, "module": MODULE} if HAVE_MODULE else {"load_module": False}
        cls.server = harness.start_server(cls._cleanups, **kw)

    @classmethod
    def tearDownClass(cls):
        for c in cls._cleanups:
            c()

    def setUp(self):
        self.c = self.server.conn()
        self.assertEqual(self.c.cmd("FLUSHALL"), harness.OK)

    def tearDown(self):
        self.c.close()

    def run_lua(self, name, keys=(), args=()):
        return lua_cli.run(self.server.port, name, keys, args)

    def assertError(self, reply, prefix):
        self.assertIsInstance(reply, ScriptError, "expected %s, got %r" % (prefix, reply))
        self.assertTrue(reply.message.startswith(prefix), reply.message)

    # -- helpers: a filter as the client makes it --------------------------

    def stage(self, key, m=M):
        """The bit array the client makes before a script adopts it."""
        self.assertEqual(self.c.cmd("SET", key, b"\0" * ((m + 7) // 8), "PX", STAGE_TTL), harness.OK)

    def create(self, gen=LINEAGE, m=M, k=K, seed=SEED, place=""):
        self.stage(bits_key(gen), m)
        r = self.run_lua("create", [META, bits_key(gen)],
                         [gen, m, k, seed, (m + 7) // 8, 10, "0.01", place])
        self.assertEqual(r, "OK")

    def shape(self, gen=LINEAGE, k=K, m=M, seed=SEED, lineage=LINEAGE):
        """CHECK's ARGV[1..5]."""
        return [gen, k, m, seed, lineage]

    def meta(self):
        r = self.c.cmd("HGETALL", META)
        return {r[i].decode(): r[i + 1].decode() for i in range(0, len(r), 2)}

    def bit(self, key, i):
        return self.c.cmd("GETBIT", key, str(i))

    # -- the bitmap backend ------------------------------------------------

    def test_create(self):
        self.stage(bits_key(7), 16)  # the wrong size for m = 64
        r = self.run_lua("create", [META, bits_key(7)], [7, M, K, SEED, 8, 10, "0.01", ""])
        self.assertError(r, "ERR bloomgate: the bit array has the wrong size")
        self.assertEqual(self.c.cmd("EXISTS", bits_key(7)), 0)
        self.create()
        self.assertEqual(self.meta(), {
            "format": "1", "variant": "standard", "bits": "64", "hashes": "3", "seed": "42",
            "generation": "7", "items": "0", "capacity": "10", "error_rate": "0.01",
            "lineage": "7"})
        self.assertEqual(self.c.cmd("PTTL", bits_key(7)), -1)
        self.assertEqual(self.c.cmd("GET", bits_key(7)), b"\0" * 8)
        self.stage(bits_key(8))
        r = self.run_lua("create", [META, bits_key(8)], [8, M, K, SEED, 8, 10, "0.01", ""])
        self.assertError(r, "BGEXISTS")
        self.assertEqual(self.c.cmd("EXISTS", bits_key(8)), 0)
        # A sharded filter of that name; and a shard's place.
        self.c.cmd("SET", "{g}:shards", "x")
        self.stage("{g}:bits:1")
        r = self.run_lua("create", ["{g}:meta", "{g}:bits:1"], [1, M, K, SEED, 8, 0, "0", ""])
        self.assertError(r, "BGEXISTS")
        self.stage("{h}:bits:1")
        r = self.run_lua("create", ["{h}:meta", "{h}:bits:1"], [1, M, K, SEED, 8, 0, "0", "0/2"])
        self.assertEqual(r, "OK")
        self.assertEqual(self.c.cmd("HGET", "{h}:meta", "shard"), b"0/2")

    def check_add(self, name):
        self.create()
        keys = [META, bits_key(7)]
        # Two keys, k = 3 positions each; the second shares one bit.
        pos = [1, 5, 9, 2, 9, 63]
        self.assertEqual(self.run_lua(name, keys, self.shape() + [0, 0] + pos), [1, 1])
        self.assertEqual(self.run_lua(name, keys, self.shape() + [0, 0] + pos), [0, 0])
        self.assertEqual(self.c.cmd("GET", bits_key(7)), b"\x64\x40\x00\x00\x00\x00\x00\x01")
        self.assertEqual(self.meta()["items"], "2")
        # The refusals, which write nothing.
        other = self.shape(gen=9, seed=43)
        self.assertError(self.run_lua(name, keys, other + [0, 0, 3, 4, 5]), "BGSTALE")
        self.assertError(self.run_lua(name, keys, self.shape() + [5, 3, 3, 4, 5, 6, 7, 8]),
                         "BGREBUILD")
        self.assertError(self.run_lua(name, ["{x}:meta", "{x}:bits:7"], self.shape() + [0, 0, 3, 4, 5]),
                         "BGNOTFOUND filter does not exist")
        self.assertEqual(self.bit(bits_key(7), 3), 0)
        self.c.cmd("APPEND", bits_key(7), "x")
        self.assertError(self.run_lua(name, keys, self.shape() + [0, 0, 3, 4, 5]),
                         "ERR bloomgate: the bit array has 9 bytes, not the 8 of 64 bits")
        self.c.cmd("DEL", bits_key(7))
        self.assertError(self.run_lua(name, keys, self.shape() + [0, 0, 3, 4, 5]),
                         "BGNOTFOUND bit array is missing")

    def check_get(self, name):
        self.create()
        keys = [META, bits_key(7)]
        self.run_lua("add_setbit", keys, self.shape() + [0, 0, 1, 5, 9])
        r = self.run_lua(name, keys, self.shape() + [0, 0, 1, 5, 9, 1, 5, 10])
        self.assertEqual(r, [1, 0])
        self.assertError(self.run_lua(name, keys, self.shape(gen=8, k=4) + [0, 0, 1, 5, 9, 10]),
                         "BGSTALE")
        # The generation moved on under the same shape (a publish): the
        # script reads the current bits and says which generation they are.
        self.stage(bits_key(8))
        self.c.cmd("SETBIT", bits_key(8), "10", "1")
        self.assertEqual(self.run_lua("publish", [META, bits_key(8)],
                                      [8, M, K, SEED, 8, 10, "0.01", 1, ""]), "OK")
        self.assertEqual(self.run_lua(name, keys, self.shape() + [0, 0, 1, 5, 9, 10, 10, 10]),
                         [0, 1, "8"])
        self.assertEqual(self.c.cmd("HGET", META, "lineage"), b"7")

    def test_add_setbit(self):
        self.check_add("add_setbit")

    def test_add_bitfield(self):
        self.check_add("add_bitfield")

    def test_get_setbit(self):
        self.check_get("get_setbit")

    def test_get_bitfield(self):
        self.check_get("get_bitfield")

    def test_stats(self):
        self.create()
        keys = [META, bits_key(7)]
        self.run_lua("add_setbit", keys, self.shape() + [0, 0, 1, 5, 9, 2, 9, 63])
        self.assertEqual(self.run_lua("stats", keys, self.shape()), ["2", 5, "7"])
        self.assertError(self.run_lua("stats", ["{x}:meta", "{x}:bits:7"], self.shape()),
                         "BGNOTFOUND")

    def test_expire(self):
        self.create()
        keys = [META, bits_key(7)]
        self.assertEqual(self.run_lua("expire", keys, self.shape() + [100000]), 1)
        for key in keys:
            ttl = self.c.cmd("PTTL", key)
            self.assertTrue(0 < ttl <= 100000, (key, ttl))
        self.assertError(self.run_lua("expire", keys, self.shape(gen=8, m=128) + [1000]),
                         "BGSTALE")

    def test_fetch(self):
        self.create()
        keys = [META, bits_key(7)]
        self.run_lua("add_setbit", keys, self.shape() + [0, 0, 0, 8, 63])
        self.assertEqual(self.run_lua("fetch", keys, self.shape() + [0, 7]),
                         ["7", "1", "\x80\x80\x00\x00\x00\x00\x00\x01"])
        self.assertEqual(self.run_lua("fetch", keys, self.shape() + [7, 7]), ["7", "1", "\x01"])

    def test_drop(self):
        self.create()
        keys = [META, bits_key(7)]
        self.assertError(self.run_lua("drop", keys, self.shape(gen=9, seed=1)), "BGSTALE")
        self.assertEqual(self.run_lua("drop", keys, self.shape()), 2)
        self.assertEqual(self.c.cmd("EXISTS", META, bits_key(7)), 0)
        self.assertError(self.run_lua("drop", keys, self.shape()), "BGNOTFOUND")

    def test_publish(self):
        self.create()
        self.run_lua("add_setbit", [META, bits_key(7)], self.shape() + [0, 0, 1, 2, 3])
        self.c.cmd("PEXPIRE", META, "100000")
        # A new generation of another shape replaces the filter, keeps the
        # lineage and the time to live, and deletes the old bits.
        self.stage(bits_key(9), 128)
        r = self.run_lua("publish", [META, bits_key(9)], [9, 128, 5, 1, 16, 20, "0.02", 4, ""])
        self.assertEqual(r, "OK")
        meta = self.meta()
        self.assertEqual((meta["generation"], meta["bits"], meta["hashes"], meta["seed"],
                          meta["items"], meta["lineage"]), ("9", "128", "5", "1", "4", "7"))
        self.assertEqual(self.c.cmd("EXISTS", bits_key(7)), 0)
        self.assertTrue(self.c.cmd("PTTL", bits_key(9)) > 0)
        # The refusals.
        r = self.run_lua("publish", [META, bits_key(10)], [10, M, K, SEED, 8, 10, "0.01", 0, ""])
        self.assertError(r, "BGNOTFOUND the upload expired")
        self.stage(bits_key(10), 8)
        r = self.run_lua("publish", [META, bits_key(10)], [10, M, K, SEED, 8, 10, "0.01", 0, ""])
        self.assertError(r, "ERR bloomgate: the uploaded bit array has the wrong size")
        self.stage(bits_key(10))
        r = self.run_lua("publish", [META, bits_key(10)], [10, M, K, 2, 8, 10, "0.01", 0, "1/2"])
        self.assertError(r, "BGEXISTS {f}:meta: its seed is 1, not 2")
        self.stage(bits_key(10))
        r = self.run_lua("publish", [META, bits_key(10)], [10, M, K, 1, 8, 10, "0.01", 0, "1/2"])
        self.assertEqual(r, "OK")  # a filter of its own may become a shard
        self.stage(bits_key(11))
        r = self.run_lua("publish", [META, bits_key(11)], [11, M, K, 1, 8, 10, "0.01", 0, "0/2"])
        self.assertError(r, "BGEXISTS {f}:meta: it is shard 1/2, not 0/2")
        self.assertEqual(self.c.cmd("EXISTS", bits_key(11)), 0)
        self.stage(bits_key(11))
        r = self.run_lua("publish", [META, bits_key(11)], [11, M, K, 1, 8, 10, "0.01", 0, ""])
        self.assertError(r, "BGEXISTS {f}:meta: it is shard 1/2 of a sharded filter")
        self.c.cmd("DEL", META)
        self.c.cmd("SET", "{f}:shards", "x")
        self.stage(bits_key(12))
        r = self.run_lua("publish", [META, bits_key(12)], [12, M, K, 1, 8, 10, "0.01", 0, ""])
        self.assertError(r, "BGEXISTS a sharded filter has this name")

    def begin(self, gen=20, m=128, k=4, seed=5, lease=60000):
        self.stage(bits_key(gen), m)
        return self.run_lua("rebuild_begin", [META, bits_key(7), bits_key(gen)],
                            self.shape() + [gen, m, k, seed, (m + 7) // 8, 30, "0.001", lease])

    def test_rebuild_begin(self):
        self.create()
        self.assertEqual(self.begin(), "7")
        meta = self.meta()
        self.assertEqual((meta["next"], meta["next_bits"], meta["next_hashes"], meta["next_seed"],
                          meta["next_capacity"], meta["next_error_rate"], meta["next_items"],
                          meta["next_lease_ms"]), ("20", "128", "4", "5", "30", "0.001", "0", "60000"))
        self.assertTrue(int(meta["next_lease"]) > 0)
        self.assertEqual(self.c.cmd("PTTL", bits_key(20)), -1)
        self.assertError(self.begin(gen=21), "BGEXISTS a rebuild is pending: generation 20")
        self.assertEqual(self.c.cmd("EXISTS", bits_key(21)), 0)
        # An add must name the pending rebuild, and then writes both.
        keys = [META, bits_key(7)]
        self.assertError(self.run_lua("add_setbit", keys, self.shape() + [0, 0, 1, 2, 3]), "BGREBUILD")
        r = self.run_lua("add_setbit", keys, self.shape() + [20, 4, 1, 2, 3, 100, 101, 102, 127])
        self.assertEqual(r, [1])
        self.assertEqual([self.bit(bits_key(20), i) for i in (100, 101, 102, 127, 1)], [1, 1, 1, 1, 0])
        self.assertEqual(self.meta()["next_items"], "1")
        # A lease that ran out: the next add cancels the rebuild.
        self.c.cmd("HSET", META, "next_lease", "1")
        r = self.run_lua("add_setbit", keys, self.shape() + [20, 4, 1, 2, 3, 100, 101, 102, 127])
        self.assertError(r, "BGREBUILD")
        self.assertNotIn("next", self.meta())
        self.assertEqual(self.c.cmd("EXISTS", bits_key(20)), 0)

    def test_rebuild_add(self):
        self.create()
        self.begin()
        keys = [META, bits_key(20)]
        self.c.cmd("HSET", META, "next_lease", "1")  # renewed by the add
        self.assertEqual(self.run_lua("rebuild_add", keys, [20, 4, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8]),
                         [1, 0, 1])
        meta = self.meta()
        self.assertEqual(meta["next_items"], "2")
        self.assertTrue(int(meta["next_lease"]) > 1)
        self.assertEqual(self.c.cmd("BITCOUNT", bits_key(20)), 8)
        self.assertError(self.run_lua("rebuild_add", [META, bits_key(21)], [21, 4, 1, 2, 3, 4]),
                         "BGSTALE the rebuild was committed, aborted or replaced")
        self.c.cmd("DEL", bits_key(20))
        self.assertError(self.run_lua("rebuild_add", keys, [20, 4, 1, 2, 3, 4]),
                         "BGSTALE the rebuild was cancelled: its bit array was lost")
        self.assertNotIn("next", self.meta())
        self.assertError(self.run_lua("rebuild_add", ["{x}:meta", "{x}:bits:1"], [1, 1, 1]),
                         "BGNOTFOUND")

    def test_rebuild_commit(self):
        self.create()
        self.begin()
        self.run_lua("rebuild_add", [META, bits_key(20)], [20, 4, 1, 2, 3, 4])
        self.assertError(self.run_lua("rebuild_commit", [META, bits_key(21)], [21]), "BGSTALE")
        self.assertEqual(self.run_lua("rebuild_commit", [META, bits_key(20)], [20]), "7")
        meta = self.meta()
        self.assertEqual((meta["generation"], meta["bits"], meta["hashes"], meta["seed"],
                          meta["capacity"], meta["error_rate"], meta["items"], meta["lineage"]),
                         ("20", "128", "4", "5", "30", "0.001", "1", "7"))
        self.assertFalse([f for f in meta if f.startswith("next")])
        self.assertEqual(self.c.cmd("EXISTS", bits_key(7)), 0)
        # A retry (its reply lost) succeeds.
        self.assertEqual(self.run_lua("rebuild_commit", [META, bits_key(20)], [20]), "20")
        self.assertError(self.run_lua("rebuild_commit", ["{x}:meta", "{x}:bits:1"], [1]),
                         "BGNOTFOUND")

    def test_rebuild_abort(self):
        self.create()
        self.assertEqual(self.run_lua("rebuild_abort", [META], [""]), 0)
        self.begin()
        self.assertEqual(self.run_lua("rebuild_abort", [META], [21]), 0)
        self.assertEqual(self.run_lua("rebuild_abort", [META], [20]), 1)
        self.assertNotIn("next", self.meta())
        self.assertEqual(self.c.cmd("EXISTS", bits_key(20)), 0)
        self.begin(gen=22)
        self.assertEqual(self.run_lua("rebuild_abort", [META], [""]), 1)
        self.assertEqual(self.c.cmd("EXISTS", bits_key(22)), 0)

    # -- the module backend ------------------------------------------------

    def need_module(self):
        if not HAVE_MODULE:
            self.skipTest("bloomgate.so not built (BLOOMGATE_MODULE unset)")

    def reserve(self, key, *extra):
        self.assertEqual(self.c.cmd("BF.RESERVE", key, "0.01", "100", *extra), harness.OK)

    def test_module_stage(self):
        self.need_module()
        r = self.run_lua("module_stage", ["{u}:staging:1"], [STAGE_TTL, "0.01", 100])
        self.assertEqual(r, 1)
        self.assertEqual(self.c.cmd("TYPE", "{u}:staging:1"), harness.status("bloomgate"))
        self.assertTrue(0 < self.c.cmd("PTTL", "{u}:staging:1") <= STAGE_TTL)
        self.assertIsInstance(self.run_lua("module_stage", ["{u}:staging:1"], [1000, "0.01", 100]),
                              ScriptError)

    def test_module_stage_commit(self):
        self.need_module()
        self.run_lua("module_stage", ["{u}:staging:1"], [STAGE_TTL, "0.01", 100])
        self.assertEqual(self.run_lua("module_stage_commit", ["{u}:staging:1", "u"]), 1)
        self.assertEqual(self.c.cmd("PTTL", "u"), -1)
        self.assertEqual(self.run_lua("module_stage_commit", ["{u}:staging:1", "u"]), -1)
        self.run_lua("module_stage", ["{u}:staging:2"], [STAGE_TTL, "0.01", 100])
        self.assertEqual(self.run_lua("module_stage_commit", ["{u}:staging:2", "u"]), 0)
        self.assertEqual(self.c.cmd("EXISTS", "{u}:staging:2"), 0)

    def test_module_query(self):
        self.need_module()
        self.assertError(self.run_lua("module_query", ["u"], ["a"]), "BGNOTFOUND")
        self.c.cmd("RPUSH", "l", "x")
        self.assertError(self.run_lua("module_query", ["l"], ["a"]), "WRONGTYPE")
        self.reserve("u")
        self.c.cmd("BF.ADD", "u", "a")
        self.assertEqual(self.run_lua("module_query", ["u"], ["a", "b"]), [1, 0])
        many = ["k%d" % i for i in range(1500)]
        self.assertEqual(self.run_lua("module_query", ["u"], many + ["a"]), [0] * 1500 + [1])

    def test_module_add_both(self):
        self.need_module()
        self.reserve("u")
        self.assertEqual(self.run_lua("module_add_both", ["u", "{u}:rebuild"], ["a", "b"]), [1, 1])
        self.reserve("{u}:rebuild:1")
        self.c.cmd("HSET", "{u}:rebuild", "key", "{u}:rebuild:1", "lease", "60000")
        self.assertEqual(self.run_lua("module_add_both", ["u", "{u}:rebuild"], ["a", "c"]), [0, 1])
        self.assertEqual(self.c.cmd("BF.MEXISTS", "{u}:rebuild:1", "a", "b", "c"), [1, 0, 1])
        # A marker whose rebuild is gone is deleted.
        self.c.cmd("DEL", "{u}:rebuild:1")
        self.run_lua("module_add_both", ["u", "{u}:rebuild"], ["d"])
        self.assertEqual(self.c.cmd("EXISTS", "{u}:rebuild"), 0)
        self.assertIsInstance(self.run_lua("module_add_both", ["v", "{v}:rebuild"], ["a"]), ScriptError)

    def test_module_rebuild_begin(self):
        self.need_module()
        keys = ["u", "{u}:rebuild", "{u}:rebuild:1"]
        self.assertError(self.run_lua("module_rebuild_begin", keys, [60000, "0.001", 500]),
                         "BGNOTFOUND")
        self.reserve("u")
        self.assertEqual(self.run_lua("module_rebuild_begin", keys, [60000, "0.001", 500]), 1)
        self.assertEqual(self.c.cmd("HGET", "{u}:rebuild", "key"), b"{u}:rebuild:1")
        for key in keys[1:]:
            self.assertTrue(0 < self.c.cmd("PTTL", key) <= 60000)
        keys2 = ["u", "{u}:rebuild", "{u}:rebuild:2"]
        self.assertError(self.run_lua("module_rebuild_begin", keys2, [60000, "0.001", 500]),
                         "BGEXISTS")

    def test_module_rebuild_add(self):
        self.need_module()
        self.reserve("u")
        self.run_lua("module_rebuild_begin", ["u", "{u}:rebuild", "{u}:rebuild:1"], [60000, "0.001", 500])
        r = self.run_lua("module_rebuild_add", ["{u}:rebuild", "{u}:rebuild:1"], [90000, "a", "b", "a"])
        self.assertEqual(r, [1, 1, 0])
        self.assertTrue(60000 < self.c.cmd("PTTL", "{u}:rebuild:1") <= 90000)
        self.assertTrue(60000 < self.c.cmd("PTTL", "{u}:rebuild") <= 90000)
        self.assertError(self.run_lua("module_rebuild_add", ["{u}:rebuild", "{u}:rebuild:2"], [1000, "a"]),
                         "BGSTALE")

    def test_module_rebuild_commit(self):
        self.need_module()
        self.reserve("u")
        self.c.cmd("PEXPIRE", "u", "100000")
        keys = ["{u}:rebuild", "{u}:rebuild:1", "u"]
        self.run_lua("module_rebuild_begin", ["u", "{u}:rebuild", "{u}:rebuild:1"], [60000, "0.001", 500])
        self.run_lua("module_rebuild_add", keys[:2], [60000, "a"])
        self.assertError(self.run_lua("module_rebuild_commit", ["{u}:rebuild", "{u}:rebuild:2", "u"], [1000]),
                         "BGSTALE")
        self.assertEqual(self.run_lua("module_rebuild_commit", keys, [60000]), 1)
        self.assertEqual(self.c.cmd("BF.EXISTS", "u", "a"), 1)
        self.assertTrue(60000 < self.c.cmd("PTTL", "u") <= 100000)
        self.assertEqual(self.c.cmd("HGETALL", "{u}:rebuild"), [b"done", b"{u}:rebuild:1"])
        self.assertEqual(self.run_lua("module_rebuild_commit", keys, [60000]), 1)  # a retry
        self.c.cmd("DEL", "u")
        self.assertError(self.run_lua("module_rebuild_commit", keys, [60000]), "BGNOTFOUND")

    def test_module_rebuild_abort(self):
        self.need_module()
        self.reserve("u")
        self.assertEqual(self.run_lua("module_rebuild_abort", ["{u}:rebuild"], [""]), 0)
        self.run_lua("module_rebuild_begin", ["u", "{u}:rebuild", "{u}:rebuild:1"], [60000, "0.001", 500])
        self.assertEqual(self.run_lua("module_rebuild_abort", ["{u}:rebuild"], ["{u}:rebuild:2"]), 0)
        self.assertEqual(self.run_lua("module_rebuild_abort", ["{u}:rebuild"], ["{u}:rebuild:1"]), 1)
        self.assertEqual(self.c.cmd("EXISTS", "{u}:rebuild", "{u}:rebuild:1"), 0)

    def test_module_drop(self):
        self.need_module()
        self.reserve("u")
        self.run_lua("module_rebuild_begin", ["u", "{u}:rebuild", "{u}:rebuild:1"], [60000, "0.001", 500])
        self.assertEqual(self.run_lua("module_drop", ["u", "{u}:rebuild"]), 1)
        self.assertEqual(self.c.cmd("EXISTS", "u", "{u}:rebuild", "{u}:rebuild:1"), 0)
        self.assertEqual(self.run_lua("module_drop", ["u", "{u}:rebuild"]), 0)

    def dump(self, key):
        """BF.SCANDUMP's chunks of key: [(iterator, bytes)]."""
        out, it = [], 0
        while True:
            it, data = self.c.cmd("BF.SCANDUMP", key, str(it))
            if it == 0:
                return out
            out.append((it, data))

    def test_module_publish_chunk(self):
        self.need_module()
        self.reserve("src")
        self.c.cmd("BF.ADD", "src", "a")
        for it, data in self.dump("src"):
            # A chunk is binary (NUL bytes), which no argv word can hold:
            # the script goes by EVAL through a raw client here.
            r = self.c.cmd("EVAL", lua_cli.source("module_publish_chunk"), "1", "{u}:publish:1",
                           "60000", str(it), data)
            self.assertEqual(r, 1)
        self.assertEqual(self.c.cmd("BF.EXISTS", "{u}:publish:1", "a"), 1)
        self.assertTrue(0 < self.c.cmd("PTTL", "{u}:publish:1") <= 60000)
        # redis-cli --eval with a chunk that is plain text: refused, and the
        # error is the module's.
        r = self.run_lua("module_publish_chunk", ["{u}:publish:2"], [60000, 1, "not an image"])
        self.assertIsInstance(r, ScriptError)

    def test_module_publish_commit(self):
        self.need_module()
        keys = ["{u}:publish:1", "u", "{u}:rebuild"]
        self.assertError(self.run_lua("module_publish_commit", keys), "BGNOTFOUND")
        self.reserve("u")
        self.c.cmd("PEXPIRE", "u", "100000")
        self.run_lua("module_rebuild_begin", ["u", "{u}:rebuild", "{u}:rebuild:9"], [60000, "0.001", 500])
        self.reserve("{u}:publish:1")
        self.c.cmd("BF.ADD", "{u}:publish:1", "a")
        self.assertEqual(self.run_lua("module_publish_commit", keys), 1)
        self.assertEqual(self.c.cmd("BF.EXISTS", "u", "a"), 1)
        self.assertTrue(0 < self.c.cmd("PTTL", "u") <= 100000)
        self.assertEqual(self.c.cmd("EXISTS", "{u}:publish:1", "{u}:rebuild", "{u}:rebuild:9"), 0)
        self.c.cmd("RPUSH", "l", "x")
        self.reserve("{l}:publish:1")
        self.assertError(self.run_lua("module_publish_commit", ["{l}:publish:1", "l", "{l}:rebuild"]),
                         "WRONGTYPE")
        self.assertEqual(self.c.cmd("EXISTS", "{l}:publish:1"), 0)

    def test_module_fetch_copy(self):
        self.need_module()
        keys = ["u", "{u}:fetch:1"]
        self.assertError(self.run_lua("module_fetch_copy", keys, [60000]), "BGNOTFOUND")
        self.reserve("u")
        self.c.cmd("BF.ADD", "u", "a")
        self.assertEqual(self.run_lua("module_fetch_copy", keys, [60000]), 1)
        self.assertEqual(self.c.cmd("BF.EXISTS", "{u}:fetch:1", "a"), 1)
        self.assertTrue(0 < self.c.cmd("PTTL", "{u}:fetch:1") <= 60000)

    # -- every file has its case; shared blocks agree -----------------------

    def test_shared_blocks_agree(self):
        """A block between "-- >>> <name>" and "-- <<< <name>" is copied into
        each script that needs it (a script must run on its own, so none is
        spliced in at build time): every copy must be the same text."""
        blocks = {}
        for script in lua_cli.scripts():
            lines = lua_cli.source(script).splitlines(keepends=True)
            open_at = {}
            for i, line in enumerate(lines):
                m = re.match(r"-- (>>>|<<<) (\w+)$", line.rstrip("\n"))
                if not m:
                    continue
                if m.group(1) == ">>>":
                    self.assertNotIn(m.group(2), open_at, script)
                    open_at[m.group(2)] = i
                else:
                    start = open_at.pop(m.group(2))
                    blocks.setdefault(m.group(2), []).append((script, "".join(lines[start:i])))
            self.assertEqual(open_at, {}, "%s: a block is not closed" % script)
        self.assertGreaterEqual(len(blocks), 6)
        for name, copies in blocks.items():
            self.assertGreater(len(copies), 1, "block %s is in one script only" % name)
            for script, text in copies[1:]:
                self.assertEqual(text, copies[0][1], "block %s: %s differs from %s"
                                 % (name, script, copies[0][0]))


    def test_every_script_has_a_case(self):
        missing = [n for n in lua_cli.scripts() if not hasattr(self, "test_" + n)]
        self.assertEqual(missing, [], "scripts in src/remote/lua without a test_<name> here")


if __name__ == "__main__":
    unittest.main(verbosity=2)
