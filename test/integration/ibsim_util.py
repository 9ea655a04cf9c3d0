"""Helpers for the tests and the benchmark on a simulated InfiniBand fabric
(test/fabric/ibsim): start a fabric, run ibresd and saquery as simulated
hosts, read what OpenSM's SA says. Stdlib only."""
import json
import os
import re
import subprocess
import time

from conftest import (ASAN_PRELOAD, IBRESCTL, IBRESD, ROOT, Daemon, run_tool,
                      wait_for_socket)

IBSIM = os.path.join(ROOT, "test", "fabric", "ibsim")
PYTHON = "/usr/bin/python3"
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
MCAST_SCOPE_SITE = 5
MGID_SIGNATURE = 0x4962


def missing():
    """Why a simulated fabric cannot run here ('' when it can)."""
    r = subprocess.run([PYTHON, "-c", "import importlib.machinery as m, sys;"
                        "mod = m.SourceFileLoader('ibsim', sys.argv[1]).load_module();"
                        "print(mod.missing_tools())", IBSIM],
                       capture_output=True, text=True, timeout=30)
    return r.stdout.strip() or (r.stderr.strip() if r.returncode else "")


def ibsim(*args, timeout=120, check=True):
    return run_tool(IBSIM, *args, timeout=timeout, check=check)


def group_mgid(pkey, mtu, rate, ipv4, scope=MCAST_SCOPE_SITE):
    """The MGID ibresd uses for a group (doc/fabric-protocol.md)."""
    a = [int(x) for x in ipv4.split(".")]
    words = [0xff10 | scope, MGID_SIGNATURE, pkey | 0x8000, 0, mtu << 8 | rate, 0,
             a[0] << 8 | a[1], a[2] << 8 | a[3]]
    import ipaddress
    return str(ipaddress.IPv6Address(b"".join(w.to_bytes(2, "big") for w in words)))


class SimFabric:
    """A fabric from `ibsim up`; always call down()."""

    def __init__(self, d, hcas, netns=False, sm=True):
        self.dir = str(d)
        self.n = hcas
        self.netns = netns
        self.sm = sm
        self.hcas = {}

    def up(self):
        args = ["up", "--hcas", self.n, "--dir", self.dir]
        if self.netns:
            args.append("--netns")
        if not self.sm:
            args.append("--no-sm")
        try:
            ibsim(*args)
        except BaseException:
            self.down()
            raise
        self.read_hcas()
        with open(os.path.join(self.dir, "fabric.json")) as f:
            self.state = json.load(f)
        return self

    def read_hcas(self):
        with open(os.path.join(self.dir, "hcas.tsv")) as f:
            lines = f.read().splitlines()
        head = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(head, line.split("\t")))
            row["lid"] = int(row["lid"])
            row["k"] = int(row["name"][3:])
            guid = int(row["port_guid"], 16)
            row["gid"] = "fe80::%x:%x:%x:%x" % (guid >> 48, guid >> 32 & 0xffff,
                                                guid >> 16 & 0xffff, guid & 0xffff)
            self.hcas[row["k"]] = row

    def down(self):
        ibsim("down", "--dir", self.dir, check=False)

    def sm_start(self):
        ibsim("sm", "start", "--dir", self.dir)
        self.read_hcas()

    def sm_stop(self):
        ibsim("sm", "stop", "--dir", self.dir)

    def console(self, command):
        ibsim("console", "--dir", self.dir, command)

    def run_as(self, host, *cmd, timeout=30):
        return ibsim("exec", "--dir", self.dir, "--host", host, "--timeout", timeout, "--",
                     *cmd, timeout=timeout + 10, check=False)

    def saquery_path(self, host, slid, dlid):
        """The SA's PathRecord from @slid to @dlid as saquery prints it."""
        r = self.run_as(host, "saquery", "PR", "--slid", slid, "--dlid", dlid)
        return parse_saquery(r.stdout)

    def membership(self, host, mgid, port_gid):
        """The SA's MCMemberRecord of @port_gid in @mgid, or None."""
        r = self.run_as(host, "saquery", "MCMR", "--mgid", mgid, "--gid", port_gid,
                        "--smkey", "1")
        rec = parse_saquery(r.stdout)
        return rec or None

    def groups(self, host):
        """MGIDs `saquery -g` lists."""
        r = self.run_as(host, "saquery", "-g")
        return re.findall(r"MGID\.+(\S+)", r.stdout)


