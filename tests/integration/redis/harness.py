# SPDX-License-Identifier: BSD-3-Clause
"""Integration-test harness for bloomgate.so: real redis-server processes.

Every server is started by the tests themselves, on a free loopback port in
19000-19999, in its own temporary directory, and is always stopped again:
the Server/Cluster objects register unittest cleanups, an atexit hook kills
whatever is left, and each child gets PR_SET_PDEATHSIG so that a test runner
killed by ctest's TIMEOUT does not leave redis-server processes behind.

The module comes from $BLOOMGATE_MODULE (CMake passes $<TARGET_FILE:...>),
or from `--module PATH` on the command line of a test file.

WHY A RAW CLIENT
redis-py strips a leading "ERR " from error messages and turns simple
strings, bulk strings, integers and booleans into the same Python values.
RedisBloom's replies differ exactly there ("Bad capacity" has no ERR, INFO
keys are simple strings, RESP3 answers #t/#f), so the tests read the wire
through `Conn`, which keeps:

    +OK        -> Status(b"OK")        (a bytes subclass)
    $3 abc     -> b"abc"               (plain bytes)
    -ERR x     -> Err(b"ERR x")        (exact bytes, never raised)
    :1         -> 1                    (int)
    #t / #f    -> True / False         (bool)
    $-1 *-1 _  -> None
    *n         -> list
    %n         -> Map (an ordered list of (key, value) pairs; keys may repeat)
    ,1.5       -> Double(1.5)
    ~n         -> RespSet (list)

and `same()` compares replies with their types, so that True never equals
1 and Status(b"OK") never equals b"OK".
"""

import atexit
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

REDIS_SERVER = os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "redis-server"
REDIS_CLI = os.environ.get("REDIS_CLI") or shutil.which("redis-cli") or "redis-cli"

PORT_LO, PORT_HI = 19000, 19999


def module_path():
    """The module under test: --module PATH in argv, else $BLOOMGATE_MODULE."""
    if "--module" in sys.argv:
        i = sys.argv.index("--module")
        path = sys.argv[i + 1]
        del sys.argv[i : i + 2]
        os.environ["BLOOMGATE_MODULE"] = path
    path = os.environ.get("BLOOMGATE_MODULE")
    if not path or not os.path.isfile(path):
        raise SystemExit("set BLOOMGATE_MODULE (or --module PATH) to bloomgate.so, got %r" % path)
    return os.path.abspath(path)


# ---- RESP values --------------------------------------------------------------


class Status(bytes):
    """A simple string reply (+OK)."""

    def __repr__(self):
        return "Status(%s)" % bytes.__repr__(self)


class Err:
    """An error reply, exact bytes after the '-'."""

    __slots__ = ("msg",)

    def __init__(self, msg):
        self.msg = msg if isinstance(msg, bytes) else msg.encode()

    def __eq__(self, other):
        return isinstance(other, Err) and other.msg == self.msg

    def __hash__(self):
        return hash(self.msg)

    def __repr__(self):
        return "Err(%r)" % self.msg


class Double(float):
    def __repr__(self):
        return "Double(%s)" % float.__repr__(self)


class Map(list):
    """A RESP3 map: ordered (key, value) pairs."""

    def __repr__(self):
        return "Map(%s)" % list.__repr__(self)

    def get(self, key, default=None):
        for k, v in self:
            if k == key:
                return v
        return default


class RespSet(list):
    def __repr__(self):
        return "RespSet(%s)" % list.__repr__(self)


class Push(list):
    pass


