#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Benchmarks the Redis module (bloomgate.so) with redis-benchmark, against
GETBIT on the same server (the floor of what any command costs) and against
the plain-Redis approach the seeds describe: a Lua script doing k SETBIT or
GETBIT on a string key, its k offsets computed by the client (as go-zero and
Redisson do), here random.

For each command, with and without pipelining (-P 16): ops/s as
redis-benchmark measures them (client and server share this machine's 2
cores, so the client is often the limit), and the server's own time per call
from INFO commandstats (usec_per_call, after CONFIG RESETSTAT): the figure
the module controls. GETBIT at random offsets cannot be sent by
redis-benchmark (its random numbers are zero-padded, which bit offsets
refuse), so the floor and the single-item BF.* commands compared with it
are all measured under bench/redis_load.c, the same load pattern with plain
numbers: a server's time per call depends on how busy its clients keep it. Then bytes per item (MEMORY USAGE) of filters reserved
for and filled with 10^6 and 10^7 items, and of one grown from RedisBloom's
default (capacity 100) to 10^6, and the false-positive rate measured with
10^6 BF.MEXISTS items that were never added. Targets:
  BF.EXISTS and BF.ADD server time  <= 2x GETBIT's
  BF.MEXISTS and BF.MADD of 100     <= 0.1 us of server time per item
  bytes per item                    <= a standard filter's for the measured
                                       error rate (m/n = -ln p / ln^2 2), +5%

  bench/redis_bench.py [--module PATH] [--requests N] [--items N]

