# SPDX-License-Identifier: BSD-3-Clause
"""A replica answers exactly like its master: BF.* writes are replicated
(verbatim or as effects), the full sync ships our type's RDB payload, and
filters grown across layers, loaded by LOADCHUNK or made by INSERT come out
the same on both sides."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK, Err  # noqa: E402
from test_commands import FULL, items, madd_all  # noqa: E402
from test_persistence import build_filters, scandump, snapshot, snapshots  # noqa: E402


class Replication(h.RespTestCase):
    def setUp(self):
        self.master = h.start_server(self)
        self.m = self.master.conn()

    def replica(self):
        r = h.start_replica(self, self.master)
        return r, r.conn()

    def assertSame(self, made, rc, what):
        want = snapshots(self.m, made)
        got = snapshots(rc, made)
        for key in made:
            for field in want[key]:
                self.assertReply(got[key][field], want[key][field], "%s: %s %s" % (what, key, field))

    def test_full_sync_then_stream(self):
        # Filters that exist before the replica attaches travel in the RDB of
        # the full sync; later writes in the replication stream.
        before = build_filters(self.m, "pre-")
        r, rc = self.replica()
        self.assertSame(before, rc, "full sync")
        after = build_filters(self.m, "post-")
        # More growth on a filter that came with the full sync.
        madd_all(self.m, "pre-layers", items("more", 20000))
        before["pre-layers"] = before["pre-layers"] + items("more", 20000)
        self.assertReply(self.m.cmd("BF.INSERT", "ins", "CAPACITY", "10", "ERROR", "0.001", "EXPANSION", "3",
                                    "ITEMS", *items("i", 500))[:3], [1, 1, 1])
        self.assertReply(self.m.cmd("BF.INSERT", "ins-ns", "CAPACITY", "5", "NONSCALING", "ITEMS",
                                    *items("n", 8))[-1], FULL)
        self.assertReply(self.m.cmd("BF.ADD", "single", "x"), 1)
        self.assertReply(self.m.cmd("BF.RESERVE", "res", "0.02", "77", "EXPANSION", "5"), OK)
        self.assertReply(self.m.cmd("EVAL", "return redis.call('BF.MADD', KEYS[1], 'a', 'b', 'a')", "1", "lua"),
                         [1, 1, 0])
        self.assertReply(self.m.cmd("MULTI"), h.Status(b"OK"))
        self.m.cmd("BF.ADD", "tx", "a")
        self.m.cmd("BF.MADD", "tx", "b", "c")
        self.assertReply(self.m.cmd("EXEC"), [1, [1, 1]])
        # The remote client's staged creation (src/remote/module.c): BF.RESERVE
        # from a script, adds, then a script's RENAME of our type's value.
        stg = "{staged}:staging:0123456789abcdef"
        self.assertReply(self.m.cmd("EVAL", "redis.call('BF.RESERVE', KEYS[1], unpack(ARGV, 2)) "
                                    "redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1", "1", stg,
                                    "600000", "0.01", "1000"), 1)
        madd_all(self.m, stg, items("s", 300))
        self.assertReply(self.m.cmd("EVAL", "redis.call('RENAME', KEYS[1], KEYS[2]) "
                                    "redis.call('PERSIST', KEYS[2]) return 1", "2", stg, "staged"), 1)
        h.wait_sync(self.master, r)
        self.assertReply(rc.cmd("EXISTS", stg), 0)
        self.assertReply(rc.cmd("PTTL", "staged"), -1)
        made = dict(before, **after)
        made.update({"ins": items("i", 500), "ins-ns": items("n", 8), "single": [b"x"], "res": [],
                     "lua": [b"a", b"b"], "tx": [b"a", b"b", b"c"], "staged": items("s", 300)})
        self.assertSame(made, rc, "replication stream")
        # The layers really grew on both sides.
        self.assertGreater(rc.cmd("BF.INFO", "pre-layers", "FILTERS")[0], 5)
        # The replica refuses writes but serves reads.
        self.assertReply(rc.cmd("BF.ADD", "single", "y"),
                         Err(b"READONLY You can't write against a read only replica."))
        self.assertReply(rc.cmd("BF.EXISTS", "nokey", "a"), 0)
        self.assertReply(rc.cmd("BF.CARD", "nokey"), 0)
        self.assertReply(rc.cmd("BF.INFO", "nokey"), Err(b"ERR not found"))
        # Failed writes leave nothing on the replica either.
        self.assertReply(self.m.cmd("BF.RESERVE", "bad", "0", "10"), Err(b"ERR (0 < error rate range < 1) "))
        self.assertReply(self.m.cmd("BF.INSERT", "bad", "NOCREATE", "ITEMS", "a"), Err(b"ERR not found"))
        h.wait_sync(self.master, r)
        self.assertReply(rc.cmd("EXISTS", "bad"), 0)

    def test_loadchunk_replicated(self):
        r, rc = self.replica()
        src = build_filters(self.m, "src-")
        for key, its in src.items():
            dst = "dst-" + key[4:]
            for it, data in scandump(self.m, key):
                self.assertReply(self.m.cmd("BF.LOADCHUNK", dst, it, data), OK)
        h.wait_sync(self.master, r)
        for key, its in src.items():
            dst = "dst-" + key[4:]
            want = snapshot(self.m, key, its)
            self.assertEqual(snapshot(self.m, dst, its), want, "LOADCHUNK on the master: %s" % dst)
            self.assertEqual(snapshot(rc, dst, its), want, "LOADCHUNK on the replica: %s" % dst)
        # A key left half-loaded on the master is half-loaded on the replica.
        chunks = scandump(self.m, "src-layers")
        self.assertReply(self.m.cmd("BF.LOADCHUNK", "half", *chunks[0]), OK)
        h.wait_sync(self.master, r)
        self.assertReply(rc.cmd("BF.CARD", "half"), self.m.cmd("BF.CARD", "half"))
        self.assertReply(rc.cmd("EXISTS", "half"), 1)

    def test_growth_across_layers(self):
        r, rc = self.replica()
        self.assertReply(self.m.cmd("BF.RESERVE", "g", "0.01", "100", "EXPANSION", "2"), OK)
        for step in range(5):
            madd_all(self.m, "g", items("g%d" % step, 400 * (step + 1)))
            h.wait_sync(self.master, r)
            probe = items("g0", 400) + items("nope", 2000)
            self.assertEqual(snapshot(rc, "g", probe), snapshot(self.m, "g", probe), "after step %d" % step)
        self.assertGreaterEqual(rc.cmd("BF.INFO", "g", "FILTERS")[0], 6)
        # A fresh replica after all that: the full sync carries the layers.
        r2, rc2 = self.replica()
        probe = items("g4", 2000) + items("nope", 2000)
        self.assertEqual(snapshot(rc2, "g", probe), snapshot(self.m, "g", probe))
        self.assertReply(rc2.cmd("DEBUG", "DIGEST-VALUE", "g"), self.m.cmd("DEBUG", "DIGEST-VALUE", "g"))


if __name__ == "__main__":
    h.main()