def same(a, b):
    """Equality that also compares reply types (bool vs int, Status vs bulk)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def status(s):
    return Status(s.encode() if isinstance(s, str) else s)


def err(s):
    return Err(s)


OK = Status(b"OK")
WRONGTYPE = Err(b"WRONGTYPE Operation against a key holding the wrong kind of value")


def arity(cmd):
    return Err(b"ERR wrong number of arguments for '%s' command" % cmd.encode())


class ProtocolError(Exception):
    pass


def _enc(a):
    if isinstance(a, bytes):
        return a
    if isinstance(a, str):
        return a.encode()
    if isinstance(a, bool):
        raise TypeError("no booleans in commands")
    if isinstance(a, (int, float)):
        return repr(a).encode()
    raise TypeError("cannot send %r" % (a,))


class Conn:
    """A blocking RESP2/RESP3 connection (`Conn(port).cmd("PING")`)."""

    def __init__(self, port, host="127.0.0.1", timeout=60.0, resp=2):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.port = port
        if resp == 3:
            r = self.cmd("HELLO", "3")
            if isinstance(r, Err):
                raise ProtocolError("HELLO 3 refused: %r" % r)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def pack(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = _enc(a)
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, *args):
        self.sock.sendall(self.pack(args))

    def send_raw(self, data):
        self.sock.sendall(data)

    def cmd(self, *args):
        """Send one command, return its reply (errors are returned, not raised)."""
        self.send(*args)
        return self.read()

    def pipeline(self, cmds):
        """Send many commands in one write, return their replies in order."""
        self.sock.sendall(b"".join(self.pack(c) for c in cmds))
        return [self.read() for _ in cmds]

    # -- parsing --
    def _fill(self):
        if self.pos > 1 << 20:
            del self.buf[: self.pos]
            self.pos = 0
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("server closed the connection")
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos : i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        if self.buf[self.pos + n : self.pos + n + 2] != b"\r\n":
            raise ProtocolError("bulk not terminated by CRLF")
        self.pos += n + 2
        return data

    def read(self):
        while True:
            r = self._read_one()
            if not isinstance(r, Push):
                return r

    def _read_one(self):
        line = self._line()
        if not line:
            raise ProtocolError("empty line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Status(rest)
        if t == b"-":
            return Err(rest)
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            items = [self._read_one() for _ in range(n)]
            return {b"*": list, b"~": RespSet, b">": Push}[t](items)
        if t == b"%":
            n = int(rest)
            return Map((self._read_one(), self._read_one()) for _ in range(n))
        if t == b"_":
            return None
        if t == b"#":
            if rest not in (b"t", b"f"):
                raise ProtocolError("bad boolean %r" % rest)
            return rest == b"t"
        if t == b",":
            return Double(float(rest))
        if t == b"(":
            return int(rest)
        if t in (b"=", b"!"):
            data = self._exact(int(rest))
            return Err(data) if t == b"!" else data
        if t == b"|":  # attribute: skip it, return the value it decorates
            n = int(rest)
            for _ in range(2 * n):
                self._read_one()
            return self._read_one()
        raise ProtocolError("unknown reply type %r" % line)


# ---- processes ----------------------------------------------------------------

_live = []  # every Popen started, until stopped


def _kill_leftovers():
    for p in list(_live):
        if p.poll() is None:
            try:
                p.kill()
                p.wait(10)
            except Exception:
                pass
        _live.remove(p)


atexit.register(_kill_leftovers)

_libc = None


def _pdeathsig():
    # The child dies with us, even when ctest SIGKILLs the test at TIMEOUT.
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _port_free(port):
    for fam, addr in ((socket.AF_INET, "127.0.0.1"),):
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            s.bind((addr, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


_rng = random.Random(os.getpid() ^ int(time.time() * 1000))
_handed = set()


def free_port():
    """A port in 19000-19999 nobody listens on (and this process has not handed out)."""
    for _ in range(2000):
        p = _rng.randint(PORT_LO, PORT_HI)
        if p not in _handed and _port_free(p):
            _handed.add(p)
            return p
    raise RuntimeError("no free port in %d-%d" % (PORT_LO, PORT_HI))


def wait_until(pred, timeout=20.0, interval=0.05, what="condition"):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            last = pred()
            if last:
                return last
        except (OSError, ConnectionError, ProtocolError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def info_field(conn, section, field):
    text = conn.cmd("INFO", section)
    if isinstance(text, Err):
        raise AssertionError("INFO %s: %r" % (section, text))
    for line in text.decode().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return None


class ServerStartError(Exception):
    pass


class Server:
    """One redis-server with bloomgate.so loaded.

    module_args: words after the module path (`MAX_BYTES 1048576`).
    extra: more `--name value` words for redis-server.
    dir: the data directory (a new temporary one when None; removed on stop
    unless keep_dir)."""

    def __init__(self, module=None, module_args=(), extra=(), dir=None, load_module=True):
        self.module = module or os.environ.get("BLOOMGATE_MODULE")
        self.module_args = [str(a) for a in module_args]
        self.extra = [str(a) for a in extra]
        self.own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="bloomgate-redis-")
        self.load_module = load_module
        self.port = None
        self.proc = None
        self._conns = []

    @property
    def logfile(self):
        return os.path.join(self.dir, "redis-%d.log" % self.port)

    def argv(self):
        a = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--logfile", self.logfile,
            "--daemonize", "no",
            "--save", "",
            "--protected-mode", "no",
            "--enable-debug-command", "yes",
            # A replica's full sync starts at once instead of after 5 s.
            "--repl-diskless-sync-delay", "0",
        ]
        if self.load_module:
            a += ["--loadmodule", self.module] + self.module_args
        return a + self.extra

    def start(self, expect_fail=False, timeout=20.0):
        """Start (or restart, same port and dir) and wait for PING.

        With expect_fail, wait for the process to exit instead and return its
        exit status (the module refused to load)."""
        attempts = 0
        while True:
            attempts += 1
            if self.port is None:
                self.port = free_port()
            if os.path.exists(self.logfile):
                os.rename(self.logfile, self.logfile + ".%d" % time.monotonic_ns())
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, preexec_fn=_pdeathsig, cwd=self.dir)
            _live.append(self.proc)
            if expect_fail:
                try:
                    rc = self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.stop()
                    raise AssertionError("redis-server kept running; expected it to refuse to start")
                _live.remove(self.proc)
                self.proc = None
                return rc
            try:
                self._wait_ready(timeout)
                return self
            except ServerStartError:
                log = self.log()
                self._reap()
                # Someone took the port between our check and the bind: retry elsewhere.
                if "Address already in use" in log and attempts < 5:
                    self.port = None
                    continue
                raise ServerStartError("redis-server did not start: %s\n--- log ---\n%s" % (self.argv(), log[-3000:]))

    def _is_ours(self, c):
        """Whether the server on connection c is this object's process.

        The tests run in parallel and pick ports at random in one range, so
        the server on our port may be another test's (ours lost the bind, or
        has exited and someone took the port): never call that one ours,
        and never shut it down (CI once saw a server stopped 4 ms after it
        started, by a SHUTDOWN meant for another)."""
        try:
            pid = info_field(c, "server", "process_id")
        except AssertionError:  # an error reply (BUSY, NOAUTH): not known to be ours
            return False
        return self.proc is not None and pid == str(self.proc.pid)

    def _wait_ready(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise ServerStartError("exited with %d" % self.proc.returncode)
            try:
                with Conn(self.port, timeout=2) as c:
                    r = c.cmd("PING")
                    if r == Status(b"PONG") and self._is_ours(c):
                        return
            except (OSError, ConnectionError, ProtocolError):
                pass
            time.sleep(0.03)
        raise ServerStartError("no PONG within %.0fs" % timeout)

    def log(self):
        try:
            with open(self.logfile, errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def conn(self, resp=2, timeout=60.0):
        c = Conn(self.port, timeout=timeout, resp=resp)
        self._conns.append(c)
        return c

    def redis_py(self, **kw):
        import redis  # only test_redis_py / test_cluster need it

        r = redis.Redis(host="127.0.0.1", port=self.port, **kw)
        self._conns.append(r)
        return r

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def ping(self):
        with Conn(self.port, timeout=10) as c:
            return c.cmd("PING")

    def _reap(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
            if self.proc in _live:
                _live.remove(self.proc)
            self.proc = None

    def _close_conns(self):
        for c in self._conns:
            try:
                c.close()
            except Exception:
                pass
        self._conns = []

    def stop(self, save=False):
        """SHUTDOWN [NOSAVE|SAVE], then kill if it lingers. Idempotent."""
        self._close_conns()
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                with Conn(self.port, timeout=10) as c:
                    if not self._is_ours(c):
                        raise ConnectionError("port %d: not our server" % self.port)
                    c.send("SHUTDOWN", "SAVE" if save else "NOSAVE")
                    try:
                        c.read()
                    except (OSError, ConnectionError, ProtocolError):
                        pass
                self.proc.wait(15)
            except (OSError, subprocess.TimeoutExpired, ConnectionError):
                pass
        self._reap()

    def restart(self, save=False, **kw):
        """Stop and start again on the same port and directory (RDB/AOF reload)."""
        self.stop(save=save)
        return self.start(**kw)

    def cleanup(self):
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def wait_loaded(self, timeout=30):
        with Conn(self.port) as c:
            wait_until(lambda: info_field(c, "persistence", "loading") == "0", timeout, what="loading:0")


def start_server(test, **kw):
    """A started Server that is stopped (and its dir removed) when `test` ends."""
    s = Server(**kw)
    if isinstance(test, unittest.TestCase):
        test.addCleanup(s.cleanup)
    else:
        test.append(s.cleanup)  # a list of cleanups (setUpClass)
    try:
        s.start()
    except BaseException:
        s.cleanup()
        raise
    return s


def start_replica(test, master, **kw):
    """A server replicating `master` (REPLICAOF), returned once in sync."""
    r = start_server(test, **kw)
    with r.conn() as c:
        rep = c.cmd("REPLICAOF", "127.0.0.1", str(master.port))
        if rep != OK:
            raise AssertionError("REPLICAOF: %r" % (rep,))
        def up():
            if not r.alive() or not master.alive():
                raise AssertionError("a server died during the sync:\n--- replica log ---\n%s\n--- master log ---\n%s"
                                     % (r.log()[-2000:], master.log()[-2000:]))
            return info_field(c, "replication", "master_link_status") == "up"
        wait_until(up, 30, what="master_link_status:up")
    wait_sync(master, r)
    return r


def wait_sync(master, *replicas, timeout=30):
    """Block until every replica acknowledged the master's current offset (WAIT)."""
    with master.conn() as c:
        n = c.cmd("WAIT", str(len(replicas)), str(int(timeout * 1000)))
        if not isinstance(n, int) or n < len(replicas):
            raise AssertionError("WAIT %d: %r" % (len(replicas), n))
    # WAIT counts acknowledgements; also check the replicas have applied them.
    with master.conn() as c:
        off = int(info_field(c, "replication", "master_repl_offset"))
    for r in replicas:
        with r.conn() as rc:
            wait_until(lambda: int(info_field(rc, "replication", "slave_repl_offset") or -1) >= off,
                       timeout, what="replica offset %d" % off)


