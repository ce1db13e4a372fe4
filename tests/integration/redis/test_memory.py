# SPDX-License-Identifier: BSD-3-Clause
"""What small filters cost: MEMORY USAGE of a filter reserved at (0.01, 200),
NONSCALING and scaling, stays within a bound, and it tells the truth: within
10% of what such a key really adds to used_memory, measured over many keys
so that jemalloc's slabs and the keyspace's hash table average out. What a
grown one costs: LAYERS auto against LAYERS standard."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK  # noqa: E402

KEYS = 20000
BATCH = 1000

# MEMORY USAGE of one (0.01, 200) key named as below: its 240 (NONSCALING)
# or 296 (scaling) bytes of bits, the filter's structures and the module's
# value as jemalloc sizes them, Redis's robj and moduleValue, dictEntry and
# key string.
MAX_USAGE = {"nonscaling": 544, "scaling": 608}


class SmallKeys(h.RespTestCase):
    def per_key(self, c, args):
        """MEMORY USAGE of one key, and used_memory's growth per key."""
        self.assertReply(c.cmd("FLUSHALL"), OK)
        used0 = int(h.info_field(c, "memory", "used_memory"))
        for at in range(0, KEYS, BATCH):
            replies = c.pipeline([["BF.RESERVE", "k%06d" % i, "0.01", "200"] + args
                                  for i in range(at, at + BATCH)])
            self.assertEqual(replies, [OK] * BATCH)
        used1 = int(h.info_field(c, "memory", "used_memory"))
        return c.cmd("MEMORY", "USAGE", "k000007"), (used1 - used0) / KEYS

    def test_small_filters(self):
        s = h.Server()
        self.addCleanup(s.cleanup)
        s.start()
        c = s.conn()
        for name, args in (("nonscaling", ["NONSCALING"]), ("scaling", [])):
            with self.subTest(name):
                usage, used = self.per_key(c, args)
                self.assertLessEqual(usage, MAX_USAGE[name])
                self.assertLess(abs(usage - used) / used, 0.10,
                                "MEMORY USAGE %d against %.1f bytes of used_memory per key"
                                % (usage, used))


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
