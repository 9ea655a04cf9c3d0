"""Helpers shared by the consumer-side integration tests (test_nss.py,
test_libibres.py, test_ibresctl.py): the C helper programs, compiled once
per session from test/integration/nss_*.c, and the environment that points
libnss_ib / libibres / ibresctl at a test daemon."""
import os
import socket
import struct
import subprocess

import pytest

from conftest import BUILD, ROOT, SAN_CFLAGS, SINGLE_NODE, preload_sanitizer

INCLUDE = [os.path.join(ROOT, "include")]
NSS_MODULE = os.path.join(BUILD, "libnss_ib.so.2")
HOSTS_EXAMPLE = os.path.join(ROOT, "conf", "examples", "hosts.example")

# name -> extra compiler arguments
HELPERS = {
    "nss_call": ["-ldl"],
    "nss_glibc": ["-lpthread"],
    "nss_libibres": ["-I" + INCLUDE[0], "-L" + BUILD, "-libres", "-lrdmacm",
                     "-Wl,-rpath," + BUILD],
    "nss_load": ["-I" + INCLUDE[0], "-L" + BUILD, "-libres", "-lpthread",
                 "-Wl,-rpath," + BUILD],
}


def compile_helper(name, outdir):
    src = os.path.join(ROOT, "test", "integration", name + ".c")
    out = os.path.join(str(outdir), name)
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-std=gnu11", "-D_GNU_SOURCE", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
           "-o", out, src] + SAN_CFLAGS + HELPERS[name]
    subprocess.run(cmd, check=True, timeout=120)
    return out


@pytest.fixture(scope="session")
def helpers(tmp_path_factory):
    """{name: path} of every compiled helper program."""
    d = tmp_path_factory.mktemp("nss-helpers")
    return {name: compile_helper(name, d) for name in HELPERS}


def client_env(daemon=None, socket_path=None, **extra):
    """The environment for a client of @daemon (or of @socket_path)."""
    env = dict(os.environ)
    env["IBRES_SOCKET"] = socket_path or daemon.socket
    env["LD_LIBRARY_PATH"] = BUILD
    env.pop("IBRES_TIMEOUT_MS", None)
    env.update({k: str(v) for k, v in extra.items()})
    return preload_sanitizer(env)  # getent, not built by us, loads the module


def static_hosts_config():
    """single-node.conf plus the example static hosts file (aliases, an
    IPv4-only host, a second partition)."""
    text = open(SINGLE_NODE).read()
    return text.replace("[resolve]\n", "[resolve]\nhosts_file = %s\n" % HOSTS_EXAMPLE, 1)


def parse_kv(text):
    """key=value lines into a dict (later keys win)."""
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def gai_entries(out):
    """nss_libibres gai output -> list of dicts, one per rdma_addrinfo."""
    res = []
    for line in out.splitlines():
        if line.startswith("entry "):
            res.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
            res[-1]["paths"] = []
        elif res and line.startswith("path="):
            res[-1]["paths"].append(line[5:])
        elif res and "=" in line:
            key, value = line.split("=", 1)
            res[-1][key] = value
    return res


# The shared host directory's extension opcode (DIRECTORY, include/ibres_proto.h), the
# header's size, and the seal python's fcntl lacks (<linux/fcntl.h>).
OP_DIRECTORY = 0x0d
HDR_LEN = 16
F_SEAL_FUTURE_WRITE = 0x0010


def directory_request():
    """A DIRECTORY request: the 16-byte header alone."""
    return struct.pack(">BBB3sHQ", 1, OP_DIRECTORY, 0, b"", HDR_LEN, 0)


def fetch_directory(sock_path):
    """Ask the daemon at @sock_path for its directory as a reader does: (status,
    descriptor or None)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall(directory_request())
        data, fds, _, _ = socket.recv_fds(s, 256, 4)
        while len(data) < HDR_LEN or len(data) < struct.unpack_from(">H", data, 6)[0]:
            more = s.recv(256)
            assert more, data
            data += more
    return data[2], (fds[0] if fds else None)