class Cluster:
    """Three masters, slots split by redis-cli --cluster create, no replicas."""

    def __init__(self, n=3, module_args=()):
        self.dir = tempfile.mkdtemp(prefix="bloomgate-cluster-")
        self.nodes = []
        self.n = n
        self.module_args = module_args

    def start(self):
        for i in range(self.n):
            d = os.path.join(self.dir, "n%d" % i)
            os.mkdir(d)
            bus = free_port()
            s = Server(dir=d, module_args=self.module_args, extra=[
                "--cluster-enabled", "yes",
                "--cluster-config-file", os.path.join(d, "nodes.conf"),
                "--cluster-port", str(bus),
                "--cluster-node-timeout", "5000",
                "--appendonly", "no",
            ])
            self.nodes.append(s)
            s.start()
        addrs = ["127.0.0.1:%d" % s.port for s in self.nodes]
        p = subprocess.run([REDIS_CLI, "--cluster", "create"] + addrs +
                           ["--cluster-replicas", "0", "--cluster-yes"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                           preexec_fn=_pdeathsig)
        if p.returncode != 0:
            raise AssertionError("redis-cli --cluster create failed: %s %s" % (p.stdout[-2000:], p.stderr[-2000:]))
        for s in self.nodes:
            with s.conn() as c:
                wait_until(lambda: info_cluster(c).get("cluster_state") == "ok", 60, 0.1,
                           what="cluster_state:ok on %d" % s.port)
        return self

    def cli(self, *args, timeout=30):
        """`redis-cli -c -p <first node> args...`: stdout as text."""
        p = subprocess.run([REDIS_CLI, "-c", "-h", "127.0.0.1", "-p", str(self.nodes[0].port)] +
                           [str(a) for a in args], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout, preexec_fn=_pdeathsig)
        return p.stdout.decode(errors="replace").strip()

    def node_for(self, key):
        """The node that serves `key` (by CLUSTER KEYSLOT and CLUSTER SLOTS)."""
        with self.nodes[0].conn() as c:
            slot = c.cmd("CLUSTER", "KEYSLOT", key)
            for lo, hi, master, *_ in c.cmd("CLUSTER", "SLOTS"):
                if lo <= slot <= hi:
                    port = master[1]
                    return next(s for s in self.nodes if s.port == port)
        raise AssertionError("no node for slot %r" % slot)

    def cleanup(self):
        for s in self.nodes:
            s.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def info_cluster(conn):
    text = conn.cmd("CLUSTER", "INFO")
    out = {}
    if isinstance(text, bytes):
        for line in text.decode().splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v.strip()
    return out


class RespTestCase(unittest.TestCase):
    """assertReply compares with types (see same())."""

    def assertReply(self, actual, expected, msg=None):
        if not same(actual, expected):
            self.fail("%sreply %r != expected %r" % ((msg + ": ") if msg else "", actual, expected))

    def assertErr(self, actual, msg=None):
        if not isinstance(actual, Err):
            self.fail("%sexpected an error reply, got %r" % ((msg + ": ") if msg else "", actual))


def main():
    module_path()
    unittest.main(verbosity=2)