Not a test: it prints a table and exits 0 whether or not targets are met.
"""
import argparse
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
K_BASELINE = 7  # hashes of a standard filter at p = 0.01

# tonumber: redis-benchmark's __rand_int__ is zero-padded to 12 digits, which
# SETBIT and GETBIT refuse as an offset; a Lua number is passed without them.
LUA_ADD = ("for i = 1, #ARGV do redis.call('SETBIT', KEYS[1], tonumber(ARGV[i]), 1) end "
           "return 1")
LUA_EXISTS = ("for i = 1, #ARGV do if redis.call('GETBIT', KEYS[1], tonumber(ARGV[i])) == 0 "
              "then return 0 end end return 1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_module():
    build = os.path.join(ROOT, os.environ.get("BUILD", "build") + "-bench")
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DBG_BUILD_TESTS=OFF", "-DBG_BUILD_EXAMPLES=OFF", "-DBG_BUILD_BENCH=ON"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "--target", "bloomgate_redis", "redis_load"],
                   check=True, stdout=subprocess.DEVNULL)
    return (os.path.join(build, "src", "redis_module", "bloomgate.so"),
            os.path.join(build, "bench", "redis_load"))


class Server:
    def __init__(self, module, args):
        self.dir = tempfile.mkdtemp(prefix="bg-redis-bench-")
        self.port = free_port()
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
               "--save", "", "--appendonly", "no", "--loadmodule", module] + args
        self.proc = subprocess.Popen(cmd, stdout=open(os.path.join(self.dir, "log"), "w"),
                                     stderr=subprocess.STDOUT)
        self.r = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                self.r.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start: " + open(os.path.join(self.dir, "log")).read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def fill(r, key, prefix, count, batch=1000):
    p = r.pipeline(transaction=False)
    for at in range(0, count, batch):
        n = min(batch, count - at)
        p.execute_command("BF.MADD", key, *[f"{prefix}{i:012d}" for i in range(at, at + n)])
        if (at // batch) % 50 == 49:
            p.execute()
    p.execute()


def load_usec(server, loader, cmd_name, args, requests, pipeline, keyspace, pad):
    """usec_per_call of one command under bench/redis_load.c: redis-benchmark's
    pattern (16 connections, `pipeline` in flight on each), with plain
    decimal random numbers. GETBIT, the floor, can only be measured this way
    (redis-benchmark's __rand_int__ is zero-padded, which GETBIT refuses as
    an offset), and the server's time per call depends on how busy the
    clients keep it, so the BF.* commands the targets compare with it are
    measured the same way too."""
    server.r.config_resetstat()
    subprocess.run([loader, "-p", str(server.port), "-n", str(requests), "-c", "16",
                    "-P", str(pipeline), "-r", str(keyspace)] + (["-z"] if pad else []) + args,
                   check=True,
                   stdout=subprocess.DEVNULL)
    return server.r.info("commandstats")["cmdstat_" + cmd_name]["usec_per_call"]


def run(server, cmd_name, args, requests, pipeline, keyspace):
    """ops/s from redis-benchmark and usec_per_call of cmd_name on the server."""
    server.r.config_resetstat()
    out = subprocess.run(["redis-benchmark", "-p", str(server.port), "-n", str(requests),
                          "-r", str(keyspace), "-P", str(pipeline), "-c", "16", "--csv"] + args,
                         check=True, capture_output=True, text=True).stdout
    rows = [line for line in out.splitlines() if line and not line.startswith('"test"')]
    ops = float(rows[-1].split(",")[1].strip('"'))
    stats = server.r.info("commandstats")
    usec = stats["cmdstat_" + cmd_name.lower()]["usec_per_call"]
    return ops, usec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", help="bloomgate.so (default: build a Release one)")
    ap.add_argument("--loader", help="bench/redis_load.c's binary (default: build it)")
    ap.add_argument("--requests", type=int, default=200000, help="per redis-benchmark run")
    ap.add_argument("--items", type=int, default=10_000_000, help="reserved and added items")
    ap.add_argument("--module-args", default="", help="extra loadmodule arguments")
    a = ap.parse_args()
    module, loader = build_module() if not (a.module and a.loader) else (None, None)
    module = os.path.abspath(a.module) if a.module else module
    loader = os.path.abspath(a.loader) if a.loader else loader
    n = a.items
    server = Server(module, a.module_args.split())
    try:
        r = server.r
        ver = r.info("server")["redis_version"]
        print(f"redis_bench: redis-server {ver}, module {module} {a.module_args}".rstrip())
        print(f"  {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
              f"{os.cpu_count()} CPUs, redis-benchmark -c 16 -n {a.requests}")
        r.execute_command("BF.RESERVE", "bf", "0.01", n)
        t = time.time()
        fill(r, "bf", "item:", n)
        print(f"  filled bf with {n} items in {time.time() - t:.1f} s")
        r.execute_command("BF.RESERVE", "bfw", "0.01", n)
        m = math.ceil(-n * math.log(0.01) / math.log(2) ** 2)
        r.setbit("bm", m - 1, 0)
        add_sha = r.script_load(LUA_ADD)
        exists_sha = r.script_load(LUA_EXISTS)

        def items(prefix, count):
            return [f"{prefix}__rand_int__"] * count

        cases = [
            ("BF.ADD", "bf.add", ["BF.ADD", "bfw"] + items("add:", 1), 10 ** 12, 1),
            ("BF.EXISTS present", "bf.exists", ["BF.EXISTS", "bf"] + items("item:", 1), n, 1),
            ("BF.EXISTS absent", "bf.exists", ["BF.EXISTS", "bf"] + items("miss:", 1), 10 ** 12, 1),
            ("BF.MADD 100", "bf.madd", ["BF.MADD", "bfw"] + items("add:", 100), 10 ** 12, 100),
            ("BF.MEXISTS 100 present", "bf.mexists", ["BF.MEXISTS", "bf"] + items("item:", 100), n,
             100),
            ("BF.MEXISTS 100 absent", "bf.mexists", ["BF.MEXISTS", "bf"] + items("miss:", 100),
             10 ** 12, 100),
            (f"Lua {K_BASELINE} SETBIT (add)", "evalsha",
             ["EVALSHA", add_sha, "1", "bm"] + ["__rand_int__"] * K_BASELINE, m, 1),
            (f"Lua {K_BASELINE} GETBIT (exists)", "evalsha",
             ["EVALSHA", exists_sha, "1", "bm"] + ["__rand_int__"] * K_BASELINE, m, 1),
        ]
        results = {}
        print()
        same = [  # the present items were added zero-padded (redis-benchmark's names)
            ("GETBIT random offset", "getbit", ["GETBIT", "bm", "__rand_int__"], m, False),
            ("BF.EXISTS present", "bf.exists", ["BF.EXISTS", "bf", "item:__rand_int__"], n, True),
            ("BF.EXISTS absent", "bf.exists", ["BF.EXISTS", "bf", "miss:__rand_int__"], 10 ** 12,
             True),
            ("BF.ADD", "bf.add", ["BF.ADD", "bfw", "load:__rand_int__"], 10 ** 12, True),
        ]
        print(f"  server us/call under redis_load (16 connections): {'-P 1':>8} {'-P 16':>8}")
        for label, name, args, keyspace, pad in same:
            us1 = load_usec(server, loader, name, args, a.requests, 1, keyspace, pad)
            us16 = load_usec(server, loader, name, args, a.requests, 16, keyspace, pad)
            results["same " + label] = (us1, us16)
            print(f"  {label:<48} {us1:>8.2f} {us16:>8.2f}")
        print()
        print(f"  redis-benchmark, 16 clients: {'ops/s':>6} {'ops/s -P16':>11} {'us/call':>8} "
              f"{'us/call -P16':>12} {'us/item':>8}")
        for label, name, args, keyspace, per in cases:
            ops1, us1 = run(server, name, args, a.requests, 1, keyspace)
            ops16, us16 = run(server, name, args, a.requests, 16, keyspace)
            results[label] = (us1, us16, per)
            print(f"  {label:<26} {ops1:>10.0f} {ops16:>11.0f} {us1:>8.2f} {us16:>12.2f} "
                  f"{min(us1, us16) / per:>8.3f}")

        # Memory: reserved for and filled with n items; and scaled up from 100.
        print()
        mem = []
        for count in sorted({min(n, 10 ** 6), n}):
            key = f"mem{count}"
            r.execute_command("BF.RESERVE", key, "0.01", count)
            fill(r, key, "m:", count)
            mem.append((f"reserved {count}, {count} added", key, count))
        fill(r, "grown", "g:", min(n, 10 ** 6))  # auto-created: 0.01, capacity 100
        mem.append((f"auto-created (capacity 100), {min(n, 10 ** 6)} added", "grown", min(n, 10 ** 6)))
        absent = 10 ** 6
        for label, key, count in mem:
            usage = r.memory_usage(key, samples=0)
            info = r.execute_command("BF.INFO", key)
            hits = 0
            p = r.pipeline(transaction=False)
            for at in range(0, absent, 1000):
                p.execute_command("BF.MEXISTS", key, *[f"never:{i}" for i in range(at, at + 1000)])
            for reply in p.execute():
                hits += sum(reply)
            rate = hits / absent
            ideal = -math.log(rate) / math.log(2) ** 2 / 8 if rate > 0 else float("nan")
            bpi = usage / count
            print(f"  {label:<40} MEMORY USAGE {usage:>10} B = {bpi:6.3f} B/item; "
                  f"FP {rate:.5f} (1e6 absent); standard filter at that rate {ideal:6.3f} B/item "
                  f"-> {bpi / ideal:5.3f}x; BF.INFO {info}")
            if key != "grown":  # a grown stack is informational: it pays for not knowing n
                results["mem " + label] = (bpi, ideal)

        print()
        print("TARGETS")
        floor = results["same GETBIT random offset"]
        for label in ("BF.EXISTS present", "BF.EXISTS absent", "BF.ADD"):
            for i, how in ((0, "-P 1"), (1, "-P 16")):
                us = results["same " + label][i]
                ok = us <= 2 * floor[i]
                print(f"  [{'PASS' if ok else 'FAIL'}] {label}, {how}: {us:.2f} us/call = "
                      f"{us / floor[i]:.2f}x GETBIT's {floor[i]:.2f} (target <= 2x)")
        for label in ("BF.MADD 100", "BF.MEXISTS 100 present", "BF.MEXISTS 100 absent"):
            us1, us16, per = results[label]
            best = min(us1, us16) / per
            print(f"  [{'PASS' if best <= 0.1 else 'FAIL'}] {label}: {best:.3f} us/item "
                  f"(target <= 0.1)")
        for key, val in results.items():
            if key.startswith("mem "):
                bpi, ideal = val
                print(f"  [{'PASS' if bpi <= 1.05 * ideal else 'FAIL'}] {key[4:]}: {bpi:.3f} B/item "
                      f"= {bpi / ideal:.3f}x the standard filter's {ideal:.3f} (target <= 1.05x)")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
