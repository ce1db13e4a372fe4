# SPDX-License-Identifier: BSD-3-Clause
"""docs/PROTOCOL.md's test vectors, checked three ways:

- against the document itself: the positions follow from the stated h1, h2
  by the stated formulas (reduce, enhanced double hashing), written here in
  Python as a client in another language would write them;
- against the library (protocol_vectors, the first argument): bg_hash_key
  gives the stated h1, h2 and bg_layout_positions the stated positions; a
  standard filter sets exactly those bits and holds the stated payload;
  bg_remote_shard_of gives the stated shard;
- against the scripts in a real redis-server: create.lua, add_setbit.lua
  with the stated positions, get_setbit.lua, then GET of the bits key gives
  the stated payload and stats.lua the stated item count.

The vectors are the lines of the ```vectors blocks of PROTOCOL.md (the only
copy), so the document and the test cannot disagree unnoticed."""

import os
import re
import subprocess
import sys
import unittest

import lua_cli
from lua_cli import harness

DOC = os.path.join(lua_cli.ROOT, "docs", "PROTOCOL.md")
TOOL = None  # protocol_vectors, from argv

MASK64 = (1 << 64) - 1
# Filters larger than this are checked against the library only (a Redis
# string of 2^32 bits is 512 MiB).
REDIS_MAX_BITS = 1 << 20


# -- the document's formulas -----------------------------------------------

def reduce(x, r):
    """floor(x * r / 2^64): the high 64 bits of the 128-bit product."""
    return (x * r) >> 64


def positions(h1, h2, m, k):
    """The standard layout's k bit positions, in probe order."""
    x = reduce(h1, m)
    y = reduce(h2, m - 1) + 1
    out = []
    for j in range(k):
        out.append(x)
        x = (x + y) % m
        y = (y + j) % m
    return out


def shard_of(h1, h2, shards):
    rot = ((h2 << 32) | (h2 >> 32)) & MASK64
    return ((((h1 ^ rot) * 0x9E3779B97F4A7C15) & MASK64) * shards) >> 64


def payload(m, keys_positions):
    out = bytearray((m + 7) // 8)
    for pos in keys_positions:
        for i in pos:
            out[i // 8] |= 0x80 >> (i % 8)
    return bytes(out)


# -- the vectors -----------------------------------------------------------

def parse_vectors(path=DOC):
    """{kind: [dict of fields]} from the ```vectors blocks."""
    text = open(path).read()
    blocks = re.findall(r"^```vectors\n(.*?)^```", text, re.S | re.M)
    out = {"position": [], "payload": [], "shard": []}
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, *fields = line.split()
            v = dict(f.split("=", 1) for f in fields)
            out[kind].append(v)
    return out


def key_bytes(hexkey):
    return b"" if hexkey == "-" else bytes.fromhex(hexkey)


def tool(*args):
    p = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("protocol_vectors %s: %s" % (" ".join(map(str, args)), p.stderr))
    return p.stdout.strip()


class Vectors(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.vectors = parse_vectors()
        cls._cleanups = []
        cls.server = harness.start_server(cls._cleanups, load_module=False)

    @classmethod
    def tearDownClass(cls):
        for c in cls._cleanups:
            c()

    def setUp(self):
        self.c = self.server.conn()
        self.c.cmd("FLUSHALL")

    def tearDown(self):
        self.c.close()

    def test_the_document_has_vectors(self):
        self.assertGreaterEqual(len(self.vectors["position"]), 6)
        self.assertGreaterEqual(len(self.vectors["payload"]), 3)
        self.assertGreaterEqual(len(self.vectors["shard"]), 3)

    def hashes(self, seed, hexkey):
        h1, h2 = tool("hash", seed, hexkey).split()
        return int(h1, 16), int(h2, 16)

    # -- Redis: a filter made and written as the document says ----------

    def redis_filter(self, name, m, k, seed):
        meta, bits = "{%s}:meta" % name, "{%s}:bits:1" % name
        self.c.cmd("SET", bits, b"\0" * ((m + 7) // 8), "PX", "600000")
        r = lua_cli.run(self.server.port, "create", [meta, bits],
                        [1, m, k, seed, (m + 7) // 8, 0, "0", ""])
        self.assertEqual(r, "OK")
        return [meta, bits], [1, k, m, seed, 1]

    def test_positions(self):
        for i, v in enumerate(self.vectors["position"]):
            with self.subTest(vector=v):
                m, k, seed = int(v["m"]), int(v["k"]), int(v["seed"])
                h1, h2 = int(v["h1"], 16), int(v["h2"], 16)
                want = [int(p) for p in v["positions"].split(",")]
                # The document agrees with itself and with the library.
                self.assertEqual(positions(h1, h2, m, k), want)
                self.assertEqual(self.hashes(seed, v["key"]), (h1, h2))
                self.assertEqual(tool("probes", m, k, seed, v["key"]), " ".join(map(str, want)))
                self.assertEqual(tool("positions", m, k, seed, v["key"]),
                                 " ".join(str(p) for p in sorted(set(want))))
                if m > REDIS_MAX_BITS:
                    continue
                # The scripts: the key is new, then present, and its bits
                # are exactly these.
                keys, shape = self.redis_filter("p%d" % i, m, k, seed)
                self.assertEqual(lua_cli.run(self.server.port, "get_setbit", keys, shape + [0, 0] + want), [0])
                self.assertEqual(lua_cli.run(self.server.port, "add_setbit", keys, shape + [0, 0] + want), [1])
                self.assertEqual(lua_cli.run(self.server.port, "get_setbit", keys, shape + [0, 0] + want), [1])
                self.assertEqual(self.c.cmd("GET", keys[1]), payload(m, [want]))

    def test_payloads(self):
        for i, v in enumerate(self.vectors["payload"]):
            with self.subTest(vector=v):
                m, k, seed = int(v["m"]), int(v["k"]), int(v["seed"])
                keys = v["keys"].split(",")
                want = bytes.fromhex(v["payload"])
                self.assertEqual(tool("bytes", m, k, seed, *keys), v["payload"])
                pos = [positions(*self.hashes(seed, key), m, k) for key in keys]
                for key, p in zip(keys, pos):
                    self.assertEqual(tool("probes", m, k, seed, key), " ".join(map(str, p)))
                self.assertEqual(payload(m, pos), want)
                # One batch of all the keys through the script.
                rkeys, shape = self.redis_filter("b%d" % i, m, k, seed)
                flat = [p for ps in pos for p in ps]
                new = lua_cli.run(self.server.port, "add_setbit", rkeys, shape + [0, 0] + flat)
                self.assertEqual(len(new), len(keys))
                self.assertEqual(self.c.cmd("GET", rkeys[1]), want)
                self.assertEqual(lua_cli.run(self.server.port, "stats", rkeys, shape),
                                 [v["items"], bin(int.from_bytes(want, "big")).count("1"), "1"])
                self.assertEqual(str(sum(new)), v["items"])
                self.assertEqual(lua_cli.run(self.server.port, "get_setbit", rkeys, shape + [0, 0] + flat),
                                 [1] * len(keys))

    def test_shards(self):
        for v in self.vectors["shard"]:
            with self.subTest(vector=v):
                shards, seed = int(v["shards"]), int(v["seed"])
                h1, h2 = self.hashes(seed, v["key"])
                self.assertEqual(shard_of(h1, h2, shards), int(v["shard"]))
                self.assertEqual(tool("shard", shards, seed, v["key"]), v["shard"])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: test_protocol.py <protocol_vectors executable>")
    TOOL = sys.argv.pop(1)
    unittest.main(verbosity=2)
