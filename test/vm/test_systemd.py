"""A booted systemd (test/vm/run --systemd): nss-ib installed, node1's daemon
socket-activated under its hardened unit, node2's beside it; one boot
running test/vm/guest/vmtest_systemd.py."""
from conftest import run_guest_suite


def test_guest_systemd_suite():
    run_guest_suite("test/vm/guest/vmtest_systemd.py", nodes=2, daemons=True, systemd=True,
                    timeout=300)
