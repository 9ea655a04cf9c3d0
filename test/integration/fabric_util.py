"""Helpers for the multi-node tests and the fabric benchmark: drive
test/fabric/emulate, talk to the daemons' sockets (RESOLVE, HOST, STATS,
CACHE_LIST, CACHE_FLUSH) and send raw datagrams from inside a node's
namespace. Stdlib only, so bench/fabric-bench can import it too."""
import base64
import contextlib
import hashlib
import hmac
import ipaddress
import json
import os
import re
import select
import struct
import subprocess
import time

import pytest

from conftest import (MTU_ENUM, RATE_ENUM, ROOT, Client, acm_hdr, ep_entry, parse_hdr,  # noqa: F401
                      parse_tlvs, run_tool, tlv)

EMULATE = os.path.join(ROOT, "test", "fabric", "emulate")
PYTHON = "/usr/bin/python3"

OP_RESOLVE, OP_HOST, OP_CACHE_LIST, OP_CACHE_FLUSH, OP_STATS = 0x01, 0x08, 0x09, 0x0a, 0x0b
T_NAME, T_IPV4, T_IPV6, T_GID, T_LID, T_PKEY, T_TTL, T_FLAGS, T_STATE, T_ORIGIN = \
    1, 3, 4, 5, 6, 8, 9, 10, 11, 12
T_NEST, T_COUNTER, T_OFFSET, T_NEXT, T_COUNT, T_KEYTYPE, T_PATH, T_KEY = \
    13, 14, 15, 16, 17, 18, 22, 23
ST_SUCCESS, ST_ENODATA, ST_ETIMEDOUT = 0, 3, 6
ORIGIN_LOCAL, ORIGIN_STATIC, ORIGIN_FABRIC = 0, 1, 2
STATE_RESOLVED, STATE_ROUTED, STATE_NEGATIVE = 2, 3, 4
FLAG_SOURCE, FLAG_DEST, FLAG_NODELAY = 1, 2, 1 << 30
TYPE_NAME, TYPE_IP, TYPE_IP6, TYPE_PATH = 1, 2, 3, 0x10


# The two groups emulate gives every node, lowest priority first.
GROUP_PARAMS = [(2048, "10"), (4096, "100")]


@pytest.fixture
def cluster_factory(tmp_path):
    """Clusters made on demand (cluster_factory(nodes, *up_args, name=None)),
    each torn down when the test ends."""
    made = []

    def make(nodes, *args, name=None):
        c = Cluster(tmp_path / (name or "c%d" % len(made)), nodes, *args)
        made.append(c)
        return c.up()

    yield make
    for c in made:
        c.down()


def emulate(*args, timeout=120, check=True):
    return run_tool(EMULATE, *args, timeout=timeout, check=check)


