"""`ibresctl config import-ibacm` on the options file the real `ib_acme -O`
writes: the output names every ibacm option (mapped or why not) and
`ibresd --check-config` accepts it; ibacm_addr.cfg endpoints, the hosts data
file (--hosts-out) and bad input."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import IBRESCTL, IBRESD, run

needs_acme = pytest.mark.skipif(not shutil.which("ib_acme"), reason="ib_acme (ibacm) missing")


def acme_options(d):
    """ibacm_opts.cfg exactly as ib_acme -O writes it, in directory @d."""
    p = subprocess.run(["ib_acme", "-O", "-D", str(d)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    path = os.path.join(str(d), "ibacm_opts.cfg")
    assert os.path.isfile(path), p.stdout.decode()
    with open(path) as f:
        return f.read()


def option_names(text):
    return [line.split()[0] for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


def fake_sysfs(root, ports=(("mlx5_0", 1, "InfiniBand"), ("mlx5_0", 2, "Ethernet"))):
    for dev, port, ll in ports:
        d = os.path.join(str(root), "class/infiniband", dev, "ports", str(port))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "link_layer"), "w") as f:
            f.write(ll + "\n")
    return str(root)


def import_ibacm(*args):
    return run([IBRESCTL, "config", "import-ibacm"] + [str(a) for a in args])


def check(conf_text, tmp_path, name="imported.conf"):
    path = tmp_path / name
    path.write_text(conf_text)
    p = run([IBRESD, "--check-config", "--config", str(path)])
    assert p.returncode == 0, conf_text + "\n----\n" + p.stdout + p.stderr
    return p.stdout


def settings(conf_text):
    """{(section, key): [values]} of the uncommented lines."""
    out, sect = {}, None
    for line in conf_text.splitlines():
        m = re.match(r"\[(\w+)", line)
        if m:
            sect = m.group(1)
        elif line and not line.startswith("#"):
            k, v = [x.strip() for x in line.split("=", 1)]
            out.setdefault((sect, k), []).append(v)
    return out


@needs_acme
def test_real_ib_acme_options_every_option_reported_and_accepted(tmp_path):
    etc = tmp_path / "rdma"
    etc.mkdir()
    opts = acme_options(etc)
    names = option_names(opts)
    assert "route_prot" in names and "min_mtu" in names  # it is the real file
    r = import_ibacm(etc, fake_sysfs(tmp_path / "sys"))
    assert r.returncode == 0, r.stderr
    for name in set(names):
        assert re.search(r"^# ibacm %s " % re.escape(name), r.stdout, re.M), name
    # the commented-out options of the file too (ibacm's defaults)
    for name in ("route_data_file", "addr_data_file", "provider", "provider_lib_path",
                 "support_ips_in_addr_cfg"):
        assert re.search(r"^# ibacm %s " % name, r.stdout, re.M), name
    s = settings(r.stdout)
    assert s[("resolve", "route_prot")] == ["sa"]
    assert s[("resolve", "timeout")] == ["2000ms"]
    assert s[("resolve", "retries")] == ["2"]
    assert s[("resolve", "addr_ttl")] == ["1440m"]
    assert s[("resolve", "sa_window")] == ["1"]
    assert s[("daemon", "acm_socket")] == ["/run/ibacm-unix.sock"]
    assert s[("daemon", "acm_af_ib")] == ["no"]  # said, not silently changed
    assert re.search(r"^# .*RDMA_CM AND AF_IB in nss-ib\(8\)$", r.stdout, re.M), r.stdout
    assert s[("endpoint", "device")] == ["mlx5_0"]  # the IB port, not the Ethernet one
    assert s[("endpoint", "group")] == ["239.255.73.1 mtu=2048 rate=10"]
    out = check(r.stdout, tmp_path)
    assert "1 endpoints" in out and "addr_ttl = 1d" in out


@needs_acme
def test_addr_cfg_hosts_data_and_every_mapping(tmp_path):
    etc = tmp_path / "rdma"
    etc.mkdir()
    opts = acme_options(etc)
    data = tmp_path / "ibacm_hosts.data"
    changes = {"log_level": "2", "route_prot": "acm", "min_mtu": "4096", "min_rate": "40",
               "server_mode": "open", "addr_preload": "acm_hosts", "timeout": "99999",
               "retries": "20", "sa_depth": "8", "addr_timeout": "60"}
    for k, v in changes.items():
        opts = re.sub(r"^%s .*$" % k, "%s %s" % (k, v), opts, flags=re.M)
    opts += "addr_data_file %s\nsupport_ips_in_addr_cfg 1\nno_such_option 3\n" % data
    (etc / "ibacm_opts.cfg").write_text(opts)
    (etc / "ibacm_addr.cfg").write_text(
        "# address device port pkey\n"
        "node1 mlx5_0 1 default\n"
        "node1-ib mlx5_0 1 default\n"
        "198.18.0.1 mlx5_0 1 default\n"
        "node1-p2 mlx5_0 1 0x7fff\n"
        "node1-b mlx5_1 2 default\n"
        "broken line\n")
    data.write_text("# address GID\n"
                    "node2 fe80::2:c903:0:2\n198.18.0.2 fe80::2:c903:0:2\n"
                    "2001:db8::2 fe80::2:c903:0:2\n"
                    "198.18.0.3 fe80::2:c903:0:3\n"
                    "garbage\n")
    hosts = tmp_path / "hosts"
    r = import_ibacm("--hosts-out", hosts, etc, tmp_path / "nosys")
    assert r.returncode == 0, r.stderr
    s = settings(r.stdout)
    assert s[("daemon", "log_level")] == ["debug"]
    assert s[("resolve", "route_prot")] == ["mcast"]
    assert s[("resolve", "timeout")] == ["60000ms"]  # clamped, and said so
    assert s[("resolve", "retries")] == ["10"]
    assert s[("resolve", "sa_window")] == ["8"]
    assert s[("resolve", "addr_ttl")] == ["60m"]
    assert s[("resolve", "hosts_file")] == [str(hosts)]
    assert "# ibacm no_such_option (line" in r.stdout
    assert "no TCP server_port" in r.stdout
    assert "ibacm_addr.cfg line 7" in r.stdout
    assert s[("endpoint", "device")] == ["mlx5_0", "mlx5_0", "mlx5_1"]
    assert s[("endpoint", "pkey")] == ["0xffff", "0x7fff", "0xffff"]
    assert s[("endpoint", "name")] == ["node1", "node1-ib", "node1-p2", "node1-b"]
    assert s[("endpoint", "address")] == ["198.18.0.1"]
    assert set(s[("endpoint", "group")]) == {"239.255.73.1 mtu=4096 rate=40"}
    assert "not 'address GID'" in r.stderr and "2 hosts" in r.stderr
    lines = [x for x in hosts.read_text().splitlines() if x and not x.startswith("#   ")]
    assert "#fe80::2:c903:0:2 LID node2 198.18.0.2 2001:db8::2" in lines
    assert "#fe80::2:c903:0:3 LID NAME 198.18.0.3" in lines
    out = check(r.stdout, tmp_path)
    assert "3 endpoints, 0 static hosts" in out
    # completed by hand, the hosts load
    text = hosts.read_text().replace("#fe80::2:c903:0:2 LID", "fe80::2:c903:0:2 2")
    text = text.replace("#fe80::2:c903:0:3 LID NAME", "fe80::2:c903:0:3 3 node3")
    hosts.write_text(text)
    assert "3 endpoints, 2 static hosts" in check(r.stdout, tmp_path)


@needs_acme
def test_preload_without_hosts_out_says_what_to_do(tmp_path):
    etc = tmp_path / "rdma"
    etc.mkdir()
    opts = re.sub(r"^addr_preload .*$", "addr_preload acm_hosts", acme_options(etc),
                  flags=re.M)
    (etc / "ibacm_opts.cfg").write_text(opts)
    r = import_ibacm(etc, fake_sysfs(tmp_path / "sys"))
    assert r.returncode == 0 and "--hosts-out FILE" in r.stderr
    assert settings(r.stdout)[("resolve", "hosts_file")] == ["none"]
    check(r.stdout, tmp_path)


def test_no_options_file_imports_ibacm_defaults(tmp_path):
    r = import_ibacm(tmp_path, fake_sysfs(tmp_path / "sys"))
    assert r.returncode == 0 and "ibacm's defaults" in r.stderr
    assert settings(r.stdout)[("resolve", "route_prot")] == ["sa"]
    check(r.stdout, tmp_path)


def test_bad_input(tmp_path):
    r = import_ibacm(tmp_path / "missing")
    assert r.returncode == 1 and "missing" in r.stderr
    (tmp_path / "ibacm_opts.cfg").write_text("timeout " + "9" * 5000 + "\n")
    r = import_ibacm(tmp_path, fake_sysfs(tmp_path / "sys"))
    assert r.returncode == 1 and "longer than" in r.stderr
    (tmp_path / "ibacm_opts.cfg").write_text(
        "addr_preload acm_hosts\naddr_data_file %s\n" % (tmp_path / "none.data"))
    r = import_ibacm("--hosts-out", tmp_path / "h", tmp_path)
    assert r.returncode == 1 and "none.data" in r.stderr
    r = run([IBRESCTL, "config", "import-ibacm", "a", "b", "c"])
    assert r.returncode == 2
    r = run([IBRESCTL, "--hosts-out", "x", "config", "check", "y"])
    assert r.returncode == 2
