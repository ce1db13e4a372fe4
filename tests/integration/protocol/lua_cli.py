# SPDX-License-Identifier: BSD-3-Clause
"""Runs the remote client's scripts (src/remote/lua/*.lua) the way anyone
can: `redis-cli --eval <file> <keys> , <args>`, against a redis-server that
tests/integration/redis/harness.py starts on a loopback port in a temporary
directory.

redis-cli --json prints a reply as JSON (an error as `error:"<message>"`),
with bytes >= 0x80 as they are: the output is decoded as Latin-1, so every
string comes back with one character per byte (str.encode("latin-1") gives
the bytes)."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
LUA_DIR = os.path.join(ROOT, "src", "remote", "lua")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "redis"))

import harness  # noqa: E402  (the path above)


class ScriptError(Exception):
    """An error reply: message is the whole text ("BGSTALE ...")."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


def scripts():
    """The names of the .lua files (without .lua), sorted."""
    return sorted(f[:-4] for f in os.listdir(LUA_DIR) if f.endswith(".lua"))


def source(name):
    """The text of src/remote/lua/<name>.lua."""
    with open(os.path.join(LUA_DIR, name + ".lua")) as f:
        return f.read()


def run(port, name, keys=(), args=()):
    """One script by redis-cli --eval: its reply (int, str, list, None), or a
    ScriptError instance for an error reply (returned, not raised)."""
    argv = [harness.REDIS_CLI, "-h", "127.0.0.1", "-p", str(port), "--json",
            "--eval", os.path.join(LUA_DIR, name + ".lua")]
    argv += [str(k) for k in keys] + [","] + [str(a) for a in args]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("%s: redis-cli exited with %d: %r" % (name, p.returncode, p.stderr))
    text = p.stdout.decode("latin-1").rstrip("\n")
    if text.startswith("error:"):
        return ScriptError(json.loads(text[len("error:"):]))
    return json.loads(text)
