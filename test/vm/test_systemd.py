"""A booted systemd (test/vm/run --systemd): nss-ib installed from its Debian
packages (`make deb`; `make install` where this machine cannot build them),
node1's daemon socket-activated under its hardened unit, node2's beside it;
one boot running test/vm/guest/vmtest_systemd.py."""
import glob
import os
import re
import shutil
import subprocess

from conftest import ROOT, run_guest_suite

DEB_DIR = os.path.join(ROOT, "build", "deb")
PACKAGES = ("ibresd", "libnss-ib", "libibres1", "libibres-dev", "ibres-tools")


def tracked_newest():
    """The newest modification time of the checkout's tracked files."""
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True,
                           check=True, timeout=60).stdout.split(b"\0")
    return max(os.stat(os.path.join(ROOT, f.decode())).st_mtime for f in files
               if f and os.path.exists(os.path.join(ROOT, f.decode())))


def packages():
    """build/deb/, holding this checkout's packages: the ones `make check`'s
    packaging test built when they are newer than every tracked file, else
    built now. None when this machine cannot build them."""
    if not (shutil.which("dpkg-buildpackage") and shutil.which("dh")):
        return None
    with open(os.path.join(ROOT, "Makefile")) as f:
        version = re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M).group(1)

    def current():
        debs = [glob.glob(os.path.join(DEB_DIR, "%s_%s-1_*.deb" % (p, version)))
                for p in PACKAGES]
        if not all(debs):
            return False
        return min(os.stat(d[0]).st_mtime for d in debs) > tracked_newest()

    if not current():
        subprocess.run(["make", "-C", ROOT, "--no-print-directory", "deb"], check=True,
                       stdout=subprocess.DEVNULL, timeout=900)
        assert current(), "make deb left no packages of version %s in %s" % (version, DEB_DIR)
    return DEB_DIR


def test_guest_systemd_suite():
    run_guest_suite("test/vm/guest/vmtest_systemd.py", nodes=2, daemons=True, systemd=True,
                    debs=packages(), timeout=300)
