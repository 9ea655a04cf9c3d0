"""Shared fixtures for the integration tests: real ibresd daemons started
from build/ in temporary directories, and a raw protocol client."""
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# `make integration` names its build directory (build-san for SANITIZE=1).
BUILD = os.path.abspath(os.environ.get("IBRES_BUILD") or os.path.join(ROOT, "build"))
IBRESD = os.path.join(BUILD, "ibresd")
IBRESCTL = os.path.join(BUILD, "ibresctl")
SINGLE_NODE = os.path.join(ROOT, "conf", "examples", "single-node.conf")

# --- bounds and sanitizers ----------------------------------------------------

def pytest_configure(config):
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("pytest-timeout is missing (Debian: python3-pytest-timeout; "
                                "scripts/install-deps installs it): without it a hang would "
                                "hang the suite")


# Set by `make SANITIZE=1` (Makefile): the flags the build used and libasan's path.
SAN_CFLAGS = os.environ.get("IBRES_SAN_CFLAGS", "").split()
SANITIZED = bool(SAN_CFLAGS)
ASAN_PRELOAD = os.environ.get("IBRES_ASAN_PRELOAD", "")
SAN_RUNTIMES = ("libasan.so", "libubsan.so")


def not_sanitized(why):
    """Skip a test a SANITIZE=1 build cannot run, saying @why."""
    return pytest.mark.skipif(SANITIZED, reason="SANITIZE=1: " + why)


SAN_LOG_DIR = None
if SANITIZED:
    # Every sanitized process (daemons, tools, helpers, getent with the module) writes its
    # reports here; the autouse fixture below fails the test during which one appeared.
    import tempfile
    SAN_LOG_DIR = tempfile.mkdtemp(prefix="ibres-san-")
    os.chmod(SAN_LOG_DIR, 0o1777)  # the daemon may drop root
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        kind = var.split("_")[0].lower()
        os.environ[var] = ":".join(filter(None, [os.environ.get(var),
                                                 "log_path=%s/%s" % (SAN_LOG_DIR, kind)]))


def without_sanitizer_libs(needed):
    """@needed (DT_NEEDED names) less the sanitizer runtimes a SANITIZE=1 build adds."""
    return [n for n in needed if not (SANITIZED and n.startswith(SAN_RUNTIMES))]


def preload_sanitizer(env):
    """@env for a program we did not build (getent, python) that loads our sanitized NSS
    module or libibres: ASan's runtime must come first in the initial library list, so it
    is preloaded. Such programs' own leaks at exit are not ours: leak checking is off."""
    if ASAN_PRELOAD:
        env["LD_PRELOAD"] = " ".join(filter(None, [ASAN_PRELOAD, env.get("LD_PRELOAD")]))
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


@pytest.fixture(autouse=True)
def sanitizer_reports():
    """Fail the test during which any sanitized process reported an error."""
    if not SANITIZED:
        yield
        return
    before = set(os.listdir(SAN_LOG_DIR))
    yield
    new = sorted(set(os.listdir(SAN_LOG_DIR)) - before)
    if new:
        text = ""
        for name in new:
            with open(os.path.join(SAN_LOG_DIR, name), errors="replace") as f:
                text += "==== %s\n%s" % (name, f.read())
        pytest.fail("sanitizer reports:\n" + text, pytrace=False)


needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root (network namespaces, uid 0 admin checks)")


