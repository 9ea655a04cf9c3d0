"""`ibresctl config generate`: a config from the node's IPoIB interfaces,
read from a prepared sysfs tree and a real interface in a namespace."""
import os
import subprocess

import pytest

from conftest import IBRESCTL, IBRESD, needs_root, run


def fake_sysfs(root, ifname="ib0", device="mlx5_0", lid="0x7", pkey="0x8001"):
    net = root / "class" / "net" / ifname
    (net / "device" / "infiniband" / device).mkdir(parents=True)
    (net / "type").write_text("32\n")
    (net / "address").write_text("80:00:01:07:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:0b:0c\n")
    (net / "pkey").write_text(pkey + "\n")
    (net / "dev_port").write_text("0\n")
    port = root / "class" / "infiniband" / device / "ports" / "1"
    port.mkdir(parents=True)
    (port / "lid").write_text(lid + "\n")
    pkey_table(port, [0xffff, 0x7fff, int(pkey, 16)])
    # an Ethernet interface that must be ignored
    eth = root / "class" / "net" / "eth0"
    eth.mkdir(parents=True)
    (eth / "type").write_text("1\n")
    return root


def pkey_table(port, pkeys):
    """The port's P_Key table (sysfs ports/N/pkeys/I), entry I pkeys[I]; the
    kernel shows every entry, 0x0000 where the SM set none."""
    table = port / "pkeys"
    table.mkdir(exist_ok=True)
    for i, pk in enumerate(pkeys):
        (table / str(i)).write_text("0x%04x\n" % pk)


def test_no_ipoib_gives_a_template(tmp_path):
    (tmp_path / "class" / "net").mkdir(parents=True)
    r = run([IBRESCTL, "config", "generate", str(tmp_path)])
    assert r.returncode == 0
    assert "no IPoIB interface or RoCE port found" in r.stderr
    assert "#[endpoint ib0]" in r.stdout and "[daemon]" in r.stdout


def test_generated_config_from_sysfs_checks_ok(tmp_path):
    fake_sysfs(tmp_path / "sys")
    r = run([IBRESCTL, "config", "generate", str(tmp_path / "sys")])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "[endpoint ib0]" in out and "[endpoint eth0]" not in out
    assert "gid = fe80::2:c903:a:b0c" in out
    assert "device = mlx5_0" in out and "port_num = 1" in out and "lid = 0x7" in out
    assert "pkey = 0x8001" in out and "interface = ib0" in out
    # with a device, ibresd takes the P_Key from this entry of the port's table
    assert "pkey_index = 2\n" in out
    conf = tmp_path / "gen.conf"
    conf.write_text(out)
    r = run([IBRESCTL, "config", "check", str(conf)])
    assert r.returncode == 0, r.stdout + r.stderr


@needs_root
def test_generated_config_takes_interface_addresses(tmp_path):
    ns = "ibres-confgen-%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=10)
    try:
        for cmd in (["ip", "link", "add", "ib0", "type", "veth", "peer", "name", "ib0p"],
                    ["ip", "addr", "add", "198.18.5.1/24", "dev", "ib0"],
                    ["ip", "addr", "add", "2001:db8::5/64", "dev", "ib0", "nodad"],
                    ["ip", "link", "set", "ib0", "up"]):
            subprocess.run(["ip", "netns", "exec", ns] + cmd, check=True, timeout=10)
        fake_sysfs(tmp_path / "sys")
        r = run(["ip", "netns", "exec", ns, IBRESCTL, "config", "generate",
                 str(tmp_path / "sys")])
        assert r.returncode == 0, r.stderr
        assert "address = 198.18.5.1" in r.stdout
        assert "address = 2001:db8::5" in r.stdout
        assert "fe80" not in "".join(l for l in r.stdout.splitlines()
                                     if l.startswith("address"))
        conf = tmp_path / "gen.conf"
        conf.write_text(r.stdout)
        r = run([IBRESD, "--check-config", "--config", str(conf)])
        assert r.returncode == 0, r.stderr
        assert "198.18.5.1" in r.stdout
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=10)


