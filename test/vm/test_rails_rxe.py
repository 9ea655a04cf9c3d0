"""Two rails per node on soft-RoCE: one boot with three nodes, two rxe
devices each on two bridges, and their daemons (test/vm/run --daemons
--rails 2), running test/vm/guest/vmtest_rails.py."""
from conftest import run_guest_suite


def test_guest_rails_suite():
    run_guest_suite("test/vm/guest/vmtest_rails.py", nodes=3, rails=2, daemons=True,
                    timeout=300)
