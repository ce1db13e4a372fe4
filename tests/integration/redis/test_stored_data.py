# SPDX-License-Identifier: BSD-3-Clause
"""Data written by the module with standard layers as its default loads and
answers the same: an RDB, an AOF with an RDB preamble and an AOF of
commands only (fixtures/, made by fixtures/make_fixtures.py;
fixtures/README.md). Every key's BF.INFO, BF.CARD and recorded answers are
checked after the load; then items are added, the data saved (SAVE, or the
AOF and a rewrite of it), the server restarted and everything checked
again. Keys keep their layers' variant whatever the module now makes for
new filters, so their answers do not change."""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import OK, Status  # noqa: E402
from test_commands import FULL  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)
NEW = 500  # items each growable key gets after the load


def its(prefix, n):
    return [prefix + str(i) for i in range(n)]


def answers(c, key, items):
    out = []
    for i in range(0, len(items), 1000):
        r = c.cmd("BF.MEXISTS", key, *items[i:i + 1000])
        assert isinstance(r, list), r
        out += r
    return "".join(str(a) for a in out)


def info_of(c, key):
    """BF.INFO but its Size, whose bytes are the module's own accounting
    (MEMORY USAGE), not part of what a key stores."""
    r = [x.decode() if isinstance(x, bytes) else x for x in c.cmd("BF.INFO", key)]
    assert r[2] == "Size" and isinstance(r[3], int) and r[3] > 0, r
    return r[:2] + r[4:]


class StoredData(h.RespTestCase):
    def server(self, files, extra=()):
        d = tempfile.mkdtemp(prefix="bloomgate-stored-")
        self.addCleanup(shutil.rmtree, d, True)
        src = os.path.join(FIXTURES, files)
        if os.path.isdir(src):
            shutil.copytree(os.path.join(src, "appendonlydir"), os.path.join(d, "appendonlydir"))
        else:
            shutil.copyfile(src, os.path.join(d, "dump.rdb"))
        s = h.Server(dir=d, extra=list(extra))
        self.addCleanup(s.cleanup)
        s.start()
        s.wait_loaded()
        return s

    def check_expected(self, c, what):
        self.assertEqual(sorted(k.decode() for k in c.cmd("KEYS", "*")), sorted(EXPECTED), what)
        for key, exp in EXPECTED.items():
            self.assertReply(c.cmd("TYPE", key), Status(b"bloomgate"), "%s: %s" % (what, key))
            self.assertEqual(info_of(c, key), exp["info"][:2] + exp["info"][4:], "%s: BF.INFO %s" % (what, key))
            self.assertReply(c.cmd("BF.CARD", key), exp["card"], "%s: BF.CARD %s" % (what, key))
            for part in exp["added"] + [exp["absent"]]:
                self.assertEqual(answers(c, key, its(part["prefix"], part["count"])), part["answers"],
                                 "%s: %s, items %s*" % (what, key, part["prefix"]))

    def add_more(self, c):
        """Adds NEW items to every key; returns what a client then sees."""
        for key in EXPECTED:
            new = its("post:%s:" % key, NEW)
            r = c.cmd("BF.MADD", key, *new)
            if key == "nonscaling":
                self.assertReply(r, [FULL], "a full NONSCALING filter stays full")
            else:
                self.assertEqual(len(r), NEW)
        return self.observe(c)

    def observe(self, c):
        seen = {}
        for key, exp in EXPECTED.items():
            seen[key] = {
                "info": info_of(c, key),
                "card": c.cmd("BF.CARD", key),
                "new": answers(c, key, its("post:%s:" % key, NEW)),
            }
            for part in exp["added"] + [exp["absent"]]:
                now = answers(c, key, its(part["prefix"], part["count"]))
                # Adds only set bits: a 1 stays 1, and every added item is found.
                self.assertFalse(any(a == "1" and b == "0" for a, b in zip(part["answers"], now)),
                                 "%s: an answer went from 1 to 0" % key)
                seen[key][part["prefix"]] = now
            if key != "nonscaling":
                self.assertEqual(seen[key]["new"], "1" * NEW, key)
        return seen

    def test_rdb(self):
        s = self.server("dump.rdb")
        c = s.conn()
        self.check_expected(c, "RDB load")
        seen = self.add_more(c)
        self.assertReply(c.cmd("SAVE"), OK)
        s.restart()
        s.wait_loaded()
        self.assertEqual(self.observe(s.conn()), seen, "after adds, SAVE and restart")

    def check_aof(self, files, preamble):
        extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble]
        s = self.server(files, extra)
        c = s.conn()
        self.check_expected(c, files + " load")
        seen = self.add_more(c)
        s.restart()  # the adds come back from the AOF's incremental file
        s.wait_loaded()
        c = s.conn()
        self.assertEqual(self.observe(c), seen, files + ": after adds and restart")
        self.assertReply(c.cmd("BGREWRITEAOF"), Status(b"Background append only file rewriting started"))
        h.wait_until(lambda: h.info_field(c, "persistence", "aof_rewrite_in_progress") == "0" and
                     h.info_field(c, "persistence", "aof_rewrite_scheduled") == "0", 30, what="AOF rewrite")
        self.assertEqual(h.info_field(c, "persistence", "aof_last_bgrewrite_status"), "ok")
        s.restart()
        s.wait_loaded()
        self.assertEqual(self.observe(s.conn()), seen, files + ": after a rewrite and restart")

    def test_aof_with_rdb_preamble(self):
        self.check_aof("aof-preamble", "yes")

    def test_aof_of_commands(self):
        self.check_aof("aof-commands", "no")


if __name__ == "__main__":
    h.main()
