"""ibresd as a process: options, config checking, signals, reload, a second
daemon, the ibacm socket, the static hosts file, admin privileges."""
import os
import signal
import struct
import subprocess
import time

import pytest

from conftest import (IBRESD, SINGLE_NODE, Client, acm_hdr, config_with, ep_entry, needs_root,
                      parse_hdr, parse_tlvs, run, tlv, wait_for_socket)

OP_HOST, OP_CACHE_LIST, OP_CACHE_FLUSH, OP_STATS = 0x08, 0x09, 0x0a, 0x0b
T_NAME, T_IPV4, T_GID, T_LID, T_COUNT = 1, 3, 5, 6, 17


def resolve_name(name):
    body = ep_entry(2, 1, name.encode() + b"\0")
    return acm_hdr(1, 16 + len(body)) + body


def ext(opcode, body=b""):
    return acm_hdr(opcode, 16 + len(body)) + body


def host(sock, name):
    c = Client(sock)
    ans = c.request(ext(OP_HOST, tlv(T_NAME, name.encode())))
    c.close()
    h = parse_hdr(ans)
    return h["status"], parse_tlvs(ans[16:]) if h["status"] == 0 else []


def test_help_and_version():
    r = run([IBRESD, "--help"])
    assert r.returncode == 0
    for opt in ("--config", "--socket", "--foreground", "--check-config", "--help", "--version"):
        assert opt in r.stdout
    r = run([IBRESD, "--version"])
    assert r.returncode == 0 and r.stdout.startswith("ibresd ")
    assert run([IBRESD, "--no-such-option"]).returncode == 2


def test_check_config_prints_effective_settings():
    r = run([IBRESD, "--check-config", "--config", SINGLE_NODE])
    assert r.returncode == 0, r.stderr
    assert "node1" in r.stdout and "timeout" in r.stdout


def test_check_config_reports_file_and_line(tmp_path):
    bad = tmp_path / "bad.conf"
    text = open(SINGLE_NODE).read().rstrip("\n").split("\n")
    text.append("tiemout = 5")
    bad.write_text("\n".join(text) + "\n")
    r = run([IBRESD, "--check-config", "--config", str(bad)])
    assert r.returncode == 1
    assert "%s:%d:" % (bad, len(text)) in r.stderr, r.stderr
    assert "tiemout" in r.stderr


def test_check_config_refuses_an_identity_no_datagram_holds(tmp_path):
    """An endpoint on the fabric sends its names and addresses in every datagram
    (1400 bytes at most): one whose names leave no room to announce it could never
    be heard, which used to fail only at each send (logged at debug). Refused with
    file:line; names that leave room for an announcement but not for a look-up of a
    255-character name once the interface adds 8 addresses a family are a warning;
    a cluster key (its stamp and HMAC) takes room too."""
    label = "x" * 60

    def config(n_names, n_v6=0):
        names = ["node1"] + ["alias%d.%s.%s.%s" % (i, label, label, label)
                             for i in range(n_names - 1)]
        return "\n".join([
            "[daemon]", "socket = /run/ibres/x.sock", "[endpoint ib0]"] +
            ["name = %s" % n for n in names] + [
            "address = 2001:db8::%d" % (i + 1) for i in range(n_v6)] + [
            "address = 198.18.0.1", "gid = fe80::2:c903:0:1", "lid = 1",
            "transport = ip", "interface = lo", "group = 239.1.1.1"]) + "\n"

    def check(text):
        conf.write_text(text)
        return run([IBRESD, "--check-config", "--config", str(conf)])

    conf = tmp_path / "big.conf"
    r = check(config(8))
    line = conf.read_text().split("\n").index("[endpoint ib0]") + 1
    assert r.returncode == 1, r.stdout
    assert "%s:%d: endpoint ib0:" % (conf, line) in r.stderr, r.stderr
    assert "fabric datagram (1400 bytes) to announce it" in r.stderr, r.stderr
    r = check(config(6))
    assert r.returncode == 0, r.stderr
    assert "warning: %s:%d: endpoint ib0:" % (conf, line) in r.stderr, r.stderr
    assert "look-up of the longest name" in r.stderr, r.stderr
    r = check(config(4))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    # seven names and four IPv6 addresses fit an announcement; with a key's 44
    # bytes more they do not
    r = check(config(7, 4))
    assert r.returncode == 0, r.stderr
    key = tmp_path / "cluster.key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    r = check(config(7, 4).replace("[endpoint ib0]", "[resolve]\ncluster_key_file = %s\n"
                                "[endpoint ib0]" % key))
    assert r.returncode == 1 and "to announce it" in r.stderr, (r.stdout, r.stderr)


