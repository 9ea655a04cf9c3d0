"""libibres.so.1 against a real ibresd: host lookups, path resolution and
ibres_getaddrinfo() results freed by librdmacm's rdma_freeaddrinfo() under
valgrind; exported symbols, pkg-config file, header."""
import errno
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, ROOT, SANITIZED, run, without_sanitizer_libs
from nss_helpers import client_env, helpers, parse_kv, static_hosts_config  # noqa: F401
from nss_helpers import gai_entries as entries

LIB = os.path.join(BUILD, "libibres.so.1")
AF_INET, AF_INET6, AF_IB = 2, 10, 27
RDMA_PS_TCP = 0x0106
PUBLIC = ["ibres_close", "ibres_freeaddrinfo", "ibres_getaddrinfo", "ibres_host_by_addr",
          "ibres_host_by_name", "ibres_host_free", "ibres_open", "ibres_resolve_path"]
VALGRIND = ["valgrind", "-q", "--error-exitcode=9", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect"]


@pytest.fixture
def static(daemon_factory):
    return daemon_factory(static_hosts_config(), name="static").start()


def call(helpers, env, *args, valgrind=False):
    # a SANITIZE=1 build checks memory itself (and valgrind cannot run it)
    cmd = (VALGRIND if valgrind and not SANITIZED else []) + [helpers["nss_libibres"]] + list(args)
    r = run(cmd, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_exports_and_soname():
    out = run(["nm", "-D", "--defined-only", LIB], check=True).stdout
    syms = sorted(line.split()[-1] for line in out.splitlines() if " T " in line)
    assert syms == sorted(s + "@@IBRES_1.0" for s in PUBLIC)
    dyn = run(["readelf", "-d", LIB], check=True).stdout
    assert without_sanitizer_libs(re.findall(r"\(NEEDED\).*\[(.*)\]", dyn)) == ["libc.so.6"]
    assert "Library soname: [libibres.so.1]" in dyn


def test_pkgconfig_file():
    env = dict(os.environ, PKG_CONFIG_PATH=BUILD, PKG_CONFIG_ALLOW_SYSTEM_CFLAGS="1")
    version = run(["pkg-config", "--modversion", "libibres"], env=env, check=True).stdout
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    assert version.strip() == re.search(r"^VERSION := (\S+)", makefile, re.M).group(1)
    libs = run(["pkg-config", "--libs", "libibres"], env=env, check=True).stdout
    assert "-libres" in libs.split()
    cflags = run(["pkg-config", "--cflags", "libibres"], env=env, check=True).stdout
    assert cflags.strip().startswith("-I")


def test_header_is_self_contained(tmp_path):
    src = tmp_path / "h.c"
    body = "{ struct ibres *h; return ibres_open(&h, 0, 0); }\n"
    src.write_text("#include <ibres.h>\nint main(void) " + body)
    run(["cc", "-std=c99", "-Wall", "-Werror", "-I" + os.path.join(ROOT, "include"),
         "-fsyntax-only", str(src)], check=True)
    if shutil.which("g++"):
        cpp = tmp_path / "h.cc"
        cpp.write_text("#include <ibres.h>\nint main() " + body)
        run(["g++", "-Wall", "-Werror", "-I" + os.path.join(ROOT, "include"),
             "-fsyntax-only", str(cpp)], check=True)


def test_host_lookups(helpers, static):
    env = client_env(static)
    kv = parse_kv(call(helpers, env, "host", "node2.cluster.example"))
    assert kv["ret"] == "0"
    assert kv["name"] == "node2" and kv["aliases"] == "node2.cluster.example"
    assert kv["ipv4"] == "198.18.0.2" and kv["ipv6"] == "2001:db8::2"
    assert kv["gids"] == "fe80::2:c903:0:2" and kv["lid"] == "2"
    kv = parse_kv(call(helpers, env, "addr", str(AF_IB), "fe80::2:c903:0:10"))
    assert kv["name"] == "login1" and kv["pkey"] == "0x7fff" and kv["qpn"] == str(0x48)
    kv = parse_kv(call(helpers, env, "addr", str(AF_INET6), "2001:db8::3"))
    assert kv["name"] == "node3"
    kv = parse_kv(call(helpers, env, "addr", str(AF_INET), "198.18.0.4"))
    assert kv["name"] == "node4" and kv["ipv6"] == ""
    kv = parse_kv(call(helpers, env, "host", "no-such-host"))
    assert kv["ret"] == str(-errno.ENODATA)


def test_no_daemon(helpers, tmp_path):
    env = client_env(socket_path=str(tmp_path / "absent.sock"))
    assert parse_kv(call(helpers, env, "host", "node1"))["ret"] == str(-errno.ENOENT)
    out = call(helpers, env, "gai", "node1", "7471", "-", "0")
    assert parse_kv(out)["ret"] == str(-errno.ENOENT)
    # a numeric address needs no daemon for its IP form
    out = call(helpers, env, "gai", "198.18.0.7", "7471", "-", "0")
    e = entries(out)
    assert parse_kv(out)["ret"] == "0"
    assert len(e) == 1 and e[0]["family"] == str(AF_INET)


def test_resolve_path(helpers, single):
    env = client_env(single)
    for dst in ("198.18.0.1", "2001:db8::1", "gid:fe80::2:c903:0:1"):
        out = call(helpers, env, "path", dst)
        kv = parse_kv(out)
        assert kv["ret"] == "0" and kv["count"] == "1", out
        assert kv["path"].startswith("flags0x2b/dgidfe80::2:c903:0:1/sgidfe80::2:c903:0:1/")
        assert "/pkey0xffff/mtu4/rate3" in kv["path"]
    kv = parse_kv(call(helpers, env, "path", "198.18.0.1", "198.18.0.1"))
    assert kv["ret"] == "0"


@pytest.mark.valgrind
def test_getaddrinfo_af_ib_first_freed_by_librdmacm(helpers, single):
    out = call(helpers, client_env(single), "gai", "node1", "7471", "-", "0", valgrind=True)
    assert parse_kv(out)["ret"] == "0"
    ib, ip = entries(out)
    assert ib["family"] == str(AF_IB) and ib["port_space"] == hex(RDMA_PS_TCP)
    sid = (RDMA_PS_TCP << 16) + 7471
    assert ib["dst"] == "ib/fe80::2:c903:0:1/pkey0xffff/sid0x%016x/mask0x%016x/len48" % (
        sid, 2**64 - 1)
    assert ib["src"].startswith("ib/fe80::2:c903:0:1/pkey0xffff/sid0x%016x/" % (
        RDMA_PS_TCP << 16))
    assert ib["route_len"] == "72" and len(ib["paths"]) == 1
    assert ib["connect_len"] == "36"
    assert ib["canon"] == "node1"
    assert ip["family"] == str(AF_INET)
    assert ip["dst"] == "inet/198.18.0.1/7471/len16"
    assert ip["src"].startswith("inet/198.18.0.1/")
    assert ip["route_len"] == "72"


@pytest.mark.parametrize("free", ["rdma", "own"])
@pytest.mark.parametrize("node,service,flags,family,want", [
    ("node1", "7471", "-", AF_INET6, [AF_IB, AF_INET6]),
    ("node1", "-", "r", 0, [AF_IB, AF_INET]),
    ("198.18.0.1", "7471", "n", 0, [AF_IB, AF_INET]),
    ("fe80::2:c903:0:1", "18515", "nf", AF_IB, [AF_IB]),
    ("-", "7471", "p", 0, [AF_IB, AF_INET]),
    ("node1", "7471", "p", AF_IB, [AF_IB]),
])
@pytest.mark.valgrind
def test_getaddrinfo_shapes(helpers, single, free, node, service, flags, family, want):
    args = ["gai"] + (["--own-free"] if free == "own" else []) + [node, service, flags,
                                                                  str(family)]
    out = call(helpers, client_env(single), *args, valgrind=True)
    assert parse_kv(out)["ret"] == "0", out
    e = entries(out)
    assert [int(x["family"]) for x in e] == want
    passive = "p" in flags
    for x in e:
        assert (x["dst"] == "none") == passive
        if "r" in flags or passive:
            assert x["route_len"] == "0"
        else:
            assert x["route_len"] == "72"


def test_getaddrinfo_errors(helpers, single):
    env = client_env(single)
    assert parse_kv(call(helpers, env, "gai", "no-such-host", "1", "-", "0"))["ret"] == str(
        -errno.ENODATA)
    assert parse_kv(call(helpers, env, "gai", "node1", "1", "n", "0"))["ret"] == str(
        -errno.ENODATA)
    assert parse_kv(call(helpers, env, "gai", "node1", "1", "-", "1"))["ret"] == str(
        -errno.EAFNOSUPPORT)
    assert parse_kv(call(helpers, env, "gai", "node1", "99999", "-", "0"))["ret"] == str(
        -errno.EINVAL)
    assert parse_kv(call(helpers, env, "gai", "-", "-", "-", "0"))["ret"] == str(-errno.EINVAL)
