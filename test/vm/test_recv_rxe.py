"""The ib transport's receive queue under a burst: one boot with three nodes
and their daemons (test/vm/run --daemons) running
test/vm/guest/vmtest_recv.py (a small recv_depth, a raw UD QP's burst,
overruns counted, the directory converging; the clamp to the device's limits
and the halving under a locked-memory limit)."""
from conftest import run_guest_suite


def test_guest_recv_suite():
    run_guest_suite("test/vm/guest/vmtest_recv.py", nodes=3, daemons=True, timeout=300)