def fake_roce(root, device="rxe0", ndev="eth1"):
    port = root / "class" / "infiniband" / device / "ports" / "1"
    (port / "gid_attrs" / "types").mkdir(parents=True)
    (port / "gid_attrs" / "ndevs").mkdir(parents=True)
    (port / "gids").mkdir(parents=True)
    (port / "link_layer").write_text("Ethernet\n")
    (port / "rate").write_text("10 Gb/sec (1X QDR)\n")
    entries = [("RoCE v2", "fe80:0000:0000:0000:0200:c6ff:fe12:0001"),
               ("IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:c612:0001"),
               ("RoCE v2", "0000:0000:0000:0000:0000:ffff:c612:0001")]
    for i, (typ, gid) in enumerate(entries):
        (port / "gid_attrs" / "types" / str(i)).write_text(typ + "\n")
        (port / "gid_attrs" / "ndevs" / str(i)).write_text(ndev + "\n")
        (port / "gids" / str(i)).write_text(gid + "\n")
    net = root / "class" / "net" / ndev
    net.mkdir(parents=True, exist_ok=True)
    (net / "mtu").write_text("1500\n")
    (net / "type").write_text("1\n")
    return root


def test_generated_roce_endpoint(tmp_path):
    """A RoCE port: the ib transport on the device, its RoCE v2 IPv4-mapped
    GID, the netdev, an MTU the netdev carries; --device and --name."""
    sysfs = tmp_path / "sys"
    fake_sysfs(sysfs)
    fake_roce(sysfs)
    r = run([IBRESCTL, "config", "generate", "--device", "rxe0", "--name", "node7", str(sysfs)])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "[endpoint ib0]" not in out  # another device's
    assert "[endpoint rxe0]" in out and "name = node7" in out
    assert "device = rxe0" in out and "port_num = 1" in out
    assert "gid = ::ffff:198.18.0.1" in out and "transport = ib" in out
    assert "interface = eth1" in out and "mtu = 1024" in out and "lid" not in out.split(
        "[endpoint rxe0]")[1].replace("# ", "")
    assert "group = 239.255.73.1 mtu=1024 rate=10" in out
    conf = tmp_path / "gen.conf"
    conf.write_text(out)
    r = run([IBRESCTL, "config", "check", str(conf)])
    assert r.returncode == 0, r.stdout + r.stderr
    # both kinds without --device; the second endpoint named after its device
    r = run([IBRESCTL, "config", "generate", "--name", "node7", str(sysfs)])
    assert "[endpoint ib0]" in r.stdout and "name = node7-rxe0" in r.stdout
    # an unknown device: nothing, status 1
    r = run([IBRESCTL, "config", "generate", "--device", "mlx9", str(sysfs)])
    assert r.returncode == 1 and "mlx9" in r.stderr
    # the options belong to config generate only
    r = run([IBRESCTL, "--device", "rxe0", "stats"])
    assert r.returncode == 2


def fake_rail(root, ifname, device, port, pkey, guid, state="4: ACTIVE"):
    """An IPoIB interface on @device's port @port (a partition's child
    interface when @pkey is not 0xffff)."""
    net = root / "class" / "net" / ifname
    (net / "device" / "infiniband" / device).mkdir(parents=True, exist_ok=True)
    (net / "type").write_text("32\n")
    (net / "address").write_text("80:00:01:07:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:0b:%02x\n"
                                 % guid)
    (net / "pkey").write_text("0x%04x\n" % pkey)
    (net / "dev_port").write_text("%d\n" % (port - 1))
    p = root / "class" / "infiniband" / device / "ports" / str(port)
    p.mkdir(parents=True, exist_ok=True)
    (p / "lid").write_text("0x1\n")      # every plane numbers its LIDs from 1
    (p / "state").write_text(state + "\n")
    # the SM gave every port partitions 0x8001 and 0x0002 (a limited member)
    pkey_table(p, [0xffff, 0x0000, 0x8001, 0x0002])


