# SPDX-License-Identifier: BSD-3-Clause
"""RedisBloom's own data (type MBbloom--) in bloomgate.so, against the
fixtures RedisBloom 2.6.28 wrote (tests/fixtures/redisbloom, README.md
there): its dump.rdb and plain-command AOF load with every key; each key
answers BF.INFO, BF.CARD and BF.MEXISTS exactly as recorded, and DUMP,
BF.SCANDUMP and the AOF rewrite give RedisBloom's bytes; every DUMP payload
and the legacy encodings 0 to 3 restore, and the legacy chains grow as
RedisBloom grew them; BF.LOADCHUNK rebuilds keys in any order and refuses
what RedisBloom refuses, with its strings; COMPAT redisbloom makes keys
whose DUMP is RedisBloom's; saved data comes back; COPY, SCAN TYPE, MEMORY
USAGE, DEBUG DIGEST-VALUE and a replica work on such keys; and crafted
payloads (valid checksum, bad fields) are refused while the server keeps
serving."""

import json
import os
import random
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK, Err, Status, WRONGTYPE  # noqa: E402

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "redisbloom")
NAMES = ["scale2", "onelink", "nonscaling", "auto", "exp4", "empty", "large"]
LEGACY = ["legacy_v0", "legacy_v1", "legacy_v2", "legacy_v3"]
TYPE = Status(b"MBbloom--")
BAD_FORMAT = Err(b"ERR Bad data format")
BAD_DATA = Err(b"ERR received bad data")
NO_LINK = Err(b"ERR invalid offset - no link found")
TOO_BIG = Err(b"ERR invalid chunk - Too big for current filter")
ABSENT = 20000


def load_json(*path):
    with open(os.path.join(FIX, *path)) as f:
        return json.load(f)


def read(*path):
    with open(os.path.join(FIX, *path), "rb") as f:
        return f.read()


MANIFEST = load_json("manifest.json")
KEYS = {k["name"]: k for k in MANIFEST["keys"]}
INFO = {n: load_json("keys", n, "info.json") for n in NAMES}
MEX = {n: load_json("keys", n, "mexists.json") for n in NAMES}
SCAN = {n: load_json("keys", n, "scandump.json") for n in NAMES}
DUMP = {n: read("keys", n, "dump.bin") for n in NAMES}


def its(prefix, lo, hi):
    return [prefix + str(i) for i in range(lo, hi)]


def mexists(c, key, items):
    out = []
    for i in range(0, len(items), 1000):
        r = c.cmd("BF.MEXISTS", key, *items[i:i + 1000])
        assert isinstance(r, list), r
        out += r
    return out


def madd(c, key, items):
    out = []
    for i in range(0, len(items), 1000):
        r = c.cmd("BF.MADD", key, *items[i:i + 1000])
        assert isinstance(r, list), r
        out += r
    return out


def info_map(c, key):
    r = c.cmd("BF.INFO", key)
    assert isinstance(r, list), r
    return {r[i].decode(): r[i + 1] for i in range(0, len(r), 2)}


def scandump(c, key):
    """The (request, reply iterator, bytes) of a whole SCANDUMP sequence."""
    out, it = [], 0
    while True:
        r = c.cmd("BF.SCANDUMP", key, it)
        assert isinstance(r, list) and len(r) == 2, r
        out.append((it, r[0], r[1]))
        if r[0] == 0:
            return out
        it = r[0]


def fixture_scandump(base, chunks):
    out = []
    for ch in chunks:
        data = read(*(base + [ch["file"]])) if "file" in ch else b""
        out.append((ch["request_iter"], ch["reply_iter"], data))
    return out


# ---- Redis's CRC-64 and RDB encoding, for crafted DUMP payloads -------------------

def _crc_table():
    poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 reflected
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


_CRC = _crc_table()


def crc64(data):
    c = 0
    for b in data:
        c = _CRC[(c ^ b) & 0xFF] ^ (c >> 8)
    return c


def rdb_len(v):
    if v < 1 << 6:
        return bytes([v])
    if v < 1 << 14:
        return bytes([0x40 | (v >> 8), v & 0xFF])
    if v < 1 << 32:
        return b"\x80" + struct.pack(">I", v)
    return b"\x81" + struct.pack(">Q", v)


def U(v):
    return b"\x02" + rdb_len(v)


def D(v):
    return b"\x04" + struct.pack("<d", v)


def S(b):
    return b"\x05" + rdb_len(len(b)) + b


RB_NAME_CODE = 0xC05B968A26FBE


def payload(body, encver=4, rdbver=10):
    """A DUMP payload of an MBbloom-- value: body is the fields, encoded."""
    p = b"\x07" + rdb_len((RB_NAME_CODE << 10) | encver) + body + b"\x00" + struct.pack("<H", rdbver)
    return p + struct.pack("<Q", crc64(p))


