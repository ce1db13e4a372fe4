# SPDX-License-Identifier: BSD-3-Clause
"""BF.* in a 3-master Redis Cluster on loopback: the key specs route every
command to the node owning its key (redis-cli -c follows MOVED; redis-py's
RedisCluster finds the key through COMMAND), and a filter moves between
nodes by SCANDUMP / LOADCHUNK. Keys of RedisBloom's type (MBbloom--,
restored from RedisBloom's own DUMP payload) route and move the same way."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK, Err, Status  # noqa: E402
from test_commands import items, madd_all, mexists_all  # noqa: E402
from test_persistence import scandump, snapshot  # noqa: E402


class ClusterTest(h.RespTestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = h.Cluster(3)
        cls.addClassCleanup(cls.cluster.cleanup)
        cls.cluster.start()
        # One key per node (different slots, different masters).
        cls.keys = {}
        n = 0
        while len(cls.keys) < 3:
            k = "bf-%d" % n
            node = cls.cluster.node_for(k)
            cls.keys.setdefault(node.port, k)
            n += 1
        assert len(cls.keys) == 3

    def test_redis_cli_follows_moved(self):
        cl = self.cluster
        for port, k in self.keys.items():
            self.assertEqual(cl.cli("BF.RESERVE", k, "0.01", "1000"), "OK")
            self.assertEqual(cl.cli("BF.ADD", k, "a"), "1")
            self.assertEqual(cl.cli("BF.ADD", k, "a"), "0")
            self.assertEqual(cl.cli("BF.MADD", k, "b", "c", "b").split("\n"), ["1", "1", "0"])
            self.assertEqual(cl.cli("BF.INSERT", k, "NOCREATE", "ITEMS", "d", "a").split("\n"), ["1", "0"])
            self.assertEqual(cl.cli("BF.EXISTS", k, "c"), "1")
            self.assertEqual(cl.cli("BF.EXISTS", k, "zz"), "0")
            self.assertEqual(cl.cli("BF.MEXISTS", k, "a", "zz", "d").split("\n"), ["1", "0", "1"])
            self.assertEqual(cl.cli("BF.CARD", k), "4")
            self.assertEqual(cl.cli("BF.INFO", k, "CAPACITY"), "1000")
            self.assertEqual(cl.cli("BF.INFO", k).split("\n")[:2], ["Capacity", "1000"])
            # The key lives on the node that owns its slot, and only there.
            for node in cl.nodes:
                with node.conn() as c:
                    r = c.cmd("BF.CARD", k)
                    if node.port == port:
                        self.assertReply(r, 4)
                    else:
                        self.assertIsInstance(r, Err)
                        self.assertTrue(r.msg.startswith(b"MOVED "), r)
                        slot = c.cmd("CLUSTER", "KEYSLOT", k)
                        self.assertReply(r, Err(b"MOVED %d 127.0.0.1:%d" % (slot, port)))

    def test_getkeys(self):
        for node in self.cluster.nodes:
            with node.conn() as c:
                self.assertReply(c.cmd("COMMAND", "GETKEYS", "BF.INSERT", "k", "CAPACITY", "10", "ITEMS", "a", "b"),
                                 [b"k"])
                self.assertReply(c.cmd("COMMAND", "GETKEYS", "BF.LOADCHUNK", "k2", "1", "x"), [b"k2"])

    def test_hash_tags_same_slot(self):
        # Keys sharing a hash tag share a node: MULTI and Lua across them work.
        k1, k2 = "{tag}one", "{tag}two"
        node = self.cluster.node_for(k1)
        self.assertIs(node, self.cluster.node_for(k2))
        with node.conn() as c:
            self.assertReply(c.cmd("MULTI"), OK)
            c.cmd("BF.ADD", k1, "a")
            c.cmd("BF.MADD", k2, "a", "b")
            self.assertReply(c.cmd("EXEC"), [1, [1, 1]])
            self.assertReply(c.cmd("EVAL", "return {redis.call('BF.CARD', KEYS[1]), redis.call('BF.CARD', KEYS[2])}",
                                   "2", k1, k2), [1, 2])

    def test_move_filter_between_nodes(self):
        (pa, ka), (pb, kb) = list(self.keys.items())[:2]
        a = next(n for n in self.cluster.nodes if n.port == pa)
        b = next(n for n in self.cluster.nodes if n.port == pb)
        src, dst = "mv-" + ka, None
        # Pick names whose slots are on node a and node b.
        n = 0
        while self.cluster.node_for(src) is not a:
            n += 1
            src = "mv-src-%d" % n
        n = 0
        dst = "mv-dst-0"
        while self.cluster.node_for(dst) is not b:
            n += 1
            dst = "mv-dst-%d" % n
        ca, cb = a.conn(), b.conn()
        its = items("mv", 3000)
        self.assertReply(ca.cmd("BF.RESERVE", src, "0.01", "500"), OK)
        madd_all(ca, src, its)
        for it, data in scandump(ca, src):
            self.assertReply(cb.cmd("BF.LOADCHUNK", dst, it, data), OK)
        want = snapshot(ca, src, its)
        got = snapshot(cb, dst, its)
        self.assertEqual(got, want)

    def test_redisbloom_keys(self):
        """A RedisBloom filter (the fixture fx:scale2's DUMP) restored on
        one node: redis-cli -c reaches it from another, the wrong node says
        MOVED, and its DUMP restores unchanged on a second node."""
        fix = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                           "redisbloom", "keys", "scale2", "dump.bin")
        with open(fix, "rb") as fh:
            payload = fh.read()
        nodes = self.cluster.nodes
        n, src, dst = 0, "rb-src-0", "rb-dst-0"
        while self.cluster.node_for(src) is not nodes[1]:
            n += 1
            src = "rb-src-%d" % n
        n = 0
        while self.cluster.node_for(dst) is not nodes[2]:
            n += 1
            dst = "rb-dst-%d" % n
        ca, cb = nodes[1].conn(), nodes[2].conn()
        self.assertReply(ca.cmd("RESTORE", src, 0, payload), OK)
        self.assertReply(ca.cmd("TYPE", src), Status(b"MBbloom--"))
        cl = self.cluster  # redis-cli -c on nodes[0], which holds neither key
        self.assertEqual(cl.cli("BF.CARD", src), "19814")
        self.assertEqual(cl.cli("BF.MEXISTS", src, "fx:scale2:0", "fx:scale2:19999").split("\n"),
                         ["1", "1"])
        self.assertEqual(cl.cli("BF.INFO", src, "CAPACITY"), "31000")
        r = cb.cmd("BF.CARD", src)
        self.assertIsInstance(r, Err)
        self.assertTrue(r.msg.startswith(b"MOVED "), r)
        dump = ca.cmd("DUMP", src)
        self.assertEqual(dump, payload)
        self.assertReply(cb.cmd("RESTORE", dst, 0, dump), OK)
        self.assertEqual(cl.cli("TYPE", dst), "MBbloom--")
        self.assertEqual(cl.cli("BF.ADD", dst, "new-item"), "1")
        self.assertEqual(cl.cli("BF.CARD", dst), "19815")
        self.assertEqual(cl.cli("BF.CARD", src), "19814")

    def test_redis_py_cluster(self):
        from redis.cluster import RedisCluster

        rc = RedisCluster(host="127.0.0.1", port=self.cluster.nodes[0].port)
        self.addCleanup(rc.close)
        for port, k in self.keys.items():
            key = "py-" + k
            # RedisCluster has no r.bf() callbacks: the raw +OK.
            self.assertEqual(rc.execute_command("BF.RESERVE", key, "0.01", "1000"), b"OK")
            its = ["i%d" % i for i in range(200)]
            self.assertEqual(rc.execute_command("BF.MADD", key, *its), [1] * 200)
            self.assertEqual(rc.execute_command("BF.MEXISTS", key, *its, "nope"), [1] * 200 + [0])
            self.assertEqual(rc.execute_command("BF.CARD", key), 200)
            # It landed on the owning node.
            node = self.cluster.node_for(key)
            with node.conn() as c:
                self.assertReply(c.cmd("BF.CARD", key), 200)


if __name__ == "__main__":
    h.main()
