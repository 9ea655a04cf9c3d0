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
    """(false completes during the loss, after it, seconds to all right,
    the share of the verdicts read during the loss that said complete)."""
    c = cluster_factory(NODES, "--loss", LOSS, "--ibresd", ibresd, *PRODUCT, name=name)
    try:
        c.wait_settled(SETTLE, complete=0)
        during = set()
        reads = completes = 0
        end = time.monotonic() + loss_s
        while time.monotonic() < end:
            seen = knowledge(c)
            during |= {k for k, (complete, lacks) in seen.items() if complete and lacks}
            reads += len(seen)
            completes += sum(bool(complete) for complete, _ in seen.values())
        c.loss(0)
        lifted = time.monotonic()
        after = set()
        while time.monotonic() - lifted < BOUND:
            seen = knowledge(c)
            after |= {k for k, (complete, lacks) in seen.items() if complete and lacks}
            if all(complete and not lacks for complete, lacks in seen.values()):
                break
        took = time.monotonic() - lifted
        logs = os.environ.get("LOSSY_BOOT_LOGS")
        if logs and (during or after):
            # the daemons' own account of a false complete, to read later
            os.makedirs(logs, exist_ok=True)
            with open(os.path.join(logs, name + ".log"), "w") as f:
                f.write("during %s after %s\n%s" % (sorted(during), sorted(after), c.logs()))
        return during, after, took, completes / max(reads, 1)
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
            during, after, took, share = one_boot(cluster_factory, os.path.join(b, "ibresd"),
                                                  "lb%d_%d" % (run, i), loss_s)
            res[b].append((during, after, took, share))
            print("run %d %s: false complete during the loss %s, after it %s; "
                  "all right %.1f s after the lift; complete in %.1f %% of the verdicts "
                  "during the loss" % (run, b, sorted(during) or "-", sorted(after) or "-",
                                       took, 100 * share))
    for b in builds:
        r = res[b]
        took = [t for _, _, t, _ in r]
        print("%s: %d runs; with a false complete: %d during the loss, %d after it; "
              "all right after the lift: median %.1f s, max %.1f s; complete during the loss: "
              "%.1f %% of the verdicts%s" % (
                  b, len(r), sum(bool(d) for d, _, _, _ in r), sum(bool(a) for _, a, _, _ in r),
                  statistics.median(took), max(took),
                  100 * statistics.mean(s for _, _, _, s in r),
                  " (%d not within %.0f s)" % (sum(t >= BOUND for t in took), BOUND)
                  if max(took) >= BOUND else ""))