def wait_for_socket(path, timeout=10.0, proc=None):
    """Wait until something accepts connections on the Unix socket @path."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("daemon exited with %d" % proc.returncode)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                s.connect(path)
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError("nothing listens on %s after %.1fs" % (path, timeout))


class Daemon:
    """One ibresd process in the foreground, logging to a file."""

    def __init__(self, tmpdir, config_text=None, config_path=None, extra_args=(),
                 netns=None, sock=None, nofile=None, wrap=()):
        self.dir = str(tmpdir)
        os.makedirs(self.dir, exist_ok=True)
        if config_path is None:
            config_path = os.path.join(self.dir, "ibresd.conf")
            with open(config_path, "w") as f:
                f.write(config_text if config_text is not None else open(SINGLE_NODE).read())
        self.config = config_path
        self.socket = sock or os.path.join(self.dir, "ibresd.sock")
        self.log_path = os.path.join(self.dir, "ibresd.log")
        self.netns = netns
        self.extra_args = list(extra_args)
        self.nofile = nofile  # an open-file limit (soft and hard) to start it under
        self.wrap = list(wrap)  # a command that runs the daemon's (its argv last)
        self.proc = None

    def start(self, wait=True):
        cmd = [IBRESD, "--foreground", "--debug", "--config", self.config,
               "--socket", self.socket] + self.extra_args
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        cmd = self.wrap + cmd
        self.log = open(self.log_path, "ab")
        limit = self.nofile
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
            if limit else None)
        if wait:
            wait_for_socket(self.socket, proc=self.proc)
        return self

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=10):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise
        finally:
            self.log.close()
        return self.proc.returncode

    def logtext(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def alive(self):
        return self.proc.poll() is None


@pytest.fixture
def daemon_factory(tmp_path):
    started = []

    def make(config_text=None, name="d", **kw):
        d = Daemon(tmp_path / name, config_text=config_text, **kw)
        started.append(d)
        return d

    yield make
    for d in started:
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(5)


@pytest.fixture
def single(daemon_factory):
    """ibresd running conf/examples/single-node.conf."""
    return daemon_factory().start()


# --- raw protocol client -----------------------------------------------------

HDR = struct.Struct("<BBB3sHQ")  # length field read raw; byte order per opcode


def acm_hdr(opcode, length, status=0, data=b"\0\0\0", tid=0, version=1, be=None):
    """A 16-byte header; RESOLVE lengths host order, others big-endian."""
    if be is None:
        be = (opcode & 0x0F) != 1
    raw_len = struct.pack(">H" if be else "<H", length)
    return struct.pack("<BBB3s", version, opcode, status, data) + raw_len + struct.pack("<Q", tid)


def parse_hdr(buf):
    version, opcode, status, data = struct.unpack_from("<BBB3s", buf)
    be = (opcode & 0x0F) != 1
    (length,) = struct.unpack_from(">H" if be else "<H", buf, 6)
    (tid,) = struct.unpack_from("<Q", buf, 8)
    return dict(version=version, opcode=opcode, status=status, data=data, length=length,
                tid=tid)


def ep_entry(flags, etype, info):
    return struct.pack("<IHH", flags, etype, 0) + info.ljust(64, b"\0")[:64]


class Client:
    def __init__(self, path, timeout=5.0):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        # a socket with a timeout is non-blocking underneath, and connect(2)
        # on a UNIX socket whose listen backlog is full then fails with
        # EAGAIN at once instead of waiting its turn (a daemon under ASan
        # still taking 10,000 connections): wait for it, within the timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.s.connect(path)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def send(self, data):
        self.s.sendall(data)

    def recv_msg(self):
        """Read one whole answer; None if the daemon closed the connection."""
        buf = b""
        while len(buf) < 16:
            chunk = self.s.recv(16 - len(buf))
            if not chunk:
                return None
            buf += chunk
        h = parse_hdr(buf)
        while len(buf) < h["length"]:
            chunk = self.s.recv(h["length"] - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def request(self, data):
        self.send(data)
        return self.recv_msg()

    def closed_by_peer(self, timeout=5.0):
        self.s.settimeout(timeout)
        try:
            return self.s.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


def tlv(t, value):
    return struct.pack(">HH", t, len(value)) + value


def parse_tlvs(body):
    items, off = [], 0
    while off < len(body):
        t, length = struct.unpack_from(">HH", body, off)
        items.append((t, body[off + 4: off + 4 + length]))
        off += 4 + length
    assert off == len(body), "TLV overrun"
    return items


def run(cmd, timeout=30, check=False, env=None, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check,
                          env=env, **kw)


def have(cmd):
    return shutil.which(cmd) is not None


def run_tool(prog, *args, timeout=120, check=True):
    """Run one of the project's scripts (emulate, ibsim); raise with its
    output when @check and it fails."""
    r = subprocess.run([prog] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("%s %s failed (%d):\n%s%s" % (
            os.path.basename(prog), " ".join(map(str, args)), r.returncode, r.stdout,
            r.stderr))
    return r


# IB enums as ib_acme prints them, from the config's bytes and Gb/s.
MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
RATE_ENUM = {"2.5": 2, "10": 3, "30": 4, "5": 5, "20": 6, "40": 7, "14": 11, "56": 12,
             "25": 15, "100": 16, "200": 17, "300": 18, "400": 21, "600": 22}


def config_with(settings, base=None):
    """The single-node example with extra settings added under their sections:
    settings = {"daemon": ["acm_link = yes"], "resolve": [...]}."""
    import re
    text = open(base or SINGLE_NODE).read()
    for section, lines in settings.items():
        add = "\n".join(lines)
        pattern = r"^\[%s\][ \t]*$" % re.escape(section)
        if re.search(pattern, text, re.M):
            text = re.sub(pattern, "[%s]\n%s" % (section, add), text, count=1, flags=re.M)
        else:
            text = "[%s]\n%s\n" % (section, add) + text
    return text
