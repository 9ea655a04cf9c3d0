"""Helpers for the VM suite: each test boots the test VM (test/vm/run) once
and runs a batch of checks in it, most often a pytest file of test/vm/guest/
(named vmtest_*.py so that only the guest collects them)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VM_RUN = os.path.join(ROOT, "test", "vm", "run")
SKIP = 77


def vm_run(*command, nodes=3, rails=1, daemons=False, systemd=False, debs=None, timeout=240,
           env=None):
    """Boot the VM, run @command in it; the CompletedProcess. Skips the test
    when this machine cannot run a guest (status 77). @debs: a folder of
    Debian packages to install (with @systemd); @rails: rails per node."""
    args = [VM_RUN, "--nodes", str(nodes), "--timeout", str(timeout)]
    if rails != 1:
        args += ["--rails", str(rails)]
    if daemons:
        args.append("--daemons")
    if systemd:
        args.append("--systemd")
    if debs:
        args += ["--debs", debs]
    proc = subprocess.run(args + ["--"] + list(command), capture_output=True, text=True,
                          timeout=timeout + 300, env=env)
    if proc.returncode == SKIP and "cannot run a guest" in proc.stderr:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    return proc


def run_guest_suite(*paths, **kw):
    """Run the guest pytest files @paths (relative to the checkout) in one
    boot; their report goes to our output, and the test fails unless they
    passed."""
    proc = vm_run("env", "PYTHONDONTWRITEBYTECODE=1", "/usr/bin/python3", "-m", "pytest", "-ra",
                  "--color=no", "-p", "no:cacheprovider", "-o", "python_files=vmtest_*.py",
                  "--rootdir", "test/vm/guest", *paths, **kw)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    assert proc.returncode == 0, "the guest suite %s failed (status %d)" % (" ".join(paths),
                                                                           proc.returncode)
    return proc
