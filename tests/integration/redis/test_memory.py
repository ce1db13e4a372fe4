# SPDX-License-Identifier: BSD-3-Clause
"""What small filters cost: MEMORY USAGE of a filter reserved at (0.01, 200),
NONSCALING and scaling, stays within a bound, and it tells the truth: within
10% of what such a key really adds to used_memory, measured over many keys
so that jemalloc's slabs and the keyspace's hash table average out."""

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


if __name__ == "__main__":
    h.main()