def test_check_config_warns_when_clients_give_up_first(tmp_path):
    """timeout and retries that let a lookup wait longer than ibresctl and
    libibres wait by default (10 s): the config is valid, but the daemon says
    which clients would time out before its answer and what to set. The shipped values
    (1000 ms, 3 retries: 8.2 s at most) draw no warning."""
    r = run([IBRESD, "--check-config", "--config", SINGLE_NODE])
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    slow = tmp_path / "slow.conf"
    slow.write_text(open(SINGLE_NODE).read().replace("timeout = 1000ms", "timeout = 2s"))
    r = run([IBRESD, "--check-config", "--config", str(slow)])
    assert r.returncode == 0, r.stderr
    # 2 s, 3 s, 4 s, 5 s, each + 10 %, and 500 ms of slack
    assert "warning: timeout and retries let a lookup wait 15900 ms" in r.stderr, r.stderr
    assert "longer than ibresctl and libibres wait by default (10000 ms): set " \
        "IBRES_TIMEOUT_MS above it" in r.stderr, r.stderr


def test_missing_config_file(tmp_path):
    r = run([IBRESD, "--foreground", "--config", str(tmp_path / "none.conf")])
    assert r.returncode == 1 and "none.conf" in r.stderr


def test_sigterm_removes_socket(single):
    assert os.path.exists(single.socket)
    assert single.stop() == 0
    assert not os.path.exists(single.socket)


def test_second_daemon_refuses(single, daemon_factory):
    other = daemon_factory(name="other", sock=single.socket)
    other.start(wait=False)
    assert other.proc.wait(10) == 1
    assert "already" in other.logtext()
    # the first one still answers
    c = Client(single.socket)
    assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0


def test_stale_socket_is_replaced(daemon_factory):
    d = daemon_factory().start()
    d.proc.kill()
    d.proc.wait(5)
    assert os.path.exists(d.socket)
    d.start()
    assert parse_hdr(Client(d.socket).request(resolve_name("node1")))["status"] == 0


def test_sighup_reload_keeps_cache_and_applies_config(daemon_factory, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("fe80::2:c903:0:2 2 node2 198.18.0.2\n")
    d = daemon_factory(config_with({"resolve": ["hosts_file = %s" % hosts]})).start()
    assert host(d.socket, "node2")[0] == 0
    assert host(d.socket, "node3")[0] == 3
    hosts.write_text("fe80::2:c903:0:3 3 node3 198.18.0.3\n")
    d.signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and host(d.socket, "node3")[0] != 0:
        time.sleep(0.05)
    assert host(d.socket, "node3")[0] == 0
    assert host(d.socket, "node2")[0] == 3, "static host gone from the file must go"
    assert host(d.socket, "node1")[0] == 0


def test_sighup_logs_what_needs_a_restart(daemon_factory, tmp_path):
    """A reload never changes what the running transports were opened with:
    a new cluster key is logged as taking effect at the next restart, the
    rest of the new config applies."""
    key = tmp_path / "cluster.key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef")
    key.chmod(0o600)
    d = daemon_factory().start()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("[resolve]", "[resolve]\ncluster_key_file = %s" % key, 1))
    d.signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "configuration reloaded" not in d.logtext():
        time.sleep(0.05)
    log = d.logtext()
    assert "configuration reloaded" in log
    assert "cluster_key_file changed: it takes effect at the next restart" in log
    assert parse_hdr(Client(d.socket).request(resolve_name("node1")))["status"] == 0


def test_sighup_with_broken_config_keeps_running(daemon_factory):
    d = daemon_factory().start()
    with open(d.config, "a") as f:
        f.write("\nthis is not a setting\n")
    d.signal(signal.SIGHUP)
    time.sleep(0.5)
    assert d.alive()
    assert "reload failed" in d.logtext()
    assert parse_hdr(Client(d.socket).request(resolve_name("node1")))["status"] == 0


def test_static_hosts_file(daemon_factory, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# pre-provisioned\n"
                     "fe80::2:c903:0:7 7 node7 node7.cluster 198.18.0.7 2001:db8::7\n")
    d = daemon_factory(config_with({"resolve": ["hosts_file = %s" % hosts]})).start()
    r = run(["ib_acme", "-S", d.socket, "-f", "n", "-d", "node7.cluster", "-s", "node1"])
    assert r.returncode == 0, r.stdout
    assert "dgid: fe80::2:c903:0:7" in r.stdout and "dlid: 7" in r.stdout
    status, items = host(d.socket, "node7")
    assert status == 0
    assert (T_NAME, b"node7") in items and (T_IPV4, bytes([198, 18, 0, 7])) in items


