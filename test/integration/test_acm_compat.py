"""The real ib_acme (rdma-core's ibacm package) against build/ibresd running
conf/examples/single-node.conf, in every query mode."""
import ipaddress
import re

import pytest

from conftest import MTU_ENUM, RATE_ENUM, SINGLE_NODE, have, run

pytestmark = pytest.mark.skipif(not have("ib_acme"), reason="ib_acme (Debian package ibacm) missing")


def endpoint_conf(path=SINGLE_NODE):
    """The single endpoint's settings, read from the shipped example."""
    ep, section = {}, None
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line
            continue
        if section and section.startswith("[endpoint") and "=" in line:
            k, v = [x.strip() for x in line.split("=", 1)]
            ep.setdefault(k, []).append(v)
    addrs = ep["address"]
    return dict(
        name=ep["name"][0],
        ipv4=[a for a in addrs if ipaddress.ip_address(a).version == 4][0],
        ipv6=[a for a in addrs if ipaddress.ip_address(a).version == 6][0],
        gid=str(ipaddress.IPv6Address(ep["gid"][0])),
        lid=int(ep["lid"][0], 0),
        pkey=int(ep.get("pkey", ["0xffff"])[0], 0),
        mtu=MTU_ENUM[int(ep.get("mtu", ["2048"])[0])],
        rate=RATE_ENUM[ep.get("rate", ["10"])[0]],
        sl=int(ep.get("sl", ["0"])[0]),
    )


EP = endpoint_conf()


def acme(daemon, *args):
    return run(["ib_acme", "-S", daemon.socket] + list(args), timeout=20)


def path_fields(out):
    fields = dict(re.findall(r"^\s+([a-z ]+): (\S+)$", out, re.M))
    assert fields, out
    return fields


def assert_loopback_path(out):
    f = path_fields(out)
    assert f["dgid"] == EP["gid"] and f["sgid"] == EP["gid"], out
    assert int(f["dlid"]) == EP["lid"] and int(f["slid"]) == EP["lid"], out
    assert int(f["pkey"], 16) == EP["pkey"], out
    assert int(f["sl"]) == EP["sl"], out
    assert int(f["mtu"]) == EP["mtu"], out
    assert int(f["rate"]) == EP["rate"], out
    assert f["reversible"] == "1", out
    assert "return status 0x0" in out, out


@pytest.mark.parametrize("args", [
    ("-f", "n", "-d", EP["name"], "-s", EP["name"]),
    ("-f", "n", "-d", EP["name"]),
    ("-f", "i", "-d", EP["ipv4"]),
    ("-f", "i", "-d", EP["ipv4"], "-s", EP["ipv4"]),
    ("-f", "i", "-d", EP["ipv6"]),
    ("-f", "i", "-d", EP["ipv6"], "-s", EP["ipv6"]),
    ("-f", "i", "-d", EP["ipv4"], "-c"),
    ("-f", "n", "-d", EP["name"], "-c"),
    ("-f", "g", "-d", EP["gid"], "-s", EP["gid"]),
    ("-f", "g", "-d", EP["gid"]),
    ("-f", "l", "-d", str(EP["lid"]), "-s", str(EP["lid"])),
], ids=lambda a: " ".join(a))
def test_resolve_modes(single, args):
    r = acme(single, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert_loopback_path(r.stdout)


def test_source_reported_when_not_given(single):
    r = acme(single, "-f", "i", "-d", EP["ipv4"])
    assert re.search(r"^Source: %s$" % re.escape(EP["ipv4"]), r.stdout, re.M), r.stdout


def test_repeat_on_one_connection(single):
    r = acme(single, "-f", "n", "-d", EP["name"], "-C", "50")
    assert r.returncode == 0, r.stdout
    (row,) = perf_rows(acme(single, "-P").stdout)
    assert row[1] == 50, row


def test_unknown_name_is_nodata(single):
    r = acme(single, "-f", "n", "-d", "no-such-host")
    assert r.returncode != 0
    assert "No data available" in r.stdout, r.stdout


def test_unknown_source_is_addr_error(single):
    r = acme(single, "-f", "i", "-d", EP["ipv4"], "-s", "198.18.99.99")
    assert r.returncode != 0
    assert "Cannot assign requested address" in r.stdout, r.stdout


def test_verify_without_sa_fails_cleanly(single):
    r = acme(single, "-f", "n", "-d", EP["name"], "-s", EP["name"], "-v")
    assert_loopback_path(r.stdout.replace("return status 0xffffffff", "return status 0x0"))
    assert "SA verification: failed Transport endpoint is not connected" in r.stdout, r.stdout
    assert r.returncode != 0


def perf_rows(out):
    lines = [l for l in out.splitlines() if l.startswith("/")]
    return [list(map(int, l.split(",")[1:])) for l in lines]


def test_perf_global_and_per_endpoint(single):
    for _ in range(3):
        assert acme(single, "-f", "n", "-d", EP["name"]).returncode == 0
    assert acme(single, "-f", "n", "-d", "nobody").returncode != 0
    r = acme(single, "-P")
    assert r.returncode == 0, r.stdout
    (row,) = perf_rows(r.stdout)
    error, resolve, nodata, addr_query, addr_cache, route_query, route_cache = row
    assert resolve == 4 and nodata == 1 and addr_cache == 3, row
    assert route_query + route_cache == 3, row

    r = acme(single, "-P", "col")
    assert "Resolve Count : 4" in r.stdout, r.stdout

    r = acme(single, "-P", "1")
    (ep_row,) = perf_rows(r.stdout)
    assert ep_row[1] == 4 and ep_row[2] == 1 and ep_row[4] == 3, ep_row

    r = acme(single, "-P", "s", "-s", EP["ipv4"])
    assert perf_rows(r.stdout) == [ep_row], r.stdout


def test_perf_all_terminates(single):
    r = acme(single, "-P", "all")
    assert r.returncode == 0, r.stdout
    assert len(perf_rows(r.stdout)) == 1, r.stdout


def test_perf_unknown_source(single):
    r = acme(single, "-P", "s", "-s", "198.18.99.99")
    assert "Failed to query perf data" in r.stdout or r.returncode != 0, r.stdout


@pytest.mark.parametrize("args", [("-e",), ("-e", "1")])
def test_endpoint_query(single, args):
    r = acme(single, *args)
    assert r.returncode == 0, r.stdout
    rows = [l.split(",") for l in r.stdout.splitlines() if l.startswith("/")]
    assert len(rows) == 1, r.stdout
    row = rows[0]
    assert int(row[3], 16) == EP["pkey"]
    assert row[4] == "1" and row[5] == "ibres"
    assert set(row[6:]) == {EP["ipv4"], EP["ipv6"], EP["name"]}, row


def test_endpoint_query_out_of_range(single):
    r = acme(single, "-e", "2")
    assert "Endpoint 2 is not available" in r.stdout, r.stdout
