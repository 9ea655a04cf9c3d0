"""bench/lossy-boot's runs (see there): never collected by the suite (its
name), run only when that script names it. Root needed."""
import os
import statistics
import time

import pytest

from conftest import needs_root
from fabric_util import cluster_factory  # noqa: F401 (fixture)
from test_fetch import PRODUCT, knowledge

pytestmark = needs_root

NODES = 16
LOSS = 60
SETTLE = 1.0
BOUND = 20.0   # seconds after the lift


def one_boot(cluster_factory, ibresd, name, loss_s):
    """(false completes during the loss, after it, seconds to all right)."""
    c = cluster_factory(NODES, "--loss", LOSS, "--ibresd", ibresd, *PRODUCT, name=name)
    try:
        c.wait_settled(SETTLE, complete=0)
        during = set()
        end = time.monotonic() + loss_s
        while time.monotonic() < end:
            during |= {k for k, (complete, lacks) in knowledge(c).items() if complete and lacks}
        c.loss(0)
        lifted = time.monotonic()
        after = set()
        while time.monotonic() - lifted < BOUND:
            seen = knowledge(c)
            after |= {k for k, (complete, lacks) in seen.items() if complete and lacks}
            if all(complete and not lacks for complete, lacks in seen.values()):
                break
        return during, after, time.monotonic() - lifted
    finally:
        c.down()


@pytest.mark.timeout(7200)
def test_lossy_boot_bench(cluster_factory):
    builds = os.environ["LOSSY_BOOT_BUILDS"].split(":")
    runs = int(os.environ.get("LOSSY_BOOT_RUNS", "10"))
    loss_s = float(os.environ.get("LOSSY_BOOT_LOSS_S", "6"))
    res = {b: [] for b in builds}
    for run in range(runs):
        for i, b in enumerate(builds):
            during, after, took = one_boot(cluster_factory, os.path.join(b, "ibresd"),
                                           "lb%d_%d" % (run, i), loss_s)
            res[b].append((during, after, took))
            print("run %d %s: false complete during the loss %s, after it %s; "
                  "all right %.1f s after the lift" % (run, b, sorted(during) or "-",
                                                        sorted(after) or "-", took))
    for b in builds:
        r = res[b]
        took = [t for _, _, t in r]
        print("%s: %d runs; with a false complete: %d during the loss, %d after it; "
              "all right after the lift: median %.1f s, max %.1f s%s" % (
                  b, len(r), sum(bool(d) for d, _, _ in r), sum(bool(a) for _, a, _ in r),
                  statistics.median(took), max(took),
                  " (%d not within %.0f s)" % (sum(t >= BOUND for t in took), BOUND)
                  if max(took) >= BOUND else ""))
