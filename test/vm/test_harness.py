"""test/vm/run itself: what a command sees in the guest, exit statuses."""
import os
import shutil
import subprocess
import tempfile

from conftest import ROOT, VM_RUN, vm_run

PROBE = r"""
set -u
echo "nodes-file=$VM_NODES"
cat "$VM_NODES"
echo "cwd=$(pwd)"
touch "$PWD/.vm-probe" 2>/dev/null && echo checkout=writable || echo checkout=readonly
echo x >/etc/vm-probe && echo etc=writable
echo x >/tmp/vm-probe && echo tmp=writable
for d in /sys/class/infiniband/*; do echo "device=${d##*/} $(cat $d/ports/1/state)"; done
for d in /sys/class/infiniband/*; do echo "link_layer=$(cat $d/ports/1/link_layer)"; done
ip -o -4 addr show dev n2 | awk '{print "n2=" $4}'
ip -o -6 addr show dev n2 scope global | awk '{print "n2v6=" $4}'
# the server may take a while to listen on a loaded machine: the client
# tries again; every wait bounded
timeout 60 ibv_ud_pingpong -d rxe2 -g 1 -n 5 >/tmp/srv.log 2>&1 &
for i in 1 2 3 4 5 6 7 8 9 10; do
	sleep 1
	timeout 20 ibv_ud_pingpong -d rxe1 -g 1 -n 5 198.18.0.2 >/tmp/cli.log 2>&1 &&
		{ echo pingpong=ok; break; }
done
wait
echo "to stderr" >&2
exit 7
"""


def test_guest_view_and_status():
    proc = vm_run("bash", "-c", PROBE, nodes=2, timeout=120)
    out = proc.stdout.splitlines()
    assert proc.returncode == 7, proc.stderr
    assert "to stderr" in proc.stderr and "to stderr" not in proc.stdout
    assert "nodes-file=/run/nss-ib-vm/nodes.tsv" in out
    i = out.index("nodes-file=/run/nss-ib-vm/nodes.tsv")
    assert out[i + 1].split("\t") == ["name", "ipv4", "ipv6", "device", "gid", "socket"]
    assert out[i + 2].split("\t") == ["node1", "198.18.0.1", "2001:db8::1", "rxe1",
                                      "::ffff:198.18.0.1", ""]
    assert out[i + 3].split("\t")[:5] == ["node2", "198.18.0.2", "2001:db8::2", "rxe2",
                                          "::ffff:198.18.0.2"]
    assert "cwd=" + os.path.realpath(ROOT) in out
    assert "checkout=readonly" in out
    assert "etc=writable" in out and "tmp=writable" in out
    assert not os.path.exists("/etc/vm-probe")
    assert sorted(l for l in out if l.startswith("device=")) == [
        "device=rxe1 4: ACTIVE", "device=rxe2 4: ACTIVE"]
    assert set(l for l in out if l.startswith("link_layer=")) == {"link_layer=Ethernet"}
    assert "n2=198.18.0.2/24" in out and "n2v6=2001:db8::2/64" in out
    # UD datagrams really cross between the two soft-RoCE devices
    assert "pingpong=ok" in out


def test_timeout_is_124():
    proc = vm_run("sleep", "600", nodes=1, timeout=5)
    assert proc.returncode == 124, proc.stderr


def test_cannot_run_is_77():
    env = dict(os.environ, VM_KERNEL="no-such-kernel")
    proc = subprocess.run([VM_RUN, "--", "true"], capture_output=True, text=True, env=env,
                          timeout=30)
    assert proc.returncode == 77
    assert "cannot run a guest" in proc.stderr and "no-such-kernel" in proc.stderr
    # the checkout's own script, copied where nobody may read it: the checkout
    # may be in a folder only root may enter (/root is 0700 on Debian)
    d = tempfile.mkdtemp(prefix="ibres-as-user-", dir="/tmp")
    try:
        os.chmod(d, 0o755)
        run_copy = os.path.join(d, "run")
        shutil.copyfile(VM_RUN, run_copy)
        os.chmod(run_copy, 0o755)
        proc = subprocess.run(["setpriv", "--reuid", "65534", "--clear-groups", run_copy,
                               "--check"], cwd=d, capture_output=True, text=True, timeout=30)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert proc.returncode == 77 and "not root" in proc.stderr, proc.stderr


def test_usage_errors():
    for args in (["--nodes", "9", "--", "true"], ["--timeout", "x", "--", "true"],
                 ["--rails", "3", "--", "true"], ["--rails", "", "--", "true"], []):
        proc = subprocess.run([VM_RUN] + args, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2, args
        assert "usage:" in proc.stderr
