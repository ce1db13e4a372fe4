#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Benchmarks the Redis module (bloomgate.so) on one redis-server: the
server's own time per call and per item of each BF.* command, against GETBIT,
the floor of what any command costs, and against RedisBloom's figures; then
the memory of filled filters and of small keys, and the false-positive rate.

THE LOAD
Every command is sent by bench/redis_load.c (redis-benchmark's pattern: 16
connections, one request in flight on each unless --pipeline), with a new
random item in every argument: redis-benchmark itself cannot be used, as it
reads -r as a C int and zero-pads __rand_int__ to 12 digits, which GETBIT
refuses as an offset. The main filter, reserved at 0.01 for --items (10^7),
is filled with item:%012d for 0 .. items-1 (redis-benchmark's names), so
that "present" queries (item:__rand_int__, -r items, zero-padded) hit added
items and "absent" ones (miss:..., -r keyspace) never do. The keyspace of
absent and added items is max(10^8, 10 x items), below 2^31. Adds go to a
second filter reserved at 0.01 for every item the rounds add, each run
under a prefix of its own. After each add run BF.CARD must have grown by
the number of distinct items sent, E = K (1 - (1 - 1/K)^N) for N draws
from K, less the filter's false positives; a count off by more than 5%
means the load is not what it claims and the script exits 1.

Measured, --rounds times (each round printed, then the min-max spread):
INFO commandstats usec_per_call after CONFIG RESETSTAT for GETBIT at random
offsets of a bitmap as large as the filter's bits, SETBIT at random offsets
of the same bitmap (the floor of a write), BF.EXISTS on a key that
does not exist (the module's own floor: Redis's dispatch to a module
command, the key's lookup, a reply), BF.MEXISTS of 100 items on a key that
does not exist (the floor of a batch: an argument read and a reply per
item), BF.ADD, BF.EXISTS
(present, absent), BF.MADD, BF.MEXISTS (present, absent) and BF.INSERT of
100 items, and BF.MEXISTS of 100 absent items on a filter reserved for 10^6
items and on one auto-created by BF.ADD (capacity 100, expansion 2) and
grown to 10^6.

REDISBLOOM'S TYPE
The same commands on two filters of the same bits, each reserved for
--items at 0.01 and filled, each on a server of its own loaded with LAYERS
standard and set up by the same calls: one of RedisBloom's type (MBbloom--,
made by BF.LOADCHUNK of the header RedisBloom's BF.RESERVE would make) and
one of bloomgate's own type with standard layers; and MEMORY USAGE of the
first against RedisBloom's own accounting of it (BF.INFO Size, 32 +
sum(64 + link bytes)). Skipped when the module has no MBbloom-- type.

MEMORY
MEMORY USAGE per item of filters reserved at (0.01, 10^6), (0.01, 10^7),
(0.001, 10^6), (0.001, 10^7) and filled to capacity, and of the grown one,
each with its false-positive rate over 10^6 items never added. Small keys:
MEMORY USAGE of one filter reserved at (0.01, 200), scaling and NONSCALING,
and the used_memory delta per key of --small-keys such keys (the real cost
of a key), with their ratio.

TARGETS (printed PASS or FAIL; the run exits 0 whether or not they are met)
  BF.MADD, BF.MEXISTS of 100   <= 0.10 us per item and >= 2.5x faster per
                                  item than RedisBloom
  BF.ADD, BF.EXISTS            <= 0.30 us per call and <= 1.5x GETBIT's
  grown filter, absent items   <= 2x the reserved filter's time
  MEMORY USAGE                 <= RedisBloom's; within 10% of the real cost
  false-positive rate          <= the error rate the filter was made for
  RedisBloom's type            no slower than bloomgate's standard layers
                                  (TIE: slower by less than the run's noise,
                                  1 inside the ratio's 95% confidence
                                  interval over --rb-rounds paired rounds);
                                  MEMORY USAGE within 1% of RedisBloom's

  bench/redis_bench.py [--module PATH] [--loader PATH] [--stack PATH]
                       [--items N] [--requests N] [--rounds N] [--rb-rounds N]
                       [--small-keys N] [--quick]
                       [--only module|redisbloom]

--requests calls of each single-item command per round, a tenth as many
(ten times the items) of the 100-item ones. --quick: 10^6 items and fewer
requests, a smoke check whose figures mean little. --only runs one section:
the module's own filters, or RedisBloom's type against standard layers.
--module runs the same script against another module, such as RedisBloom's
redisbloom.so.
"""
import argparse
import math
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLIENTS = 16
BATCH = 100
FILL_ARGS = 200  # items per BF.MADD while filling
INT_MAX = 2**31 - 1

# RedisBloom's figures on this benchmark (server us per item of a 100-item
# batch, us per call of a single one; the upper end of what it measured),
# and its memory: bytes per item of a filter filled to its capacity, and
# bytes per small key.
RB_ITEM = {"BF.MEXISTS present": 0.245, "BF.MEXISTS absent": 0.232, "BF.MADD": 0.259}
RB_CALL = {"BF.EXISTS present": 0.57, "BF.EXISTS absent": 0.61, "BF.ADD": 0.63}
RB_MEM = {(0.01, 10**7): 1.378, "grown": 5.81}
RB_SMALL = {"nonscaling": 368, "scaling": 408, "used_memory": 442}
# The seven targets' thresholds.
ITEM_US, ITEM_SPEEDUP, CALL_US, CALL_FLOOR, GROWN_RATIO = 0.10, 2.5, 0.30, 1.5, 2.0
MEM_REAL = 0.10  # MEMORY USAGE within 10% of the used_memory delta
DISTINCT_TOLERANCE = 0.05


# ---- the server and the load generator -----------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build(need_module):
    """A Release build of redis_load, and of bloomgate.so when need_module."""
    build = os.path.join(ROOT, os.environ.get("BUILD", "build") + "-bench")
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DBG_BUILD_TESTS=OFF", "-DBG_BUILD_EXAMPLES=OFF", "-DBG_BUILD_BENCH=ON"],
                   check=True, stdout=subprocess.DEVNULL)
    targets = ["redis_load", "stack_bench"] + (["bloomgate_redis"] if need_module else [])
    jobs = os.environ.get("JOBS", "2")  # the Makefile's JOBS; 2 leaves a shared machine usable
    subprocess.run(["cmake", "--build", build, "-j", jobs, "--target"] + targets, check=True,
                   stdout=subprocess.DEVNULL)
    return (os.path.join(build, "src", "redis_module", "bloomgate.so"),
            os.path.join(build, "bench", "redis_load"), os.path.join(build, "bench", "stack_bench"))


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


class Load:
    """bench/redis_load.c against one server; every call gets a seed of its
    own, so that no two runs send the same random items."""

    def __init__(self, path, server, pipeline):
        self.path, self.server, self.pipeline, self.seed = path, server, pipeline, 0

    def send(self, args, requests, keyspace, pad=True, sequential=False, clients=CLIENTS):
        """Sends `requests` calls; returns (calls/s, integer replies equal to 1)."""
        self.seed += 1
        cmd = [self.path, "-p", str(self.server.port), "-n", str(requests), "-c", str(clients),
               "-P", str(self.pipeline), "-r", str(keyspace), "-s", str(self.seed)]
        cmd += (["-z"] if pad else []) + (["-i"] if sequential else []) + args
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
        return float(out[0]), int(out[1])

    def usec(self, name, args, requests, keyspace, pad=True):
        """(usec_per_call of `name`, calls/s, ones) for one run from a reset."""
        self.server.r.config_resetstat()
        ops, ones = self.send(args, requests, keyspace, pad)
        stats = self.server.r.info("commandstats")["cmdstat_" + name.lower()]
        return stats["usec_per_call"], ops, ones


def fill(load, key, prefix, count):
    """Adds prefix%012d for 0 .. count-1 to key (BF.MADD, which auto-creates)."""
    calls = -(-count // FILL_ARGS)
    load.send(["BF.MADD", key] + [prefix + "__rand_int__"] * FILL_ARGS, calls, count,
              sequential=True, clients=1)


def expected_distinct(keyspace, draws):
    """E = K (1 - (1 - 1/K)^N): distinct values among N uniform draws from K."""
    return keyspace * -math.expm1(draws * math.log1p(-1 / keyspace))


def check_distinct(label, grew, sent, want):
    """Prints "distinct: X of Y sent, expected Z"; exits 1 when X is off by
    more than DISTINCT_TOLERANCE, which means the load is broken."""
    line = f"distinct: {grew} of {sent} sent, expected {want:.0f}"
    if abs(grew - want) > DISTINCT_TOLERANCE * want:
        print(f"  {label}: {line}: FAIL: the load does not send the items it claims", flush=True)
        raise SystemExit(1)
    return line


def info(r, key):
    reply = r.execute_command("BF.INFO", key)
    return {k.decode(): v for k, v in zip(reply[::2], reply[1::2])}


def verdict(ok):
    return "PASS" if ok else "FAIL"


# ---- throughput ------------------------------------------------------------------


def setup_filters(r, load, a, keyspace):
    """The filled filter bf, the write filter bfw, the bitmap bm as large as
    bf's bits, and the reserved and grown filters of the absent-query
    comparison. Returns the bitmap's bits."""
    n = a.items
    r.execute_command("BF.RESERVE", "bf", "0.01", n)
    t = time.time()
    fill(load, "bf", "item:", n)
    line = check_distinct("fill", r.execute_command("BF.CARD", "bf"), n, n)
    print(f"filled bf (0.01, {n}) with item:%012d for 0..{n - 1} in {time.time() - t:.1f} s; "
          f"{line}")
    # Per round: BF.ADD's requests, and a tenth as many calls of BATCH items
    # for each of BF.MADD and BF.INSERT.
    adds = a.rounds * (a.requests + 2 * (a.requests // 10) * BATCH)
    r.execute_command("BF.RESERVE", "bfw", "0.01", max(n, adds))
    bits = info(r, "bf")["Size"] * 8
    r.setbit("bm", bits - 1, 0)
    small = min(n, 10**6)
    r.execute_command("BF.RESERVE", "reserved", "0.01", small)
    fill(load, "reserved", "r:", small)
    r.execute_command("BF.ADD", "grown", "g:start")  # auto-created: capacity 100, expansion 2
    fill(load, "grown", "g:", small)
    g = info(r, "grown")
    print(f"bfw reserved (0.01, {max(n, adds)}) for the adds; bm: a bitmap of {bits} bits; "
          f"grown: {g['Number of items inserted']} items in {g['Number of filters']} filters")
    return bits


def cases(a, keyspace, bits):
    """(label, command, args, keyspace, zero-padded, items per call, add key)."""
    n, small = a.items, min(a.items, 10**6)
    batch = ["__rand_int__"] * BATCH
    return [
        ("GETBIT", "getbit", ["GETBIT", "bm", "__rand_int__"], bits, False, 1, None),
        # A native write and one miss: what any add costs before its own work.
        ("SETBIT", "setbit", ["SETBIT", "bm", "__rand_int__", "1"], bits, False, 1, None),
        # The least any module command costs: Redis's dispatch to the module,
        # the key's lookup and a reply, no filter.
        ("BF.EXISTS, no such key", "bf.exists", ["BF.EXISTS", "nokey", "miss:__rand_int__"],
         keyspace, True, 1, None),
        # The least any batch costs per item: Redis's parsing of each argument
        # (outside the server time), the module's reading it, and its reply.
        ("BF.MEXISTS, no such key", "bf.mexists",
         ["BF.MEXISTS", "nokey"] + ["miss:" + b for b in batch], keyspace, True, BATCH, None),
        ("BF.ADD", "bf.add", ["BF.ADD", "bfw", "add{}:__rand_int__"], keyspace, True, 1, "bfw"),
        ("BF.EXISTS present", "bf.exists", ["BF.EXISTS", "bf", "item:__rand_int__"], n, True, 1,
         None),
        ("BF.EXISTS absent", "bf.exists", ["BF.EXISTS", "bf", "miss:__rand_int__"], keyspace, True,
         1, None),
        ("BF.MADD", "bf.madd", ["BF.MADD", "bfw"] + ["madd{}:" + b for b in batch], keyspace, True,
         BATCH, "bfw"),
        ("BF.MEXISTS present", "bf.mexists", ["BF.MEXISTS", "bf"] + ["item:" + b for b in batch], n,
         True, BATCH, None),
        ("BF.MEXISTS absent", "bf.mexists", ["BF.MEXISTS", "bf"] + ["miss:" + b for b in batch],
         keyspace, True, BATCH, None),
        ("BF.INSERT", "bf.insert", ["BF.INSERT", "bfw", "ITEMS"] + ["ins{}:" + b for b in batch],
         keyspace, True, BATCH, "bfw"),
        (f"BF.MEXISTS absent, reserved {small}", "bf.mexists",
         ["BF.MEXISTS", "reserved"] + ["miss:" + b for b in batch], keyspace, True, BATCH, None),
        (f"BF.MEXISTS absent, grown to {small}", "bf.mexists",
         ["BF.MEXISTS", "grown"] + ["miss:" + b for b in batch], keyspace, True, BATCH, None),
    ]


def run_case(r, load, case, round_no, requests):
    """One run of one case: (us per call, us per item, calls/s). An add run
    checks that BF.CARD grew by about the distinct items it sent."""
    label, name, args, keyspace, pad, per, add_key = case
    args = [x.format(round_no) for x in args]  # each add run a prefix of its own
    calls = requests if per == 1 else max(1, requests // 10)
    before = r.execute_command("BF.CARD", add_key) if add_key else 0
    us, ops, ones = load.usec(name, args, calls, keyspace, pad)
    if add_key:
        sent = calls * per
        grew = r.execute_command("BF.CARD", add_key) - before
        want = expected_distinct(keyspace, sent)
        line = check_distinct(label, grew, sent, want)
        print(f"  {label:<36} {line} (added per reply: {ones})")
    return us, us / per, ops


def throughput(r, load, a, keyspace, bits):
    """Every case --rounds times; returns {label: [(us/call, us/item, ops), ...]}."""
    runs = {}
    all_cases = cases(a, keyspace, bits)
    for rnd in range(a.rounds):
        print(f"\nround {rnd + 1}: server time (INFO commandstats), {CLIENTS} clients, "
              f"-P {a.pipeline}")
        rows = []
        for case in all_cases:
            runs.setdefault(case[0], []).append(run_case(r, load, case, rnd, a.requests))
            rows.append(case[0])
        print(f"  {'command':<36} {'us/call':>8} {'us/item':>8} {'calls/s':>9}")
        for label in rows:
            us, per, ops = runs[label][-1]
            print(f"  {label:<36} {us:>8.3f} {per:>8.4f} {ops:>9.0f}")
    print(f"\nover {a.rounds} rounds: us/item mean (min-max)")
    for label, rs in runs.items():
        items = [x[1] for x in rs]
        print(f"  {label:<36} {mean(items):>8.4f} ({min(items):.4f}-{max(items):.4f})")
    return runs


def mean(xs):
    return sum(xs) / len(xs)


def throughput_targets(runs, small, stack):
    print("\nTARGETS: time")
    getbit = [x[0] for x in runs["GETBIT"]]
    for label, rb in RB_ITEM.items():
        per = mean([x[1] for x in runs[label]])
        print(f"  [{verdict(per <= ITEM_US and per * ITEM_SPEEDUP <= rb)}] {label} x{BATCH}: "
              f"{per:.4f} us/item (<= {ITEM_US}); {rb / per:.1f}x faster than RedisBloom's "
              f"{rb} (>= {ITEM_SPEEDUP}x)")
    per = mean([x[1] for x in runs["BF.INSERT"]])
    print(f"  [{verdict(per <= ITEM_US)}] BF.INSERT x{BATCH}: {per:.4f} us/item (<= {ITEM_US})")
    floor = mean([x[1] for x in runs["BF.MEXISTS, no such key"]])
    print(f"        the batch floor (BF.MEXISTS x{BATCH} on no key: an argument read and a "
          f"reply per item) costs {floor:.4f} us/item")
    nokey = [x[0] for x in runs["BF.EXISTS, no such key"]]
    for label, rb in RB_CALL.items():
        us = [x[0] for x in runs[label]]
        ratio = mean([u / g for u, g in zip(us, getbit)])
        print(f"  [{verdict(mean(us) <= CALL_US and ratio <= CALL_FLOOR)}] {label}: "
              f"{mean(us):.3f} us/call (<= {CALL_US}) = {ratio:.2f}x GETBIT's {mean(getbit):.3f} "
              f"(<= {CALL_FLOOR}x); RedisBloom {rb}")
    print(f"        the module floor (BF.EXISTS on no key: dispatch, lookup, reply) costs "
          f"{mean(nokey):.3f} us/call = {mean([u / g for u, g in zip(nokey, getbit)]):.2f}x GETBIT")
    setbit = [x[0] for x in runs["SETBIT"]]
    add = [x[0] for x in runs["BF.ADD"]]
    print(f"        the write floor (SETBIT at random offsets: a native write, one miss) costs "
          f"{mean(setbit):.3f} us/call = {mean([u / g for u, g in zip(setbit, getbit)]):.2f}x "
          f"GETBIT; BF.ADD = {mean([u / g for u, g in zip(add, setbit)]):.2f}x SETBIT")
    res = mean([x[1] for x in runs[f"BF.MEXISTS absent, reserved {small}"]])
    grown = mean([x[1] for x in runs[f"BF.MEXISTS absent, grown to {small}"]])
    print(f"  [{verdict(grown <= GROWN_RATIO * res)}] absent x{BATCH}, grown to {small}: "
          f"{grown:.4f} us/item = {grown / res:.2f}x the reserved filter's {res:.4f} "
          f"(<= {GROWN_RATIO}x)")
    if stack:
        print(f"        its floor (stack_bench, library): a grown lookup costs at least "
              f"{stack:.2f}x a reserved one")


def stack_floor(binary, items):
    """stack_bench's least ratio of a grown stack's absent lookup to a
    reserved filter's (one line per layer read, plus a reserved lookup's
    work), or None without the binary."""
    if not binary or not os.path.exists(binary):
        return None
    out = subprocess.run([binary, "--items", str(items)], capture_output=True, text=True,
                         check=True).stdout
    print("\n" + out.rstrip())
    bound = next(line for line in out.splitlines() if "bound (grown floor" in line)
    return float(bound.rsplit("=", 1)[1].strip().rstrip("x"))


# ---- memory ----------------------------------------------------------------------


def false_positive_rate(load, key, absent):
    """BF.MEXISTS over `absent` items never added: the share found."""
    calls = -(-absent // BATCH)
    _, ones = load.send(["BF.MEXISTS", key] + ["never:__rand_int__"] * BATCH, calls, calls * BATCH,
                        sequential=True, clients=1)
    return ones / (calls * BATCH)


def memory(r, load, a):
    """MEMORY USAGE per item and FPR of filled filters; prints and returns rows
    of (label, error, B/item, fpr, RedisBloom's B/item or None)."""
    sizes = sorted({min(a.items, 10**6), a.items})
    absent = min(10**6, 10 * a.items)
    print(f"\nmemory: filters filled to capacity; FPR over {absent} items never added")
    rows = []
    for err in (0.01, 0.001):
        for n in sizes:
            if (err, n) == (0.01, a.items):
                key = "bf"  # the throughput filter, filled already
            else:
                key = f"mem:{err}:{n}"
                r.execute_command("BF.RESERVE", key, err, n)
                fill(load, key, "m:", n)
            rows.append((f"reserved ({err}, {n})", key, err, n, RB_MEM.get((err, n))))
    small = min(a.items, 10**6)
    rows.append((f"auto-created, grown to {small}", "grown", 0.01, small, RB_MEM["grown"]))
    out = []
    for label, key, err, n, rb in rows:
        usage = r.memory_usage(key, samples=0)
        fpr = false_positive_rate(load, key, absent)
        print(f"  {label:<30} MEMORY USAGE {usage:>10} B = {usage / n:6.3f} B/item; FPR {fpr:.5f}"
              + (f"; RedisBloom {rb} B/item" if rb else ""))
        out.append((label, err, usage / n, fpr, rb))
    return out


def used_memory(r):
    return r.info("memory")["used_memory"]


def small_keys(r, count):
    """MEMORY USAGE of one (0.01, 200) filter and the used_memory delta per
    key of `count` of them, scaling and NONSCALING."""
    print(f"\nsmall keys: BF.RESERVE (0.01, 200), {count} keys each")
    out = {}
    for kind, extra in (("scaling", []), ("nonscaling", ["NONSCALING"])):
        before = used_memory(r)
        p = r.pipeline(transaction=False)
        for i in range(count):
            p.execute_command("BF.RESERVE", f"small:{kind}:{i:06d}", "0.01", "200", *extra)
            if i % 1000 == 999:
                p.execute()
        p.execute()
        real = (used_memory(r) - before) / count
        usage = r.memory_usage(f"small:{kind}:000000", samples=0)
        out[kind] = (usage, real)
        print(f"  {kind:<11} MEMORY USAGE {usage} B; used_memory {real:.0f} B per key; "
              f"ratio {usage / real:.3f}; RedisBloom {RB_SMALL[kind]} B MEMORY USAGE, "
              f"{RB_SMALL['used_memory']} B used_memory")
    return out


def memory_targets(rows, small):
    """rows from memory(), small from small_keys()."""
    print("\nTARGETS: memory")
    for label, err, bpi, fpr, rb in rows:
        if rb:
            print(f"  [{verdict(bpi <= rb)}] {label}: {bpi:.3f} B/item (<= RedisBloom's {rb})")
        print(f"  [{verdict(fpr <= err)}] {label}: FPR {fpr:.5f} (<= {err})")
    for kind, (usage, real) in small.items():
        print(f"  [{verdict(usage <= RB_SMALL[kind])}] small {kind}: MEMORY USAGE {usage} B "
              f"(<= RedisBloom's {RB_SMALL[kind]})")
        print(f"  [{verdict(real <= RB_SMALL['used_memory'])}] small {kind}: {real:.0f} B "
              f"used_memory per key (<= RedisBloom's {RB_SMALL['used_memory']})")
        print(f"  [{verdict(abs(usage / real - 1) <= MEM_REAL)}] small {kind}: MEMORY USAGE = "
              f"{usage / real:.3f}x the real cost (within {MEM_REAL:.0%})")


# ---- RedisBloom's type -------------------------------------------------------------

RB_OPTIONS = 1 | 4  # NOROUND | FORCE64: what RedisBloom 2.6's BF.RESERVE makes
RB_TYPE_RATIO = 1.0  # RedisBloom-type keys: at most this x bloomgate's standard layers
RB_SIZE_TOLERANCE = 0.01


def rb_header(capacity, error):
    """The BF.SCANDUMP header of an empty filter as RedisBloom's `BF.RESERVE
    key error capacity` makes it (docs/REDISBLOOM_FORMAT.md, sections 2, 3
    and 8): one link at error / 2, NOROUND sizing."""
    e = error / 2
    bpe = -math.log(e) / 0.480453013918201
    hashes = math.ceil(0.693147180559945 * bpe)
    bits = max(1, int(capacity * bpe))
    nbytes = 8 * -(-bits // 64)
    return (struct.pack("<QIII", 0, 1, RB_OPTIONS, 2) +
            struct.pack("<QQQddIQB", nbytes, 8 * nbytes, 0, e, bpe, hashes, capacity, 0))


def rb_cases(n, keyspace, kind):
    """run_case's cases on filter `kind` (rb or std), adds going to kind + "w";
    "{}" in an argument is the round (a fresh prefix for each add run)."""
    batch = ["__rand_int__"] * BATCH
    w = kind + "w"
    return [
        ("BF.EXISTS present", "bf.exists", ["BF.EXISTS", kind, "item:__rand_int__"], n, True, 1,
         None),
        ("BF.EXISTS absent", "bf.exists", ["BF.EXISTS", kind, "miss:__rand_int__"], keyspace, True,
         1, None),
        ("BF.ADD", "bf.add", ["BF.ADD", w, "add{}:__rand_int__"], keyspace, True, 1, w),
        ("BF.MEXISTS present", "bf.mexists", ["BF.MEXISTS", kind] + ["item:" + b for b in batch],
         n, True, BATCH, None),
        ("BF.MEXISTS absent", "bf.mexists", ["BF.MEXISTS", kind] + ["miss:" + b for b in batch],
         keyspace, True, BATCH, None),
        ("BF.MADD", "bf.madd", ["BF.MADD", w] + ["madd{}:" + b for b in batch], keyspace, True,
         BATCH, w),
    ]


def rb_requests(a):
    """Calls per single-item run of the RedisBloom-type section: half the
    module section's, as it runs more rounds."""
    return a.requests // 2


# Two-sided 95% quantiles of Student's t by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131}


def ratio_interval(xs, ys):
    """The mean of x_i / y_i over paired rounds and its 95% confidence
    interval (Student's t): (mean, low, high)."""
    r = [x / y for x, y in zip(xs, ys)]
    m = mean(r)
    sd = math.sqrt(sum((v - m) ** 2 for v in r) / (len(r) - 1))
    half = T95.get(len(r) - 1, 2.0) * sd / math.sqrt(len(r))
    return m, m - half, m + half


def rb_setup(server, loader, a, kind):
    """Filter `kind` (rb: RedisBloom's type, made by BF.LOADCHUNK of the
    header RedisBloom's BF.RESERVE would make; std: bloomgate's) reserved
    for --items at 0.01 and filled, and kind + "w" for the adds, on its own
    server. Returns the Load, or None when the module has no MBbloom--."""
    r, n = server.r, a.items
    load = Load(loader, server, a.pipeline)
    adds = a.rb_rounds * (rb_requests(a) + (rb_requests(a) // 10) * BATCH)
    for key, cap in ((kind, n), (kind + "w", max(n, adds))):
        if kind == "std":
            r.execute_command("BF.RESERVE", key, "0.01", cap)
            continue
        try:
            r.execute_command("BF.LOADCHUNK", key, 1, rb_header(cap, 0.01))
        except redis.ResponseError as e:
            print(f"\nRedisBloom's type: skipped (BF.LOADCHUNK of RedisBloom's header: {e})")
            return None
        if r.type(key) != b"MBbloom--":
            print(f"\nRedisBloom's type: skipped (the header made a key of type {r.type(key)})")
            return None
    fill(load, kind, "item:", n)
    check_distinct(f"fill {kind}", r.execute_command("BF.CARD", kind), n, n)
    return load


def redisbloom_type(module, loader, a, keyspace):
    """RedisBloom-type keys against bloomgate's standard layers, and their
    MEMORY USAGE against RedisBloom's accounting. Returns the verdict rows,
    or None when the module has no MBbloom-- type.

    Each type has a server of its own, set up by the same calls in the same
    order: two filters made one after the other on one server differ by up
    to ~15% per single lookup of a present item, the first made or the
    second depending on the order, whatever their type (where each array
    lands in memory matters), which would hide the difference of types."""
    args = ["LAYERS", "standard"] + a.module_args.split()
    servers = {}
    try:
        loads = {}
        for kind in ("rb", "std"):
            servers[kind] = Server(module, args)
            loads[kind] = rb_setup(servers[kind], loader, a, kind)
            if loads[kind] is None:
                return None
        rb, std = servers["rb"].r, servers["std"].r
        n = a.items
        rb_bytes, std_bytes = info(rb, "rb")["Size"], std.memory_usage("std", samples=0)
        print(f"\nRedisBloom's type (two servers with LAYERS standard): rb = MBbloom-- and std = "
              f"bloomgate, both reserved (0.01, {n}) and filled; rb's BF.INFO Size {rb_bytes} B, "
              f"std's MEMORY USAGE {std_bytes} B")
        print(f"  {a.rb_rounds} rounds, {rb_requests(a)} requests per single-item run, "
              f"{max(1, rb_requests(a) // 10)} per x{BATCH} run")
        runs = {}
        for rnd in range(a.rb_rounds):
            # Each case runs on both filters one after the other, in turns
            # first (the machine's other work drifts during a run).
            kinds = ("rb", "std") if rnd % 2 == 0 else ("std", "rb")
            for kind_cases in zip(rb_cases(n, keyspace, kinds[0]), rb_cases(n, keyspace, kinds[1])):
                for kind, case in zip(kinds, kind_cases):
                    named = (f"{case[0]} ({kind})",) + case[1:]  # names the filter in the checks
                    runs.setdefault((case[0], kind), []).append(
                        run_case(servers[kind].r, loads[kind], named, rnd, rb_requests(a)))
        print(f"  {'us per call / item, mean (min-max)':<36} {'MBbloom--':>22} {'bloomgate':>22}")
        rows = []
        for label, *_ in rb_cases(n, keyspace, "rb"):
            rbs = [x[1] for x in runs[(label, "rb")]]
            stds = [x[1] for x in runs[(label, "std")]]
            print(f"  {label:<36} {mean(rbs):8.4f} ({min(rbs):.4f}-{max(rbs):.4f}) "
                  f"{mean(stds):8.4f} ({min(stds):.4f}-{max(stds):.4f})")
            rows.append((label, mean(rbs), mean(stds), ratio_interval(rbs, stds)))
        usage = rb.memory_usage("rb", samples=0)
        print(f"  MEMORY USAGE of rb: {usage} B; RedisBloom's accounting (BF.INFO Size) {rb_bytes} B")
        return rows, usage, rb_bytes
    finally:
        for server in servers.values():
            server.stop()


def redisbloom_type_targets(result):
    if result is None:
        return
    rows, usage, rb_bytes = result
    print("\nTARGETS: RedisBloom's type")
    print("  (ratio: the mean over rounds of MBbloom-- / standard layers measured one after the "
          "other,\n  with its 95% confidence interval; TIE: above 1 by less than the noise of "
          "the run)")
    for label, rb, std, (ratio, low, high) in rows:
        mark = "PASS" if ratio <= RB_TYPE_RATIO else "TIE" if low <= RB_TYPE_RATIO else "FAIL"
        print(f"  [{mark}] {label}: MBbloom-- {rb:.4f} us, standard layers {std:.4f} us; ratio "
              f"{ratio:.3f}x ({low:.3f}-{high:.3f})")
    print(f"  [{verdict(abs(usage / rb_bytes - 1) <= RB_SIZE_TOLERANCE)}] MEMORY USAGE {usage} B = "
          f"{usage / rb_bytes:.4f}x RedisBloom's {rb_bytes} B (within {RB_SIZE_TOLERANCE:.0%})")


# ---- main ------------------------------------------------------------------------


def machine():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", help="the module to load (default: build a Release bloomgate.so)")
    ap.add_argument("--loader", help="bench/redis_load.c's binary (default: build it)")
    ap.add_argument("--stack", help="bench/stack_bench.c's binary (default: build it)")
    ap.add_argument("--module-args", default="", help="extra loadmodule arguments")
    ap.add_argument("--items", type=int, help="the main filter's capacity and fill (10^7)")
    ap.add_argument("--requests", type=int, help="calls per single-item run (200000)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of every case (2)")
    ap.add_argument("--rb-rounds", type=int,
                    help="rounds of RedisBloom's type against standard layers (6)")
    ap.add_argument("--small-keys", type=int, help="keys of the small-key test (10^5)")
    ap.add_argument("--pipeline", type=int, default=1, help="requests in flight per client (1)")
    ap.add_argument("--quick", action="store_true", help="10^6 items, fewer requests: a smoke run")
    ap.add_argument("--only", choices=("module", "redisbloom"),
                    help="run one section: the module's own filters, or RedisBloom's type")
    a = ap.parse_args()
    a.items = a.items or (10**6 if a.quick else 10**7)
    a.requests = a.requests or (20000 if a.quick else 200000)
    a.rb_rounds = a.rb_rounds or (2 if a.quick else 6)
    a.small_keys = a.small_keys or min(10**5, max(1000, a.items // 10))
    if a.items < 1 or a.requests < 20 or a.rounds < 1 or a.rb_rounds < 2:
        ap.error("--items >= 1, --requests >= 20, --rounds >= 1, --rb-rounds >= 2")
    return a


def main():
    a = parse_args()
    module, loader, stack = None, None, None
    if not (a.module and a.loader):
        module, loader, stack = build(need_module=not a.module)
    stack = os.path.abspath(a.stack) if a.stack else stack
    module = os.path.abspath(a.module) if a.module else module
    loader = os.path.abspath(a.loader) if a.loader else loader
    keyspace = min(max(10**8, 10 * a.items), INT_MAX)
    if a.only == "redisbloom":
        redisbloom_type_targets(redisbloom_type(module, loader, a, keyspace))
        return 0
    server = Server(module, a.module_args.split())
    try:
        r = server.r
        load = Load(loader, server, a.pipeline)
        print(f"redis_bench: {machine()}, {os.cpu_count()} CPUs; redis-server "
              f"{r.info('server')['redis_version']}; module {module} {a.module_args}".rstrip())
        print(f"items {a.items}, keyspace {keyspace}, {a.requests} requests per single-item run, "
              f"{max(1, a.requests // 10)} per x{BATCH} run, {a.rounds} rounds")
        bits = setup_filters(r, load, a, keyspace)
        runs = throughput(r, load, a, keyspace, bits)
        rows = memory(r, load, a)
        small = small_keys(r, a.small_keys)
    finally:
        server.stop()
    floor = stack_floor(stack, min(a.items, 10**6))
    rb = None if a.only == "module" else redisbloom_type(module, loader, a, keyspace)
    throughput_targets(runs, min(a.items, 10**6), floor)
    memory_targets(rows, small)
    redisbloom_type_targets(rb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
