#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""How long the server stalls to delete a large filter, per module build.

For each --module given (say the current bloomgate.so and a baseline built
from an older commit), one redis-server with that module: BF.RESERVE a
NONSCALING filter of --capacity items at p = 0.01, then --rounds times COPY
it (the clone writes every page, as a filter in use has them) and UNLINK
the copy. Prints the server's own time for each UNLINK (SLOWLOG, which
logs every command here) and the client's round trip. With the type's
free_effort (src/redis_module/module.c) Redis frees a large filter in its
background thread and the UNLINK returns at once; without, the main thread
frees it while every client waits.

  bench/redis_unlink_bench.py --module build-bench/src/redis_module/bloomgate.so \\
      --module /tmp/old/build/src/redis_module/bloomgate.so [--capacity N] [--rounds N]

Not a test: it prints and exits 0.
"""
import argparse
import os
import shutil
import socket
import subprocess
import tempfile
import time

import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(module, capacity, rounds):
    d = tempfile.mkdtemp(prefix="bg-unlink-")
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                          "--save", "", "--appendonly", "no", "--slowlog-log-slower-than", "0",
                          "--loadmodule", os.path.abspath(module)],  # after its chdir to --dir
                         stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(200):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                if p.poll() is not None:
                    raise SystemExit("redis-server did not start with " + module)
                time.sleep(0.02)
        r.execute_command("BF.RESERVE", "f", "0.01", str(capacity), "NONSCALING")
        size = r.memory_usage("f")
        out = []
        for i in range(rounds):
            r.execute_command("COPY", "f", "c")
            r.slowlog_reset()
            t0 = time.perf_counter()
            r.execute_command("UNLINK", "c")
            rtt = (time.perf_counter() - t0) * 1e3
            server = [e["duration"] / 1e3 for e in r.slowlog_get(16)
                      if e["command"].startswith(b"UNLINK")]
            out.append((server[0] if server else float("nan"), rtt))
        return size, out
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", required=True, help="a bloomgate.so (repeat)")
    ap.add_argument("--capacity", type=int, default=330_000_000, help="items (377 MiB at p = 0.01)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print("| module | filter bytes | UNLINK, server ms | UNLINK, round trip ms |")
    print("| --- | ---: | --- | --- |")
    for m in a.module:
        size, out = measure(m, a.capacity, a.rounds)
        print("| %s | %d | %s | %s |" % (m, size, " ".join("%.3f" % s for s, _ in out),
                                          " ".join("%.1f" % t for _, t in out)))


if __name__ == "__main__":
    main()
