"""The real librdmacm's rdma_getaddrinfo() against ibresd on ibacm's socket, as on an
InfiniBand node whose kernel supports AF_IB.

librdmacm reaches ibacm only at /run/ibacm.sock (compiled in): the helper runs in a mount
namespace of its own whose /run holds that link to the test daemon's acm_socket. This
machine's kernel has no RDMA, so fake_rdma_cm.c (LD_PRELOAD) stands for the kernel under
librdmacm: one IB device, and /dev/infiniband/rdma_cm answering its commands. librdmacm
itself decides AF_IB support (ucma_set_af_ib_support() binds an AF_IB address at
ucma_init()) and builds every entry (ucma_ib_resolve() in librdmacm/acm.c): with a path in
the daemon's answer and AF_IB support, an AF_IB entry first, the IP header for the CM's
private data only in its ai_connect. nss-ib(8), "RDMA_CM AND AF_IB", says why the default
answer carries no path."""
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import ROOT, SINGLE_NODE, have, run

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root"),
    pytest.mark.skipif(not have("unshare"), reason="unshare (util-linux) missing"),
    pytest.mark.skipif(not os.path.exists("/usr/include/rdma/rdma_cma.h"),
                       reason="librdmacm-dev missing"),
]

SRC = os.path.join(ROOT, "test", "integration")
EP = dict(name="node1", ipv4="198.18.0.1", ipv6="2001:db8::1", gid="fe80::2:c903:0:1", lid=1)
CONNECT_HDR_LEN = 36  # librdmacm's struct ib_connect_hdr, the kernel's struct cma_hdr
PATH_DATA_LEN = 72    # struct ibv_path_data
RDMA_PS_TCP = 0x0106
PORT = 7471


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """The helper and the preloaded stand-in for the kernel, compiled once."""
    d = tmp_path_factory.mktemp("rdmacm")
    cc = os.environ.get("CC", "cc")
    flags = ["-std=gnu11", "-D_GNU_SOURCE", "-g", "-O1", "-Wall", "-Wextra", "-Werror"]
    shim, gai = str(d / "fake_rdma_cm.so"), str(d / "rdmacm_getaddrinfo")
    subprocess.run([cc] + flags + ["-shared", "-fPIC", "-o", shim,
                                   os.path.join(SRC, "fake_rdma_cm.c"), "-ldl"],
                   check=True, timeout=120)
    subprocess.run([cc] + flags + ["-o", gai, os.path.join(SRC, "rdmacm_getaddrinfo.c"),
                                   "-lrdmacm"], check=True, timeout=120)
    return dict(shim=shim, gai=gai)


def acm_daemon(factory, tmp_path, af_ib=None, name="d"):
    """single-node.conf serving ibacm's protocol on <dir>/ibacm-unix.sock too."""
    acm = str(tmp_path / name / "ibacm-unix.sock")
    extra = "acm_socket = %s\n" % acm
    if af_ib is not None:
        extra += "acm_af_ib = %s\n" % ("yes" if af_ib else "no")
    text = open(SINGLE_NODE).read().replace("[daemon]\n", "[daemon]\n" + extra, 1)
    d = factory(text, name=name).start()
    d.acm = acm
    return d