def parse_saquery(text):
    """saquery's 'name....value' lines -> dict (first record only)."""
    out = {}
    for name, value in re.findall(r"^\s*(\w+)\.{2,}(\S+)", text, re.M):
        out.setdefault(name.lower(), value)
    return out


class SimDaemon(Daemon):
    """ibresd started as simulated host @host of @fabric."""

    def __init__(self, fabric, host, d, config_text, debug=True):
        super().__init__(d, config_text=config_text)
        self.debug = debug
        self.fabric = fabric
        self.host = host

    def start(self, wait=True):
        st = self.fabric.state
        # a SANITIZE=1 daemon needs ASan's runtime ahead of the preloaded umad2sim
        env = dict(os.environ, IBSIM_SOCKNAME=st["sockname"], SIM_HOST=self.host,
                   LD_PRELOAD=" ".join(filter(None, [ASAN_PRELOAD, st["umad2sim"]])))
        if ASAN_PRELOAD:
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":suppressions=" + \
                os.path.join(ROOT, "test", "integration", "umad2sim.asan-supp")
        cmd = [IBRESD, "--foreground"] + (["--debug"] if self.debug else []) + \
            ["--config", self.config, "--socket", self.socket]
        if st.get("netns"):
            cmd = ["ip", "netns", "exec", st["netns"]] + cmd
        cwd = os.path.join(self.fabric.dir, "run", self.host)
        os.makedirs(cwd, exist_ok=True)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        if wait:
            wait_for_socket(self.socket, proc=self.proc)
            # the socket listens before the port is discovered: wait for that too
            deadline = time.monotonic() + 10
            while " ready: " not in self.logtext():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("ibresd on %s not ready:\n%s" % (self.host,
                                                                        self.logtext()))
                time.sleep(0.02)
        return self

    def stop(self, timeout=15):
        return super().stop(timeout)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


    def ctl(self, *args, timeout=20):
        """ibresctl --json ARGS: (exit status, parsed JSON or None)."""
        r = subprocess.run([IBRESCTL, "--socket", self.socket, "--json", "--timeout", "8000"] +
                           [str(a) for a in args], capture_output=True, text=True,
                           timeout=timeout)
        try:
            return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None
        except json.JSONDecodeError:
            return r.returncode, None

    def endpoint(self):
        status, out = self.ctl("endpoints")
        assert status == 0, (status, out)
        return out["endpoints"][0]

    def resolve(self, dest):
        return self.ctl("resolve", dest)


def sim_config(k, socket, route_prot="sa", groups=(("239.255.73.1", 2048, "10"),),
               transport=None, extra_resolve=(), extra_endpoint=(), hosts_file=None):
    """An ibresd.conf for simulated host hcaK: node name nodeK, the port from
    the simulator, quick timeouts and port polls."""
    res = {"route_prot": route_prot, "timeout": "200ms", "retries": "2",
           "port_poll_interval": "300ms", "negative_ttl": "1s"}
    if hosts_file:
        res["hosts_file"] = hosts_file
    for line in extra_resolve:  # "key = value", replacing a default
        key, value = (x.strip() for x in line.split("=", 1))
        res[key] = value
    lines = ["[daemon]", "socket = %s" % socket, "", "[resolve]"]
    lines += ["%s = %s" % kv for kv in res.items()]
    lines += ["", "[endpoint ib0]", "name = node%d" % k, "device = ibsim0", "port_num = 1"]
    for addr, mtu, rate in groups:
        lines.append("group = %s mtu=%d rate=%s" % (addr, mtu, rate))
    if transport == "ip":
        lines += ["transport = ip", "interface = lo", "address = 198.18.1.%d" % k]
    lines += list(extra_endpoint)
    return "\n".join(lines) + "\n"