def test_static_host_in_its_partition(daemon_factory, tmp_path):
    """A static host of P_Key 0x8001 gets its path from this node's endpoint of
    that partition (a second endpoint of node1's port): by name with no source
    that one serves, and from the default partition's address there is no path
    (a path with P_Key 0xffff would lead to a port that is no member). The
    request without a source comes first on the connection: its choice of
    rail is not the next request's."""
    from fabric_util import resolve
    hosts = tmp_path / "hosts"
    hosts.write_text("fe80::2:c903:0:20 32 storage1 198.18.1.20 pkey=0x8001\n"
                     "fe80::2:c903:0:2 2 node2 198.18.0.2\n")
    conf = config_with({"resolve": ["hosts_file = %s" % hosts]}) + (
        "\n[endpoint ib0.8001]\nname = node1\naddress = 198.18.0.11\n"
        "gid = fe80::2:c903:0:1\nlid = 1\npkey = 0x8001\nqpn = 1\nmtu = 2048\n"
        "rate = 10\nsl = 0\ntransport = none\n")
    d = daemon_factory(conf).start()
    cl = Client(d.socket)
    try:
        status, path = resolve(cl, "storage1")
        assert status == 0 and path["pkey"] == 0x8001 and path["dlid"] == 32, path
        status, path = resolve(cl, "storage1", "198.18.0.11")
        assert status == 0 and path["pkey"] == 0x8001, path
        status, path = resolve(cl, "storage1", "198.18.0.1")
        assert status != 0, path
        # a static host of the default partition (no pkey= on its line) is
        # reached from every endpoint, with that endpoint's P_Key, as before
        status, path = resolve(cl, "node2", "198.18.0.1")
        assert status == 0 and path["pkey"] == 0xffff, path
        status, path = resolve(cl, "node2", "198.18.0.11")
        assert status == 0 and path["pkey"] == 0x8001, path
    finally:
        cl.close()


def test_acm_socket_and_link(daemon_factory, tmp_path):
    acm = tmp_path / "run" / "ibacm-unix.sock"
    os.makedirs(acm.parent)
    d = daemon_factory(config_with({"daemon": ["acm_socket = %s" % acm, "acm_link = yes"]}))
    d.start()
    wait_for_socket(str(acm))
    link = acm.parent / "ibacm.sock"
    assert os.readlink(link) == "ibacm-unix.sock"
    r = run(["ib_acme", "-S", str(link), "-f", "n", "-d", "node1"])
    assert r.returncode == 0, r.stdout
    d.stop()
    assert not os.path.exists(acm) and not os.path.lexists(link)


@needs_root
def test_admin_needs_root(daemon_factory):
    # a socket that an unprivileged user can reach
    import tempfile
    pub = tempfile.mkdtemp(prefix="ibres-admin-")
    os.chmod(pub, 0o755)
    single = daemon_factory(sock=os.path.join(pub, "ibresd.sock")).start()
    flush = ext(OP_CACHE_FLUSH)
    # as root: allowed
    assert parse_hdr(Client(single.socket).request(flush))["status"] == 0
    # as nobody: EPERM; queries still open
    code = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(bytes.fromhex(sys.argv[2]))\n"
        "a=s.recv(4096); print(a[2])\n"
        "s.sendall(bytes.fromhex(sys.argv[3])); a=s.recv(4096); print(a[2])\n")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "/usr/bin/python3", "-c", code, single.socket, flush.hex(),
                        resolve_name("node1").hex()],
                       capture_output=True, text=True, timeout=20)
    assert r.stdout.split() == ["11", "0"], r.stdout + r.stderr


def test_stats_and_cache_list(single):
    c = Client(single.socket)
    assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
    ans = c.request(ext(OP_STATS))
    items = parse_tlvs(ans[16:])
    names = [v.decode() for t, v in items if t == T_NAME]
    assert "resolve" in names and "requests" in names and "fabric_rx" in names
    ans = c.request(ext(OP_CACHE_LIST))
    assert parse_hdr(ans)["status"] == 0
    nests = [v for t, v in parse_tlvs(ans[16:]) if t == 13]
    keys = [dict((t, v) for t, v in parse_tlvs(n)).get(23) for n in nests]
    assert b"node1" in keys and b"198.18.0.1" in keys


def test_cache_list_offset_past_the_end(single):
    """An OFFSET past every entry (or any OFFSET: it is where a page stopped)
    is an empty last page, no NEXT: never an error, never a walk."""
    for off in (0xffffffff, 1 << 20):
        ans = Client(single.socket).request(ext(OP_CACHE_LIST, tlv(15, struct.pack(">I", off))))
        assert parse_hdr(ans)["status"] == 0
        types = [t for t, _ in parse_tlvs(ans[16:])]
        assert 13 not in types and 16 not in types, types   # no NEST, no NEXT


def test_host_lookup_by_every_key(single):
    import ipaddress
    for key in (tlv(T_NAME, b"NODE1"), tlv(T_IPV4, bytes([198, 18, 0, 1])),
                tlv(4, ipaddress.IPv6Address("2001:db8::1").packed),
                tlv(T_GID, ipaddress.IPv6Address("fe80::2:c903:0:1").packed)):
        ans = Client(single.socket).request(ext(OP_HOST, key))
        h = parse_hdr(ans)
        assert h["status"] == 0 and h["opcode"] == 0x88
        items = parse_tlvs(ans[16:])
        assert items[0] == (T_NAME, b"node1")
    bad = Client(single.socket).request(ext(OP_HOST, tlv(T_NAME, b"a") + tlv(T_NAME, b"b")))
    assert parse_hdr(bad)["status"] == 2