class Cluster:
    """A cluster made by `emulate up` in @dir; always call down()."""

    def __init__(self, dir, nodes, *up_args):
        self.dir = str(dir)
        self.n = nodes
        self.up_args = [str(a) for a in up_args]
        self.nodes = {}
        self.rails = {}     # k -> [rails.tsv row of rail 0, rail 1, ...]
        self.parts = {}     # k -> [partitions.tsv row of each partition beyond a rail's own]
        self.started = None

    def up(self, timeout=120):
        try:
            emulate("up", "--nodes", self.n, "--dir", self.dir, "-q", *self.up_args,
                    timeout=timeout)
        except BaseException:
            self.down()
            raise
        # Every daemon started before `up` returned: their settle time ends
        # at the latest settle_time after now.
        self.started = time.monotonic()
        with open(os.path.join(self.dir, "nodes.tsv")) as f:
            lines = f.read().splitlines()
        head = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(head, line.split("\t")))
            row["lid"] = int(row["lid"])
            row["k"] = int(row["name"][4:])
            self.nodes[row["k"]] = row
        rails = os.path.join(self.dir, "rails.tsv")
        if os.path.exists(rails):   # emulate --rails: one row per node and rail
            with open(rails) as f:
                lines = f.read().splitlines()
            head = lines[0].split("\t")
            for line in lines[1:]:
                row = dict(zip(head, line.split("\t")))
                row["lid"], row["rail"] = int(row["lid"]), int(row["rail"])
                row["k"] = int(row["name"][4:])
                self.rails.setdefault(row["k"], []).append(row)
        parts = os.path.join(self.dir, "partitions.tsv")
        if os.path.exists(parts):   # emulate --partitions
            with open(parts) as f:
                lines = f.read().splitlines()
            head = lines[0].split("\t")
            for line in lines[1:]:
                row = dict(zip(head, line.split("\t")))
                row["lid"], row["rail"] = int(row["lid"]), int(row["rail"])
                row["pkey"] = int(row["pkey"], 16)
                row["k"] = int(row["name"][4:])
                self.parts.setdefault(row["k"], []).append(row)
        return self

    def wait_settled(self, settle=1.0, complete=3.0):
        """Sleep until every daemon has been up for @settle seconds (the
        settle_time, 1 s by default) plus a margin, then until each counts
        its directory complete (STATS directory_complete 1), at most
        @complete seconds more. A node boots with one NEWCOMER announce: its
        peers' last digests then predate it, and it is complete once K of
        them vouched in answers to its range queries, a few hundred ms after
        the settle time (doc/fabric-protocol.md). A node that stays
        incomplete is left so: the test's own checks say what it expects."""
        left = self.started + settle + 0.2 - time.monotonic()
        if left > 0:
            time.sleep(left)
        end = time.monotonic() + complete
        for k in self.nodes:
            while time.monotonic() < end:
                try:
                    if stats(self.sock(k)).get("directory_complete", 1) == 1:
                        break
                except (OSError, ValueError, AssertionError):
                    break  # not running: nothing to wait for
                time.sleep(0.05)

    def down(self):
        emulate("down", "--dir", self.dir, timeout=120, check=False)

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()

    def sock(self, k):
        return self.nodes[k]["socket"]

    def netns(self, k):
        return self.nodes[k]["netns"]

    def kill(self, k, sig="TERM", wait=True):
        args = ["kill", "--dir", self.dir, "--node", k, "--signal", sig]
        if not wait:
            args.append("--no-wait")
        return emulate(*args, timeout=30)

    def start(self, k):
        return emulate("start", "--dir", self.dir, "--node", k, timeout=60)

    def link(self, k, state, rail=None):
        extra = [] if rail is None else ["--rail", rail]
        return emulate("link", "--dir", self.dir, "--node", k, *extra, state, timeout=30)

    def loss(self, pct, where="node"):
        return emulate("loss", "--dir", self.dir, pct, "--loss-at", where, timeout=60)

    def status(self):
        return json.loads(emulate("status", "--dir", self.dir, "--json").stdout)

    def pid(self, k):
        with open(os.path.join(self.dir, "node%d" % k, "ibresd.pid")) as f:
            return int(f.read())

    def log(self, k):
        with open(os.path.join(self.dir, "node%d" % k, "ibresd.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def logs(self):
        return "\n".join("==== node%d\n%s" % (k, self.log(k)[-4000:]) for k in self.nodes)

    def config(self, k):
        with open(os.path.join(self.dir, "node%d" % k, "ibresd.conf")) as f:
            return f.read()


# --- ib_acme -------------------------------------------------------------------------

def acme(sock, *args, timeout=30):
    return subprocess.run(["ib_acme", "-S", sock] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def path_fields(out):
    """The 'key: value' lines of ib_acme's path printout."""
    return dict(re.findall(r"^\s+([a-z ]+): (\S+)$", out, re.M))


# --- raw client operations --------------------------------------------------------

def _ext_request(sock, opcode, body=b"", timeout=10.0):
    c = Client(sock, timeout=timeout)
    try:
        ans = c.request(acm_hdr(opcode, 16 + len(body)) + body)
    finally:
        c.close()
    assert ans is not None, "daemon closed the connection"
    h = parse_hdr(ans)
    assert h["opcode"] == opcode | 0x80, h
    return h["status"], parse_tlvs(ans[16:]) if h["status"] == 0 else []


def _u(v):
    return int.from_bytes(v, "big")


def stats(sock):
    """STATS: {counter name: value}."""
    status, items = _ext_request(sock, OP_STATS)
    assert status == 0, status
    out, name = {}, None
    for t, v in items:
        if t == T_NAME:
            name = v.decode()
        elif t == T_COUNTER:
            out[name] = _u(v)
    return out


def host_record(items):
    rec = {"names": [], "ipv4": [], "ipv6": [], "gids": []}
    for t, v in items:
        if t == T_NAME:
            rec["names"].append(v.decode())
        elif t == T_IPV4:
            rec["ipv4"].append(str(ipaddress.IPv4Address(v)))
        elif t == T_IPV6:
            rec["ipv6"].append(str(ipaddress.IPv6Address(v)))
        elif t == T_GID:
            rec["gids"].append(str(ipaddress.IPv6Address(v)))
        elif t == T_LID:
            rec["lid"] = _u(v)
        elif t == T_PKEY:
            rec["pkey"] = _u(v)
        elif t == T_TTL:
            rec["ttl"] = _u(v)
        elif t == T_KEYTYPE:
            rec["keytype"] = _u(v)
        elif t == T_KEY:
            rec["key"] = v.decode()
        elif t == T_STATE:
            rec["state"] = _u(v)
        elif t == T_ORIGIN:
            rec["origin"] = _u(v)
    return rec


def host(sock, key, cache_only=False, timeout=10.0, gid=False):
    """HOST lookup by name, address or (@gid) GID: (status, record or None)."""
    try:
        a = ipaddress.ip_address(key)
        item = tlv(T_GID if gid else T_IPV4 if a.version == 4 else T_IPV6, a.packed)
    except ValueError:
        item = tlv(T_NAME, key.encode())
    if cache_only:
        item += tlv(T_FLAGS, struct.pack(">I", 1))
    status, items = _ext_request(sock, OP_HOST, item, timeout=timeout)
    return status, host_record(items) if status == 0 else None


def cache_list(sock):
    """CACHE_LIST, every page: a list of entry dicts."""
    out, offset = [], 0
    for _ in range(10000):
        body = tlv(T_OFFSET, struct.pack(">I", offset)) if offset else b""
        status, items = _ext_request(sock, OP_CACHE_LIST, body)
        assert status == 0, status
        nxt = None
        for t, v in items:
            if t == T_NEST:
                out.append(host_record(parse_tlvs(v)))
            elif t == T_NEXT:
                nxt = _u(v)
        if nxt is None:
            return out
        offset = nxt
    raise AssertionError("CACHE_LIST never ends")


def cache_flush(sock, key=None):
    body = b""
    if key is not None:
        body = tlv(T_NAME, key.encode())
    status, items = _ext_request(sock, OP_CACHE_FLUSH, body)
    assert status == 0, status
    return next((_u(v) for t, v in items if t == T_COUNT), None)


def resolve_request(dest, src=None, nodelay=False):
    """A RESOLVE request for @dest (name, IPv4 or IPv6) from @src."""
    def entry(flags, value):
        try:
            a = ipaddress.ip_address(value)
            return ep_entry(flags, TYPE_IP if a.version == 4 else TYPE_IP6, a.packed)
        except ValueError:
            return ep_entry(flags, TYPE_NAME, value.encode() + b"\0")
    body = b""
    if src is not None:
        body += entry(FLAG_SOURCE, src)
    body += entry(FLAG_DEST | (FLAG_NODELAY if nodelay else 0), dest)
    return acm_hdr(OP_RESOLVE, 16 + len(body)) + body


PR = struct.Struct(">Q16s16sHHIBBHHBBBB6x")


def parse_path(entry):
    """A 72-byte PATH entry of a RESOLVE answer -> dict."""
    (sid, dgid, sgid, dlid, slid, flhl, tclass, revnum, pkey, qsl, mtu, rate, life,
     pref) = PR.unpack_from(entry, 8)
    return dict(dgid=str(ipaddress.IPv6Address(dgid)), sgid=str(ipaddress.IPv6Address(sgid)),
                dlid=dlid, slid=slid, pkey=pkey, sl=qsl & 0xf, mtu=mtu & 0x3f,
                rate=rate & 0x3f, reversible=revnum >> 7)


def resolve(client, dest, src=None, nodelay=False):
    """One RESOLVE on an open Client: (status, path dict or None)."""
    ans = client.request(resolve_request(dest, src, nodelay))
    assert ans is not None, "daemon closed the connection"
    h = parse_hdr(ans)
    if h["status"] != 0:
        return h["status"], None
    return 0, parse_path(ans[16:16 + 72])


# --- datagrams from inside a namespace ----------------------------------------

_SENDER = r"""
import base64, json, socket, sys
job = json.load(sys.stdin)
fam = socket.AF_INET6 if ":" in job["dst"] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM)
if job.get("src"):
    s.bind((job["src"], job.get("sport", 0)))
if fam == socket.AF_INET:
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    if job.get("src"):
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(job["src"]))
else:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, socket.if_nametoindex(job.get("ifname") or "ib0"))
sent = 0
for p in job["payloads"]:
    s.sendto(base64.b64decode(p), (job["dst"], job["port"]))
    sent += 1
print(sent)
"""


def send_datagrams(netns, dst, port, payloads, src=None, sport=0, timeout=30, ifname=None):
    """Send each of @payloads (bytes) as one UDP datagram to @dst:@port from
    inside namespace @netns (IPv6 multicast out of @ifname, default ib0);
    returns how many were sent."""
    job = dict(dst=dst, port=port, src=src, sport=sport, ifname=ifname,
               payloads=[base64.b64encode(p).decode() for p in payloads])
    r = subprocess.run(["ip", "netns", "exec", netns, PYTHON, "-c", _SENDER],
                       input=json.dumps(job), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


@contextlib.contextmanager
def cut_off(c, k, rails=(0,)):
    """Nothing reaches node @k on @rails: the switch drops whatever its
    ports send to the node (a tc filter on each port's egress)."""
    with open(os.path.join(c.dir, "state.json")) as f:
        sw = json.load(f)["switch_ns"]
    # emulate names the switch's port of node k's rail r so
    ports = ["p%d" % k if r == 0 else "p%dr%d" % (k, r) for r in rails]
    tc = ["ip", "netns", "exec", sw, "tc"]
    added = []
    try:
        for port in ports:
            subprocess.run(tc + ["qdisc", "add", "dev", port, "clsact"], check=True,
                           timeout=30)
            added.append(port)
            # classic BPF "return TC_ACT_SHOT" in direct-action mode
            subprocess.run(tc + ["filter", "add", "dev", port, "egress", "protocol", "all",
                                 "pref", "10", "bpf", "da", "bytecode", "1,6 0 0 2"],
                           check=True, timeout=30)
        yield
    finally:
        for port in added:
            subprocess.run(tc + ["qdisc", "del", "dev", port, "clsact"], check=True,
                           timeout=30)


def knows_every_rail(c, k):
    """Does node @k hold every rail of every other node, each under its own alias
    (rails.tsv's)?"""
    for j in c.nodes:
        if j == k:
            continue
        for rl in c.rails[j]:
            status, rec = host(c.sock(k), rl["alias"], cache_only=True)
            if status != ST_SUCCESS or rec["gids"][:1] != [rl["gid"]]:
                return False
    return True


def wait_until(pred, timeout, interval=0.05, what="condition"):
    """Poll @pred until it returns something true; bounded."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    last = pred()
    if last:
        return last
    raise AssertionError("%s not met within %.1fs" % (what, timeout))


# --- fabric datagrams (doc/fabric-protocol.md), for forging -------------------

FW_MAGIC, FW_VERSION, FW_HDR = 0x49425253, 1, struct.Struct(">IBBHQH6x")
FW_REQUEST, FW_REPLY, FW_ANNOUNCE, FW_GOODBYE = 1, 2, 3, 4
FW_FLAG_HMAC, FW_FLAG_NEWCOMER = 1, 2
FW_T_TARGET, FW_T_GROUP, FW_T_CHOSEN, FW_T_STAMP = 0x101, 0x102, 0x103, 0x104
FW_T_RAILS = 0x105   # every endpoint's GID of a multi-rail sender's host, ascending
FW_MAX_LEN = 1400
FABRIC_PORT = 4790


def identity_items(name, gid, ipv4=(), ipv6=(), lid=0, qpn=1, pkey=0xffff, ttl=60,
                   aliases=()):
    """The sender identity of a fabric message: a host record's items."""
    out = tlv(T_NAME, name.encode())
    out += b"".join(tlv(2, a.encode()) for a in aliases)
    out += b"".join(tlv(T_IPV4, ipaddress.IPv4Address(a).packed) for a in ipv4)
    out += b"".join(tlv(T_IPV6, ipaddress.IPv6Address(a).packed) for a in ipv6)
    out += tlv(T_GID, ipaddress.IPv6Address(gid).packed)
    out += tlv(T_LID, struct.pack(">H", lid)) + tlv(7, struct.pack(">I", qpn))
    out += tlv(T_PKEY, struct.pack(">H", pkey)) + tlv(T_TTL, struct.pack(">I", ttl))
    return out


def node_identity(node, **over):
    """The identity items node @node (a nodes.tsv row) sends, with overrides."""
    kw = dict(name=node["name"], gid=node["gid"], ipv4=[node["ipv4"]], ipv6=[node["ipv6"]],
              lid=node["lid"])
    kw.update(over)
    return identity_items(**kw)


def stamp_item(us=None):
    """The freshness stamp a node with a cluster key sends: its wall clock in
    microseconds (now, unless @us)."""
    return tlv(FW_T_STAMP, struct.pack(">Q", int(time.time() * 1e6) if us is None else us))


def rails_item(gids):
    """FW_T_RAILS: the GIDs of every endpoint of the sender's host, ascending
    and distinct, as a multi-rail node sends it."""
    packed = sorted({ipaddress.IPv6Address(g).packed for g in gids})
    return tlv(FW_T_RAILS, b"".join(packed))


def group_items(groups=((4, 3), (5, 16))):
    return b"".join(tlv(FW_T_GROUP, bytes(g)) for g in groups)


def target_item(key):
    try:
        a = ipaddress.ip_address(key)
        inner = tlv(T_IPV4 if a.version == 4 else T_IPV6, a.packed)
    except ValueError:
        inner = tlv(T_NAME, key.encode())
    return tlv(FW_T_TARGET, inner)


def fabric_msg(mtype, items, tid=0, flags=0, version=FW_VERSION, magic=FW_MAGIC,
               length=None, trailer=b"", key=None):
    """One fabric datagram; @length overrides the header's length field; with
    @key, the HMAC-SHA256 trailer (flag bit 0) over header and items."""
    if key is not None:
        flags |= FW_FLAG_HMAC
        trailer = b"\0" * 32
    total = FW_HDR.size + len(items) + len(trailer)
    hdr = FW_HDR.pack(magic, version, mtype, flags, tid, total if length is None else length)
    if key is not None:
        trailer = hmac.new(key, hdr + items, hashlib.sha256).digest()
    return hdr + items + trailer


# --- capturing real datagrams off the emulated fabric ---------------------------

_CAPTURE = r"""
import base64, json, select, socket, struct, sys, time
port, limit = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
ifs = {i: n for i, n in socket.if_nameindex()}
print("ready", flush=True)
seen, out = set(), []
deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    r, _, _ = select.select([s, sys.stdin], [], [], 0.1)
    if sys.stdin in r and not sys.stdin.readline():
        break
    if s not in r:
        continue
    frame, addr = s.recvfrom(65535)
    # every frame once: as it enters a bridge (one per rail) from a node's port
    if addr[2] == socket.PACKET_OUTGOING or ifs.get(addr[1], "").startswith("br"):
        continue
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        continue
    ihl = (frame[14] & 15) * 4
    udp = frame[14 + ihl:]
    sport, dport, ulen = struct.unpack(">HHH", udp[:6])
    if dport != port:
        continue
    payload = udp[8:ulen]
    if payload in seen:
        continue
    seen.add(payload)
    out.append(dict(src=socket.inet_ntoa(frame[26:30]), dst=socket.inet_ntoa(frame[30:34]),
                    payload=base64.b64encode(payload).decode()))
print(json.dumps(out), flush=True)
"""


class Capture:
    """Every fabric datagram that crosses the emulated switch while the
    context lasts (a packet socket in the switch namespace), each once:
    .datagrams is a list of dicts src, dst (IPv4 addresses) and payload
    (bytes), in the order they were seen."""

    def __init__(self, cluster, port=FABRIC_PORT, limit=120.0):
        with open(os.path.join(cluster.dir, "state.json")) as f:
            self.netns = json.load(f)["switch_ns"]
        self.port, self.limit = port, limit
        self.datagrams = []

    def __enter__(self):
        self.p = subprocess.Popen(["ip", "netns", "exec", self.netns, PYTHON, "-c", _CAPTURE,
                                   str(self.port), str(self.limit)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        ready = ""
        if select.select([self.p.stdout], [], [], 20)[0]:
            ready = self.p.stdout.readline()
        if ready.strip() != "ready":
            self.p.kill()
            raise AssertionError("capture did not start: %s" % self.p.stderr.read())
        return self

    def __exit__(self, *exc):
        try:
            out, err = self.p.communicate(input="", timeout=self.limit + 10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate(timeout=10)
            raise AssertionError("capture did not end")
        if exc[0] is None:
            assert self.p.returncode == 0, err
            self.datagrams = [dict(d, payload=base64.b64decode(d["payload"]))
                              for d in json.loads(out)]
        return False