def encode(chain, links, arrays):
    """An encver-4 body from a decoded header (scandump.json) and arrays,
    every string uncompressed."""
    b = U(chain["size"]) + U(chain["nfilters"]) + U(chain["options"]) + U(chain["growth"])
    for l, a in zip(links, arrays):
        b += U(l["entries"]) + D(l["error"]) + U(l["hashes"]) + D(l["bpe"]) + U(l["bits"])
        b += U(l["n2"]) + S(a) + U(l["size"])
    return b


def fixture_body(name, **chain_over):
    sd = SCAN[name]
    hd = dict(sd["header_decoded"])
    hd.update(chain_over)
    arrays = [read("keys", name, ch["file"]) for ch in sd["chunks"][1:] if "file" in ch]
    # A link of more than 16 MiB would span several chunks; none here does.
    assert len(arrays) == len(hd["links"])
    return hd, arrays


def parse_resp_commands(data):
    """The commands of a plain-RESP AOF file, as lists of bytes."""
    out, i = [], 0
    while i < len(data):
        assert data[i:i + 1] == b"*", data[i:i + 20]
        j = data.index(b"\r\n", i)
        n = int(data[i + 1:j])
        i = j + 2
        args = []
        for _ in range(n):
            j = data.index(b"\r\n", i)
            ln = int(data[i + 1:j])
            args.append(data[j + 2:j + 2 + ln])
            i = j + 2 + ln + 2
        out.append(args)
    return out


def loadchunks_by_key(cmds):
    by = {}
    for a in cmds:
        if a[0].upper() == b"BF.LOADCHUNK":
            by.setdefault(a[1], []).append(a)
    return by


