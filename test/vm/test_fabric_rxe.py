"""The verbs transport on soft-RoCE, rdma_cm by host name, kernel path
queries, and the fabric protocol under netem (last: it restarts the daemons
and degrades the links): one boot with three nodes and their daemons
(test/vm/run --daemons), running test/vm/guest/."""
from conftest import run_guest_suite


def test_guest_fabric_suite():
    run_guest_suite("test/vm/guest/vmtest_fabric.py", "test/vm/guest/vmtest_rdmacm.py",
                    "test/vm/guest/vmtest_kernel_paths.py", "test/vm/guest/vmtest_chaos.py",
                    nodes=3,
                    daemons=True, timeout=300)