def getaddrinfo(programs, sock, node, kernel_af_ib=True, *extra):
    """rdma_getaddrinfo(node, PORT) through librdmacm connected to @sock: the entries
    (dicts, in order) and the stand-in kernel's report of librdmacm's AF_IB probe."""
    script = ('mount -t tmpfs ibres-test /run && ln -s "$1" /run/ibacm.sock && '
              'export LD_PRELOAD="$2" && shift 2 && exec "$@"')
    env = dict(os.environ, FAKE_RDMA_CM_AF_IB="1" if kernel_af_ib else "0")
    env.pop("LD_PRELOAD", None)
    r = run(["unshare", "--mount", "sh", "-c", script, "sh", sock, programs["shim"],
             programs["gai"], node, str(PORT)] + list(extra), env=env, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    probe = re.findall(r"^fake-rdma_cm: bind family 27 (\w+)$", r.stderr, re.M)
    # the probe is librdmacm's own, once per process
    assert probe == ["accepted" if kernel_af_ib else "refused"], r.stderr
    return [dict(kv.split("=", 1) for kv in line.split()) for line in r.stdout.splitlines()]


def family(name):
    return str(dict(inet=socket.AF_INET, inet6=socket.AF_INET6, ib=27)[name])


@pytest.mark.parametrize("node,fam", [(EP["ipv4"], "inet"), (EP["ipv6"], "inet6")])
def test_default_gives_ip_entry_without_path(daemon_factory, tmp_path, programs, node, fam):
    """The default: an AF_INET/AF_INET6 entry only, the daemon's source in it and no
    route, so a program that connects with the first entry's addresses sends the CM's IP
    header (rdma_cm builds it from IP addresses) and the kernel asks the path itself."""
    d = acm_daemon(daemon_factory, tmp_path)
    (e,) = getaddrinfo(programs, d.acm, node)
    assert e["family"] == family(fam), e
    assert e["src"] == node and e["dst"] == node, e  # the source came from the daemon
    assert e["route_len"] == "0" and e["connect_len"] == "0", e


def test_default_numeric_host(daemon_factory, tmp_path, programs):
    """RAI_NUMERICHOST (ibacm's NODELAY): the same answer."""
    d = acm_daemon(daemon_factory, tmp_path)
    (e,) = getaddrinfo(programs, d.acm, EP["ipv4"], True, "numeric")
    assert e["family"] == family("inet") and e["route_len"] == "0", e


@pytest.mark.parametrize("node,fam,ipver", [(EP["ipv4"], "inet", "4"),
                                            (EP["ipv6"], "inet6", "6")])
def test_af_ib_setting_puts_af_ib_first(daemon_factory, tmp_path, programs, node, fam, ipver):
    """acm_af_ib = yes: ibacm's answer. librdmacm puts an AF_IB entry first (GIDs and the
    service ID from the path and the port), the IP header for the CM in its ai_connect
    alone, then the IP entry with the same route."""
    d = acm_daemon(daemon_factory, tmp_path, af_ib=True)
    ib, ip = getaddrinfo(programs, d.acm, node)
    assert ib["family"] == family("ib"), ib
    assert ib["src"] == EP["gid"] and ib["dst"] == EP["gid"], ib
    assert int(ib["dst_sid"], 16) == (RDMA_PS_TCP << 16) + PORT, ib
    assert ib["route_len"] == str(PATH_DATA_LEN), ib
    assert ib["path_dgid"] == EP["gid"] and ib["path_dlid"] == str(EP["lid"]), ib
    assert ib["connect_len"] == str(CONNECT_HDR_LEN), ib
    assert (ib["connect_ip"], ib["connect_src"], ib["connect_dst"]) == (ipver, node, node), ib
    assert ip["family"] == family(fam) and ip["src"] == node, ip
    assert ip["route_len"] == str(PATH_DATA_LEN) and ip["connect_len"] == "0", ip


def test_af_ib_setting_on_a_kernel_without_af_ib(daemon_factory, tmp_path, programs):
    """The path in the answer makes no AF_IB entry where librdmacm found no AF_IB support:
    it decides from the kernel, not from the daemon."""
    d = acm_daemon(daemon_factory, tmp_path, af_ib=True)
    (e,) = getaddrinfo(programs, d.acm, EP["ipv4"], False)
    assert e["family"] == family("inet") and e["route_len"] == str(PATH_DATA_LEN), e


def test_af_ib_no_is_the_default(daemon_factory, tmp_path, programs):
    d = acm_daemon(daemon_factory, tmp_path, af_ib=False)
    (e,) = getaddrinfo(programs, d.acm, EP["ipv4"])
    assert e["family"] == family("inet") and e["route_len"] == "0", e


def test_own_socket_keeps_ibacms_answer(daemon_factory, tmp_path, programs):
    """ibresd's own socket (ib_acme -S, diagnostics) answers as ibacm does whatever
    acm_af_ib says: librdmacm pointed there gets the path and puts AF_IB first."""
    d = acm_daemon(daemon_factory, tmp_path)
    ib, ip = getaddrinfo(programs, d.socket, EP["ipv4"])
    assert ib["family"] == family("ib") and ib["connect_len"] == str(CONNECT_HDR_LEN), ib
    assert ip["family"] == family("inet") and ip["route_len"] == str(PATH_DATA_LEN), ip


def test_af_ib_follows_a_reload(daemon_factory, tmp_path, programs):
    """SIGHUP applies acm_af_ib to the next lookup."""
    d = acm_daemon(daemon_factory, tmp_path)
    (e,) = getaddrinfo(programs, d.acm, EP["ipv4"])
    assert e["family"] == family("inet"), e
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("[daemon]\n", "[daemon]\nacm_af_ib = yes\n", 1))
    d.signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "configuration reloaded" not in d.logtext():
        time.sleep(0.05)
    assert "configuration reloaded" in d.logtext()
    ib, _ = getaddrinfo(programs, d.acm, EP["ipv4"])
    assert ib["family"] == family("ib"), ib


# --- ib_acme on ibacm's socket with the default -------------------------------------------

needs_acme = pytest.mark.skipif(not have("ib_acme"), reason="ib_acme (Debian package ibacm) "
                                "missing")


def acme(sock, *args):
    return run(["ib_acme", "-S", sock] + list(args), timeout=20)


@needs_acme
@pytest.mark.parametrize("args", [
    ("-f", "n", "-d", EP["name"]),
    ("-f", "g", "-d", EP["gid"], "-s", EP["gid"]),
    ("-f", "l", "-d", str(EP["lid"]), "-s", str(EP["lid"])),
], ids=lambda a: " ".join(a))
def test_acme_path_modes_unchanged(daemon_factory, tmp_path, args):
    """By name, GID or LID ib_acme still gets the path: librdmacm asks by IP address only."""
    d = acm_daemon(daemon_factory, tmp_path)
    r = acme(d.acm, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^\s+dlid: %d$" % EP["lid"], r.stdout, re.M), r.stdout


@needs_acme
def test_acme_by_address_gets_the_source(daemon_factory, tmp_path):
    """By IP address, the source only (with -s, the client's own back, so that ib_acme
    has an entry to read); acm_af_ib = yes or ibresd's own socket show the path."""
    d = acm_daemon(daemon_factory, tmp_path)
    r = acme(d.acm, "-f", "i", "-d", EP["ipv4"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^Source: %s$" % re.escape(EP["ipv4"]), r.stdout, re.M), r.stdout
    assert re.search(r"^\s+dlid: 0$", r.stdout, re.M), r.stdout
    r = acme(d.acm, "-f", "i", "-d", EP["ipv4"], "-s", EP["ipv4"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.findall(r"^Source: (\S+)$", r.stdout, re.M) == [EP["ipv4"]] * 2, r.stdout
    r = acme(d.socket, "-f", "i", "-d", EP["ipv4"])
    assert re.search(r"^\s+dlid: %d$" % EP["lid"], r.stdout, re.M), r.stdout