RAILS = [("ib3", "mlx5_1", 2, 0xffff, 4), ("ib0", "mlx5_0", 1, 0xffff, 1),
         ("ib1", "mlx5_0", 2, 0xffff, 2), ("ib0.8001", "mlx5_0", 1, 0x8001, 1),
         ("ib2", "mlx5_1", 1, 0xffff, 3), ("ib1.8002", "mlx5_0", 2, 0x8002, 2),
         ("ib2.8003", "mlx5_1", 1, 0x8003, 3)]
# each one's entry in its port's table (0x8002: the limited member's entry)
PKEY_INDEX = {"ib0": 0, "ib0.8001": 2, "ib1": 0, "ib1.8002": 3, "ib2": 0, "ib3": 0}


def test_generated_multi_rail_config(tmp_path):
    """Every active port and partition, in (device, port, P_Key) order
    whatever order the directory lists them in: one host, the host name on
    every endpoint and one alias per rail; a port that is not ACTIVE is
    left out. Two nodes built in different orders get the same file."""
    outs = []
    for order in (RAILS, list(reversed(RAILS))):
        sysfs = tmp_path / ("sys%d" % len(outs))
        for r in order:
            fake_rail(sysfs, *r)
        fake_rail(sysfs, "ib9", "mlx5_9", 1, 0xffff, 9, state="1: DOWN")
        r = run([IBRESCTL, "config", "generate", "--name", "node7", str(sysfs)])
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    out = outs[0]
    labels = [l[len("[endpoint "):-1] for l in out.splitlines() if l.startswith("[endpoint ")]
    assert labels == ["ib0", "ib0.8001", "ib1", "ib1.8002", "ib2", "ib3"]
    for label in labels:
        section = out.split("[endpoint %s]\n" % label)[1].split("\n[")[0]
        names = [l.split(" = ")[1] for l in section.splitlines() if l.startswith("name = ")]
        assert names == ["node7", "node7-" + label]
        assert "pkey_index = %d\n" % PKEY_INDEX[label] in section, (label, section)
    assert "ib9" not in out
    # a partition its port does not have carries nothing: left out, and said so
    assert "# ib2.8003 left out: P_Key 0x8003 is not in mlx5_1 port 1's table" in out
    conf = tmp_path / "gen.conf"
    conf.write_text(out)
    r = run([IBRESCTL, "config", "check", str(conf)])
    assert r.returncode == 0, r.stdout + r.stderr


def test_generated_config_stops_at_32_endpoints(tmp_path):
    """8 ports of 5 partitions each: the first 32 in (device, port, P_Key)
    order are written, the daemon's limit, and `config check` takes the file;
    the other 8 are named in comments."""
    sysfs = tmp_path / "sys"
    names = []
    for port in range(8):
        dev, num = "mlx5_%d" % (port // 2), port % 2 + 1
        for part, pkey in enumerate((0xffff, 0x8001, 0x8002, 0x8003, 0x8004)):
            name = "ib%d" % port if part == 0 else "ib%d.%04x" % (port, pkey)
            fake_rail(sysfs, name, dev, num, pkey, port * 8 + part)
            names.append(name)
        pkey_table(sysfs / "class" / "infiniband" / dev / "ports" / str(num),
                   [0xffff, 0x8001, 0x8002, 0x8003, 0x8004])
    r = run([IBRESCTL, "config", "generate", "--name", "node1", str(sysfs)])
    assert r.returncode == 0, r.stderr
    labels = [l[len("[endpoint "):-1] for l in r.stdout.splitlines()
              if l.startswith("[endpoint ")]
    assert labels == names[:32]
    for name in names[32:]:
        assert "# %s left out: ibresd takes 32 endpoints at most" % name in r.stdout
    conf = tmp_path / "gen.conf"
    conf.write_text(r.stdout)
    r = run([IBRESCTL, "config", "check", str(conf)])
    assert r.returncode == 0, r.stdout + r.stderr