class RedisBloomData(h.RespTestCase):
    def server_on(self, what, extra=(), module_args=()):
        d = tempfile.mkdtemp(prefix="bloomgate-rbdata-")
        self.addCleanup(shutil.rmtree, d, True)
        if what == "rdb":
            shutil.copyfile(os.path.join(FIX, "dump.rdb"), os.path.join(d, "dump.rdb"))
        elif what == "aof":
            shutil.copytree(os.path.join(FIX, "appendonlydir"), os.path.join(d, "appendonlydir"))
        s = h.Server(dir=d, extra=list(extra), module_args=list(module_args))
        self.addCleanup(s.cleanup)
        s.start()
        s.wait_loaded()
        return s

    # -- the recorded answers --
    def check_key(self, c, name, key=None, dump=True, what=""):
        key = key or KEYS[name]["key"]
        what = "%s %s" % (what, key)
        self.assertReply(c.cmd("TYPE", key), TYPE, what)
        self.assertEqual(info_map(c, key), INFO[name]["bf_info"], what)
        self.assertReply(c.cmd("BF.CARD", key), INFO[name]["bf_card"], what)
        m = MEX[name]
        added = mexists(c, key, its("fx:%s:" % name, 0, m["added"]["count"]))
        self.assertEqual([i for i, a in enumerate(added) if a != 1], m["added"]["zero_indices"], what)
        absent = mexists(c, key, its("absent:%s:" % name, 0, ABSENT))
        self.assertEqual([i for i, a in enumerate(absent) if a == 1], m["absent"]["one_indices"], what)
        if dump:
            self.assertEqual(c.cmd("DUMP", key), DUMP[name], what + ": DUMP")

    def check_all(self, c, what):
        self.assertEqual(sorted(k.decode() for k in c.cmd("KEYS", "*")),
                         sorted(KEYS[n]["key"] for n in NAMES), what)
        for n in NAMES:
            self.check_key(c, n, what=what)

    # -- loading RedisBloom's files --
    def test_rdb_then_write_back(self):
        s = self.server_on("rdb")
        c = s.conn()
        self.check_all(c, "dump.rdb")
        for n in NAMES:
            key = KEYS[n]["key"]
            self.assertEqual(scandump(c, key),
                             fixture_scandump(["keys", n], SCAN[n]["chunks"]), key + ": SCANDUMP")
        # Write back: more items, SAVE, a restart on the saved file.
        seen = {}
        for n in NAMES:
            key = KEYS[n]["key"]
            new = its("new:%s:" % n, 0, 3000)
            r = madd(c, key, new)
            if n == "nonscaling":
                # Each BF.MADD of 1000 ends at its first item: the filter is full.
                self.assertReply(r, [Err(b"ERR non scaling filter is full")] * 3, key)
            else:
                self.assertEqual(len(r), len(new))
                self.assertEqual(mexists(c, key, new), [1] * len(new), key)
            seen[key] = (c.cmd("DUMP", key), info_map(c, key),
                         mexists(c, key, its("absent:%s:" % n, 0, ABSENT)))
        self.assertReply(c.cmd("SAVE"), OK)
        s.restart()
        s.wait_loaded()
        c = s.conn()
        for n in NAMES:
            key = KEYS[n]["key"]
            self.assertReply(c.cmd("TYPE", key), TYPE)
            dump, info, absent = seen[key]
            self.assertEqual(c.cmd("DUMP", key), dump, key + ": DUMP after SAVE and restart")
            self.assertEqual(info_map(c, key), info, key)
            added = mexists(c, key, its("fx:%s:" % n, 0, MEX[n]["added"]["count"]))
            self.assertEqual(added, [1] * len(added), key)
            if n != "nonscaling":
                self.assertEqual(mexists(c, key, its("new:%s:" % n, 0, 3000)), [1] * 3000, key)
            self.assertEqual(mexists(c, key, its("absent:%s:" % n, 0, ABSENT)), absent, key)

    def test_aof_then_rewrite(self):
        extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]
        s = self.server_on("aof", extra)
        c = s.conn()
        self.check_all(c, "appendonlydir")
        self.assertReply(c.cmd("BGREWRITEAOF"), Status(b"Background append only file rewriting started"))
        h.wait_until(lambda: h.info_field(c, "persistence", "aof_rewrite_in_progress") == "0" and
                     h.info_field(c, "persistence", "aof_rewrite_scheduled") == "0", 30, what="AOF rewrite")
        self.assertEqual(h.info_field(c, "persistence", "aof_last_bgrewrite_status"), "ok")
        d = os.path.join(s.dir, "appendonlydir")
        with open(os.path.join(d, "appendonly.aof.manifest")) as f:
            base = [ln.split()[1] for ln in f if ln.split()[-1] == "b"][0]
        with open(os.path.join(d, base), "rb") as f:
            ours = loadchunks_by_key(parse_resp_commands(f.read()))
        theirs = loadchunks_by_key(parse_resp_commands(read("appendonlydir", "appendonly.aof.2.base.aof")))
        self.assertEqual(sorted(ours), sorted(theirs))
        for key in theirs:
            self.assertEqual(ours[key], theirs[key], "%r: the rewrite's BF.LOADCHUNK commands" % key)
        s.restart()
        s.wait_loaded()
        c = s.conn()
        self.check_all(c, "after BGREWRITEAOF and restart")
        # The same with an RDB preamble: the rewrite's base is an RDB.
        self.assertReply(c.cmd("CONFIG", "SET", "aof-use-rdb-preamble", "yes"), OK)
        self.assertReply(c.cmd("BGREWRITEAOF"), Status(b"Background append only file rewriting started"))
        h.wait_until(lambda: h.info_field(c, "persistence", "aof_rewrite_in_progress") == "0" and
                     h.info_field(c, "persistence", "aof_rewrite_scheduled") == "0", 30, what="AOF rewrite")
        s.extra[s.extra.index("--aof-use-rdb-preamble") + 1] = "yes"
        s.restart()
        s.wait_loaded()
        self.check_all(s.conn(), "after a rewrite with an RDB preamble and restart")

    def test_rdb_beyond_max_bytes_refused(self):
        # fx:onelink's one link is 197760 bytes: a server whose MAX_BYTES is
        # below that refuses the file, with the reason logged: Redis exits
        # (after its RDB checker, which knows no module types, said status 0).
        d = tempfile.mkdtemp(prefix="bloomgate-rbdata-")
        self.addCleanup(shutil.rmtree, d, True)
        shutil.copyfile(os.path.join(FIX, "dump.rdb"), os.path.join(d, "dump.rdb"))
        s = h.Server(dir=d, module_args=["MAX_BYTES", "65536"])
        self.addCleanup(s.cleanup)
        s.start(expect_fail=True)
        self.assertIn("MBbloom-- value (encver 4) refused: link beyond MAX_BYTES", s.log())

    # -- DUMP / RESTORE --
    def test_restore_every_dump(self):
        s = h.start_server(self)
        c = s.conn()
        for n in NAMES:
            key = "r:" + n
            self.assertReply(c.cmd("RESTORE", key, "0", DUMP[n]), OK, n)
            self.check_key(c, n, key, what="RESTORE")
        # The same values written with uncompressed strings load too, and
        # DUMP gives RedisBloom's (compressed) bytes back.
        for n in NAMES:
            hd, arrays = fixture_body(n)
            self.assertReply(c.cmd("RESTORE", "u:" + n, "0", payload(encode(hd, hd["links"], arrays))), OK, n)
            self.assertEqual(c.cmd("DUMP", "u:" + n), DUMP[n], n)

    def test_legacy_encodings(self):
        s = h.start_server(self)
        c = s.conn()
        for n in LEGACY:
            lj = load_json("legacy", n, "legacy.json")
            key = lj["key"]
            self.assertReply(c.cmd("RESTORE", key, "0", read("legacy", n, "input.bin")), OK, n)
            lo = lj["restored"]["mexists_added"]["count"]
            hi = lj["after"]["mexists_added"]["count"]
            for state in ("restored", "after"):
                if state == "after":
                    r = madd(c, key, its("%s:" % key, lo, hi))
                    self.assertEqual([lo + i for i, a in enumerate(r) if a != 1],
                                     lj["post_adds"]["zero_indices"], n + ": add replies")
                st = lj[state]
                what = "%s %s" % (n, state)
                self.assertReply(c.cmd("TYPE", key), TYPE, what)
                self.assertEqual(c.cmd("DUMP", key), read("legacy", n, state, "dump.bin"), what + ": DUMP")
                self.assertEqual(scandump(c, key), fixture_scandump(["legacy", n, state], st["scandump"]),
                                 what + ": SCANDUMP")
                self.assertEqual(info_map(c, key), st["bf_info"], what)
                self.assertReply(c.cmd("BF.CARD", key), st["bf_card"], what)
                added = mexists(c, key, its("%s:" % key, 0, st["mexists_added"]["count"]))
                self.assertEqual([i for i, a in enumerate(added) if a != 1], st["mexists_added"]["zero_indices"])
                absent = mexists(c, key, its("absent:%s:" % n, 0, st["mexists_absent"]["count"]))
                self.assertEqual([i for i, a in enumerate(absent) if a == 1], st["mexists_absent"]["one_indices"],
                                 what + ": absent items")

    # -- SCANDUMP / LOADCHUNK --
    def test_loadchunk_replay(self):
        s = h.start_server(self)
        c = s.conn()
        rng = random.Random(7)
        for n in NAMES:
            pairs = [(ch["reply_iter"], read("keys", n, ch["file"])) for ch in SCAN[n]["chunks"] if "file" in ch]
            # Pieces of chunks: data[a:b] of a chunk sent at iterator it
            # starts at it - len(data) + a, so its own iterator is
            # it - len(data) + b.
            pieces = []
            for it, data in pairs[1:]:
                cuts = sorted({0, len(data)} | {rng.randrange(len(data)) for _ in range(3)})
                pieces += [(it - len(data) + b, data[a:b]) for a, b in zip(cuts, cuts[1:])]
            for key, order in (("in-order:" + n, pairs),
                               ("shuffled:" + n, [pairs[0]] + rng.sample(pairs[1:] * 2, 2 * len(pairs) - 2)),
                               ("pieces:" + n, [pairs[0]] + rng.sample(pieces, len(pieces)))):
                for it, data in order:
                    self.assertReply(c.cmd("BF.LOADCHUNK", key, it, data), OK, key)
                self.check_key(c, n, key, what="LOADCHUNK")

    def test_loadchunk_and_scandump_errors(self):
        s = h.start_server(self)
        c = s.conn()
        hdr = read("keys", "exp4", "scandump", "000.bin")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "x", hdr), Err(b"ERR Second argument must be numeric"))
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "2", hdr), Err(b"ERR not found"))
        hd = SCAN["exp4"]["header_decoded"]

        def header(chain, links):
            b = struct.pack("<QIII", chain["size"], chain["nfilters"], chain["options"], chain["growth"])
            for l in links:
                b += struct.pack("<QQQddIQB", l["bytes"], l["bits"], l["size"], l["error"], l["bpe"],
                                 l["hashes"], l["entries"], l["n2"])
            return b

        self.assertEqual(header(hd, hd["links"]), hdr)
        bad = [
            hdr[:19], hdr[:20], hdr[:-1], hdr + b"\0",
            header(dict(hd, nfilters=0), []),
            header(dict(hd, options=hd["options"] | 0x10), hd["links"]),
            header(dict(hd, size=hd["size"] + 1), hd["links"]),
            header(hd, [dict(hd["links"][0], error=0.0)] + hd["links"][1:]),
            header(hd, [dict(hd["links"][0], hashes=hd["links"][0]["hashes"] + 1)] + hd["links"][1:]),
            header(hd, [dict(hd["links"][0], bits=hd["links"][0]["bits"] + 8)] + hd["links"][1:]),
            header(hd, [dict(hd["links"][0], n2=64)] + hd["links"][1:]),
            # 1 PiB in one link: refused before anything is allocated.
            header(dict(hd, nfilters=1, size=0), [dict(hd["links"][0], bytes=1 << 50, bits=1 << 53, size=0)]),
        ]
        for i, b in enumerate(bad):
            self.assertReply(c.cmd("BF.LOADCHUNK", "k", "1", b), BAD_DATA, "bad header %d" % i)
            self.assertReply(c.cmd("EXISTS", "k"), 0)
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "1", hdr), OK)
        self.assertReply(c.cmd("TYPE", "k"), TYPE)
        first = hd["links"][0]["bytes"]
        total = sum(l["bytes"] for l in hd["links"])
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "1", hdr), BAD_DATA, "a header to an existing key")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "0", b""), BAD_DATA)
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "-5", b""), BAD_DATA)
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "3", b"abcd"), BAD_DATA, "it < length")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "4", b"abcd"), NO_LINK, "start 0")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", total + 2, b"a"), NO_LINK, "past the last link")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", first + 2, b"ab"), TOO_BIG, "across two links")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", "5", b""), OK, "an empty chunk")
        self.assertReply(c.cmd("BF.LOADCHUNK", "k", first + 1, b"\xff" * first), OK)
        self.assertReply(c.cmd("SET", "str", "v"), OK)
        self.assertReply(c.cmd("BF.LOADCHUNK", "str", "1", hdr), WRONGTYPE)
        # SCANDUMP's own errors.
        self.assertReply(c.cmd("BF.SCANDUMP", "nokey", "0"), Err(b"ERR not found"))
        self.assertReply(c.cmd("BF.SCANDUMP", "k", "x"), Err(b"Second argument must be numeric"))
        self.assertReply(c.cmd("BF.SCANDUMP", "str", "0"), WRONGTYPE)
        self.assertReply(c.cmd("BF.SCANDUMP", "k", "-1"), [0, b""])
        self.assertReply(c.cmd("BF.SCANDUMP", "k", total + 1), [0, b""])
        self.assertReply(c.cmd("BF.SCANDUMP", "k", str((1 << 63) - 1)), [0, b""])
        self.assertReply(c.cmd("BF.SCANDUMP", "k", "2"), [first + 1, b"\xff" * (first - 1)])

    # -- commands on MBbloom-- keys --
    def test_commands_on_redisbloom_keys(self):
        s = h.start_server(self)
        c = s.conn()
        for n in NAMES:
            self.assertReply(c.cmd("RESTORE", KEYS[n]["key"], "0", DUMP[n]), OK)
        ns = "fx:nonscaling"
        self.assertReply(c.cmd("BF.RESERVE", ns, "0.01", "100"), Err(b"ERR item exists"))
        self.assertReply(c.cmd("BF.ADD", ns, "new-item"), Err(b"ERR non scaling filter is full"))
        self.assertReply(c.cmd("BF.INSERT", ns, "NOCREATE", "ITEMS", "fx:nonscaling:0", "zz"),
                         [0, Err(b"ERR non scaling filter is full")])
        self.assertReply(c.cmd("BF.EXISTS", ns, "fx:nonscaling:0"), 1)
        self.assertReply(c.cmd("BG.MEXISTS", ns, "fx:nonscaling:0", "absent:nonscaling:0"), [1, 0])
        for field, want in (("CAPACITY", 500), ("SIZE", 488), ("FILTERS", 1), ("ITEMS", 500), ("EXPANSION", None)):
            self.assertReply(c.cmd("BF.INFO", ns, field), [want], field)
        self.assertReply(c.cmd("BF.INFO", "fx:exp4", "EXPANSION"), [4])
        # Growth by the chain's stored options: a key grows as RedisBloom's.
        r = c.cmd("BF.INSERT", "fx:exp4", "CAPACITY", "5", "ERROR", "0.5", "ITEMS", *its("fx:exp4:", 300, 3000))
        self.assertEqual(len(r), 2700)
        links = c.cmd("BF.INFO", "fx:exp4", "FILTERS")[0]
        self.assertGreater(links, 4)
        self.assertReply(c.cmd("BF.INFO", "fx:exp4", "CAPACITY"), [sum(10 * 4 ** i for i in range(links))])
        self.assertReply(c.cmd("SET", "str", "v"), OK)
        self.assertReply(c.cmd("BF.ADD", "str", "x"), WRONGTYPE)
        self.assertReply(c.cmd("BF.INFO", "str"), WRONGTYPE)
        self.assertReply(c.cmd("BF.MEXISTS", "str", "x"), [0])
        # SCAN TYPE, COPY, DEBUG DIGEST-VALUE, MEMORY USAGE.
        cur, found = "0", []
        while True:
            cur, keys = c.cmd("SCAN", cur, "TYPE", "MBbloom--", "COUNT", "100")
            found += keys
            if cur == b"0":
                break
        self.assertEqual(sorted(found), sorted(KEYS[n]["key"].encode() for n in NAMES))
        self.assertReply(c.cmd("COPY", "fx:scale2", "copy"), 1)
        self.assertReply(c.cmd("TYPE", "copy"), TYPE)
        self.assertEqual(c.cmd("DUMP", "copy"), DUMP["scale2"])
        d1 = c.cmd("DEBUG", "DIGEST-VALUE", "fx:scale2", "copy")
        self.assertEqual(d1[0], d1[1])
        self.assertReply(c.cmd("BF.ADD", "copy", "one more"), 1)
        d2 = c.cmd("DEBUG", "DIGEST-VALUE", "fx:scale2", "copy")
        self.assertEqual(d2[0], d1[0])
        self.assertNotEqual(d2[1], d1[1])
        self.assertEqual(c.cmd("DUMP", "fx:scale2"), DUMP["scale2"], "COPY left the source alone")
        # MEMORY USAGE: RedisBloom's accounting (BF.INFO Size) plus what
        # Redis adds for the key itself, the same for keys of one length.
        extra = set()
        for n in NAMES:
            key = KEYS[n]["key"]
            size = info_map(c, key)["Size"]
            mu = c.cmd("MEMORY", "USAGE", key)
            self.assertGreaterEqual(mu, size, key)
            self.assertLess(mu - size, 64, key)
            c.cmd("RENAME", key, "x" * 12)
            extra.add(c.cmd("MEMORY", "USAGE", "x" * 12) - size)
            c.cmd("RENAME", "x" * 12, key)
        self.assertEqual(len(extra), 1, extra)

    def test_replica(self):
        master = h.start_server(self)
        m = master.conn()
        for n in ("scale2", "exp4", "nonscaling"):
            self.assertReply(m.cmd("RESTORE", KEYS[n]["key"], "0", DUMP[n]), OK)
        r = h.start_replica(self, master)
        rc = r.conn()
        for n in ("scale2", "exp4", "nonscaling"):
            self.check_key(rc, n, what="replica, full sync")
        madd(m, "fx:exp4", its("more:", 0, 2000))
        for it, data in [(ch["reply_iter"], read("keys", "auto", ch["file"]))
                         for ch in SCAN["auto"]["chunks"] if "file" in ch]:
            self.assertReply(m.cmd("BF.LOADCHUNK", "fx:auto", it, data), OK)
        h.wait_sync(master, r)
        self.assertEqual(rc.cmd("DUMP", "fx:exp4"), m.cmd("DUMP", "fx:exp4"))
        self.check_key(rc, "auto", what="replica, LOADCHUNK stream")

    # -- COMPAT redisbloom --
    def rebuild(self, c, n, key):
        """The fixture key's documented commands; returns the add replies."""
        p = KEYS[n]
        cnt = p["items_added"]
        items = its("fx:%s:" % n, 0, cnt + (1 if n == "nonscaling" else 0))
        if n == "scale2":
            self.assertReply(c.cmd("BF.RESERVE", key, "0.01", "1000", "EXPANSION", "2"), OK)
            return madd(c, key, items)
        if n == "onelink":
            self.assertReply(c.cmd("BF.RESERVE", key, "0.001", "100000"), OK)
            return madd(c, key, items)
        if n == "nonscaling":
            self.assertReply(c.cmd("BF.RESERVE", key, "0.05", "500", "NONSCALING"), OK)
            replies = [c.cmd("BF.ADD", key, it) for it in items]
            self.assertReply(replies[-1], Err(b"ERR non scaling filter is full"))
            return replies[:-1]
        if n == "auto":
            return [c.cmd("BF.ADD", key, it) for it in items]
        if n == "exp4":
            self.assertReply(c.cmd("BF.RESERVE", key, "0.1", "10", "EXPANSION", "4"), OK)
            return c.cmd("BF.MADD", key, *items)
        if n == "empty":
            self.assertReply(c.cmd("BF.RESERVE", key, "0.001", "10000"), OK)
            return []
        if n == "large":
            r = c.cmd("BF.INSERT", key, "CAPACITY", "20000", "ERROR", "0.02", "EXPANSION", "3", "ITEMS", *items[:1000])
            return r + madd(c, key, items[1000:])
        raise AssertionError(n)

    def test_compat_redisbloom_makes_redisbloom_keys(self):
        s = h.start_server(self, module_args=["COMPAT", "redisbloom"])
        c = s.conn()
        r = h.start_replica(self, s)  # COMPAT bloomgate there
        for n in NAMES:
            key = KEYS[n]["key"]
            replies = self.rebuild(c, n, key)
            self.assertEqual([i for i, a in enumerate(replies) if a != 1], MEX[n]["add_replies"]["zero_indices"], n)
            self.assertReply(c.cmd("TYPE", key), TYPE, n)
            self.assertEqual(c.cmd("DUMP", key), DUMP[n], n + ": DUMP of the rebuilt key")
        h.wait_sync(s, r)
        rc = r.conn()
        for n in NAMES:
            self.assertEqual(rc.cmd("DUMP", KEYS[n]["key"]), DUMP[n], n + ": on the replica")

    def test_compat_redisbloom_aof_replays_anywhere(self):
        # Keys made under COMPAT redisbloom reach the AOF as RedisBloom's
        # header before the adds: a server with the default COMPAT that
        # replays it makes the same MBbloom-- keys.
        d = tempfile.mkdtemp(prefix="bloomgate-rbdata-")
        self.addCleanup(shutil.rmtree, d, True)
        extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]
        s = h.Server(dir=d, extra=extra, module_args=["COMPAT", "redisbloom"])
        self.addCleanup(s.cleanup)
        s.start()
        c = s.conn()
        for n in ("auto", "exp4", "nonscaling", "scale2"):
            self.rebuild(c, n, KEYS[n]["key"])
        s.stop()
        s.module_args = []
        s.start()
        s.wait_loaded()
        c = s.conn()
        for n in ("auto", "exp4", "nonscaling", "scale2"):
            self.check_key(c, n, what="AOF replayed with COMPAT bloomgate")
        # DEBUG RELOAD: the RDB round trip inside one server.
        self.assertReply(c.cmd("DEBUG", "RELOAD"), OK)
        for n in ("auto", "exp4", "nonscaling", "scale2"):
            self.assertEqual(c.cmd("DUMP", KEYS[n]["key"]), DUMP[n], n + ": after DEBUG RELOAD")

    def test_resp3_info(self):
        s = h.start_server(self)
        c = s.conn(resp=3)
        self.assertReply(c.cmd("RESTORE", "fx:nonscaling", "0", DUMP["nonscaling"]), OK)
        self.assertReply(c.cmd("BF.INFO", "fx:nonscaling"),
                         h.Map([(Status(b"Capacity"), 500), (Status(b"Size"), 488),
                                (Status(b"Number of filters"), 1), (Status(b"Number of items inserted"), 500),
                                (Status(b"Expansion rate"), None)]))
        self.assertReply(c.cmd("BF.INFO", "fx:nonscaling", "size"), h.Map([(Status(b"Size"), 488)]))
        self.assertReply(c.cmd("BF.MEXISTS", "fx:nonscaling", "fx:nonscaling:0", "absent:nonscaling:0"),
                         [True, False])

    def test_compat_config(self):
        s = h.start_server(self)
        c = s.conn()
        self.assertReply(c.cmd("CONFIG", "GET", "bloomgate.compat"), [b"bloomgate.compat", b"bloomgate"])
        self.assertReply(c.cmd("BF.ADD", "a", "x"), 1)
        self.assertReply(c.cmd("TYPE", "a"), Status(b"bloomgate"))
        self.assertReply(c.cmd("CONFIG", "SET", "bloomgate.compat", "redisbloom"), OK)
        self.assertReply(c.cmd("BF.ADD", "b", "x"), 1)
        self.assertReply(c.cmd("BF.INSERT", "c", "ITEMS", "x"), [1])
        self.assertReply(c.cmd("BF.RESERVE", "d", "0.1", "10"), OK)
        for k in "bcd":
            self.assertReply(c.cmd("TYPE", k), TYPE, k)
        # RedisBloom's documented example, byte for byte.
        self.assertReply(c.cmd("BF.RESERVE", "bf", "0.1", "10"), OK)
        self.assertReply(c.cmd("BF.ADD", "bf", "item1"), 1)
        self.assertReply(c.cmd("BF.SCANDUMP", "bf", "0"), [1, bytes.fromhex(
            "01000000000000000100000005000000020000000800000000000000400000000000000001000000000000009a"
            "9999999999a93f4af7d49edef01840050000000a0000000000000000")])
        self.assertReply(c.cmd("BF.SCANDUMP", "bf", "1"), [9, bytes.fromhex("0108008000042000")])
        self.assertReply(c.cmd("BF.SCANDUMP", "bf", "9"), [0, b""])
        self.assertEqual(c.cmd("DUMP", "bf"), bytes.fromhex(
            "07 81 30 16 e5 a2 89 be f8 04 02 01 02 01 02 05 02 02 02 0a 04 9a 99 99 99 99 99 a9 3f"
            " 02 05 04 4a f7 d4 9e de f0 18 40 02 40 40 02 00 05 08 01 08 00 80 00 04 20 00 02 01 00"
            " 0a 00 d4 ef 7c b2 a2 37 da 4c"))
        self.assertErr(c.cmd("CONFIG", "SET", "bloomgate.compat", "other"))
        self.assertReply(c.cmd("CONFIG", "SET", "bloomgate.compat", "bloomgate"), OK)
        self.assertReply(c.cmd("BF.ADD", "e", "x"), 1)
        self.assertReply(c.cmd("TYPE", "e"), Status(b"bloomgate"))
        # Both types side by side, each with its own SCANDUMP.
        self.assertReply(c.cmd("BF.SCANDUMP", "b", "0")[0], 1)
        self.assertEqual(len(c.cmd("BF.SCANDUMP", "b", "0")[1]), 20 + 53)
        self.assertEqual(len(c.cmd("BF.SCANDUMP", "a", "0")[1]), 128)
        # A bloomgate header on a missing key still makes a bloomgate key.
        seq = scandump(c, "a")
        for _, it, data in seq[:-1]:
            self.assertReply(c.cmd("BF.LOADCHUNK", "a2", it, data), OK)
        self.assertReply(c.cmd("TYPE", "a2"), Status(b"bloomgate"))
        self.assertReply(c.cmd("BF.EXISTS", "a2", "x"), 1)

    # -- bad payloads --
    def test_bad_payloads_refused(self):
        s = h.start_server(self, module_args=["MAX_BYTES", str(1 << 20)])
        c = s.conn()
        for n in ("scale2", "exp4"):
            self.assertReply(c.cmd("RESTORE", KEYS[n]["key"], "0", DUMP[n]), OK)
        self.assertEqual(crc64(DUMP["exp4"][:-8]), struct.unpack("<Q", DUMP["exp4"][-8:])[0], "the CRC")
        hd, arrays = fixture_body("exp4")
        L = hd["links"]

        def with_link(i, **over):
            links = [dict(l) for l in L]
            links[i].update(over)
            return encode(hd, links, arrays)

        good = encode(hd, L, arrays)
        self.assertReply(c.cmd("RESTORE", "ok", "0", payload(good)), OK)
        cases = {
            "encver 5": payload(good, encver=5),
            "nfilters 0": payload(U(0) + U(0) + U(5) + U(2)),
            "more links than follow": payload(encode(dict(hd, nfilters=5), L, arrays)),
            "absurd nfilters": payload(encode(dict(hd, nfilters=1 << 40), L, arrays)),
            "error 0": payload(with_link(1, error=0.0)),
            "error 1": payload(with_link(1, error=1.0)),
            "error NaN": payload(with_link(1, error=float("nan"))),
            "hashes": payload(with_link(0, hashes=L[0]["hashes"] + 1)),
            "hashes past 32 bits": payload(with_link(0, hashes=L[0]["hashes"] + (1 << 33) + 1)),
            "bits": payload(with_link(2, bits=L[2]["bits"] - 8)),
            "bits 0": payload(with_link(2, bits=0)),
            "n2 64": payload(with_link(0, n2=64)),
            "bits below 2^n2": payload(with_link(0, n2=10)),
            "array short": payload(encode(hd, L, [arrays[0][:-1]] + arrays[1:])),
            "huge bits": payload(with_link(3, bits=1 << 45)),
            "absurd entries x bpe (encver 0)": payload(
                U(0) + U(1) + U((1 << 64) - 1) + D(0.01) + U(7) + D(1e300) + S(b"\0" * 8) + U(0), encver=0),
            "truncated": payload(good[:-3]),
            # Lengths Redis's own string reader is asked for before any
            # module check: a TiB, plain and LZF.
            "absurd string length": payload(
                U(0) + U(1) + U(5) + U(2) + U(10) + D(0.05) + U(5) + D(6.2352242295726885) + U(64) + U(0) +
                b"\x05" + rdb_len(1 << 40) + b"\0" * 8 + U(0)),
            "absurd LZF length": payload(
                U(0) + U(1) + U(5) + U(2) + U(10) + D(0.05) + U(5) + D(6.2352242295726885) + U(64) + U(0) +
                b"\x05\xc3" + rdb_len(3) + rdb_len(1 << 40) + b"\0" * 8 + U(0)),
            "trailing field": payload(good + U(1)),
        }
        # Within MAX_BYTES alone: links that add up past it.
        big = {"size": 0, "nfilters": 1, "options": 5, "growth": 2}
        big_link = {"entries": 100000, "error": 0.005, "hashes": 8, "bpe": 11.027753418256411,
                    "bits": 8 * (2 << 20), "n2": 0, "size": 0}
        cases["beyond MAX_BYTES"] = payload(encode(big, [big_link], [b"\0" * (2 << 20)]))
        for what, p in cases.items():
            r = c.cmd("RESTORE", "bad", "0", p)
            if what in ("truncated", "trailing field"):
                self.assertErr(r, what)
            else:
                self.assertReply(r, BAD_FORMAT, what)
            self.assertReply(c.cmd("PING"), Status(b"PONG"), what)
            self.assertReply(c.cmd("EXISTS", "bad"), 0, what)
        for n in ("scale2", "exp4"):
            self.assertEqual(c.cmd("DUMP", KEYS[n]["key"]), DUMP[n], n + " intact")
        # Stored widths: hashes, options and growth are cut to 32 bits and
        # n2 to 8, as RedisBloom keeps them, before the checks.
        wide = [dict(l, hashes=l["hashes"] + (1 << 32), n2=l["n2"] + 256) for l in L]
        p = payload(encode(dict(hd, options=hd["options"] + (1 << 32), growth=hd["growth"] + (5 << 32)), wide, arrays))
        self.assertReply(c.cmd("RESTORE", "wide", "0", p), OK)
        self.assertEqual(c.cmd("DUMP", "wide"), DUMP["exp4"])
        # Options bits RedisBloom does not know, and a chain size that is
        # not the links' sum, load from RDB (RedisBloom does not check them).
        self.assertReply(c.cmd("RESTORE", "odd", "0", payload(encode(dict(hd, options=0x25, size=7), L, arrays))), OK)
        self.assertReply(c.cmd("BF.CARD", "odd"), 7)


if __name__ == "__main__":
    h.main()
