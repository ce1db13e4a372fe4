# SPDX-License-Identifier: BSD-3-Clause
"""Drop-in proof: redis-py's own RedisBloom client (`r.bf()`, Debian's
python3-redis 4.3.4; not our code) works unchanged against bloomgate.so,
including its parsers (BFInfo, bool_ok) and the SCANDUMP / LOADCHUNK loop
from redis-py's documentation."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

try:
    import redis
    from redis.exceptions import ResponseError
except ImportError:  # a failure, not a skip: the suite promises this proof
    redis = None


class RedisPy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if redis is None:
            raise AssertionError("redis-py not importable by %s (Debian: apt install python3-redis)" % sys.executable)
        cls.srv = h.Server()
        cls.addClassCleanup(cls.srv.cleanup)
        cls.srv.start()

    def setUp(self):
        self.r = self.srv.redis_py()
        self.addCleanup(self.r.close)
        self.r.flushall()
        self.bf = self.r.bf()

    def test_reserve_add_exists(self):
        bf = self.bf
        self.assertTrue(bf.create("bloom", 0.01, 1000))
        self.assertEqual(bf.add("bloom", "foo"), 1)
        self.assertEqual(bf.add("bloom", "foo"), 0)
        self.assertEqual(bf.madd("bloom", "foo", "bar", "baz"), [0, 1, 1])
        self.assertEqual(bf.exists("bloom", "foo"), 1)
        self.assertEqual(bf.exists("bloom", "noexist"), 0)
        self.assertEqual(bf.mexists("bloom", "foo", "noexist", "bar"), [1, 0, 1])
        self.assertTrue(bf.create("ns", 0.01, 3, noScale=True))
        self.assertTrue(bf.create("exp", 0.01, 3, expansion=4))
        with self.assertRaises(ResponseError) as cm:
            bf.create("bloom", 0.01, 1000)
        self.assertEqual(str(cm.exception), "item exists")  # redis-py strips "ERR "
        with self.assertRaises(ResponseError) as cm:
            bf.create("x", 0.01, 10, expansion=2, noScale=True)
        self.assertEqual(str(cm.exception), "Nonscaling filters cannot expand")

    def test_insert_info_card(self):
        bf = self.bf
        self.assertEqual(bf.insert("ins", ["a", "b", "a"], capacity=500, error=0.001, expansion=3), [1, 1, 0])
        self.assertEqual(bf.insert("ins", ["c"], noCreate=True), [1])
        with self.assertRaises(ResponseError) as cm:
            bf.insert("missing", ["a"], noCreate=True)
        self.assertEqual(str(cm.exception), "not found")
        info = bf.info("ins")
        self.assertEqual(info.capacity, 500)
        self.assertEqual(info.filterNum, 1)
        self.assertEqual(info.insertedNum, 3)
        self.assertEqual(info.expansionRate, 3)
        self.assertIsInstance(info.size, int)
        self.assertEqual(bf.insert("nsi", ["a"], capacity=2, noScale=True), [1])
        self.assertIsNone(bf.info("nsi").expansionRate)
        # redis-py 4.3.4 has no bf().card(); the command through the same client.
        self.assertEqual(self.r.execute_command("BF.CARD", "ins"), 3)
        self.assertEqual(self.r.execute_command("BF.CARD", "missing"), 0)
        # A full NONSCALING filter: the error is an element of the reply.
        r = bf.madd("nsi", "b", "c")
        self.assertEqual(r[0], 1)
        self.assertIsInstance(r[1], ResponseError)
        self.assertEqual(str(r[1]), "non scaling filter is full")

    def test_scandump_loadchunk_loop(self):
        bf = self.bf
        bf.create("myBloom", 0.0001, 1000)
        its = ["item%d" % i for i in range(5000)]  # several layers
        for i in range(0, len(its), 500):
            bf.madd("myBloom", *its[i : i + 500])
        # The loop from redis-py's docs (scandump until iter 0, loadchunk each).
        it = 0
        chunks = []
        while True:
            it, data = bf.scandump("myBloom", it)
            if it == 0:
                break
            chunks.append([it, data])
        self.r.delete("myBloom2")
        for it, data in chunks:
            self.assertTrue(bf.loadchunk("myBloom2", it, data))
        self.assertEqual(bf.mexists("myBloom2", *its), [1] * len(its))
        probes = ["probe%d" % i for i in range(5000)]
        self.assertEqual(bf.mexists("myBloom2", *probes), bf.mexists("myBloom", *probes))
        a, b = bf.info("myBloom"), bf.info("myBloom2")
        self.assertEqual((a.capacity, a.size, a.filterNum, a.insertedNum, a.expansionRate),
                         (b.capacity, b.size, b.filterNum, b.insertedNum, b.expansionRate))

    def test_pipeline_and_resp_types(self):
        p = self.r.pipeline(transaction=True)
        p.execute_command("BF.ADD", "pk", "a")
        p.execute_command("BF.MADD", "pk", "a", "b")
        p.execute_command("BF.EXISTS", "pk", "b")
        self.assertEqual(p.execute(), [1, [0, 1], 1])
        with self.assertRaises(ResponseError) as cm:
            self.r.execute_command("BF.INFO", "pk", "bogus")
        self.assertEqual(str(cm.exception), "Invalid information value")
        self.r.set("str", "v")
        with self.assertRaises(ResponseError) as cm:
            self.bf.add("str", "a")
        self.assertTrue(str(cm.exception).startswith("WRONGTYPE"), str(cm.exception))
        self.assertEqual(self.bf.exists("str", "a"), 0)


if __name__ == "__main__":
    h.main()
