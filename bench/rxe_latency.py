#!/usr/bin/python3
"""Runs inside the test VM (bench/rxe-bench starts it with test/vm/run
--nodes 2 --daemons): resolution latency over the ib transport's UD QPs
between rxe1 and rxe2, next to ibv_ud_pingpong's round trip between the same
two devices, in interleaved rounds. Prints one JSON object on stdout.

node1's daemon runs without announcements (and a long settle time), so that
after a flush of its learned entries a resolution of node2 is a multicast
REQUEST from rxe1's UD QP and a unicast REPLY from rxe2's: the cold path.
Times are taken at node1's socket, from sending a RESOLVE (by name, NODELAY
off) to the whole answer, by bench/resolve_latency.c (--client), or without
it by a Python client, which under TCG adds hundreds of microseconds to
every sample. With --echo, the same C client also times a server that does
no work (bench/echo_server.c): the floor of any answer through a socket."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "vm", "guest"))
sys.path.insert(0, os.path.join(ROOT, "test", "integration"))

import vmlib  # noqa: E402
from fabric_util import Client, cache_flush, parse_hdr, resolve_request, stats  # noqa: E402

ROUNDS = 5


# --pin: the vCPU of each process. node1's daemon and pingpong's rxe1 end
# share vCPU 0, node2's daemon and pingpong's rxe2 end vCPU 1, the client
# vCPU 2, as two real nodes would not share their CPUs.
PIN = {"node1": 0, "node2": 1, "client": 2}
pinned = False


def on_cpu(who):
    return ["taskset", "-c", str(PIN[who])] if pinned else []


def pingpong(iters, events=False):
    """ibv_ud_pingpong between rxe2 (server) and rxe1: µs per round trip.
    @events: both sides sleep on their completion channel (-e), as a daemon
    does, instead of spinning on the CQ."""
    opts = ["-g", "1", "-n", str(iters)] + (["-e"] if events else [])
    srv = subprocess.Popen(on_cpu("node2") + ["ibv_ud_pingpong", "-d", "rxe2"] + opts,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # the server listens (TCP, for the QP numbers) after a while on a
        # loaded machine: the client tries again
        for _ in range(20):
            time.sleep(0.5)
            cli = subprocess.run(on_cpu("node1") + ["ibv_ud_pingpong", "-d", "rxe1"] + opts +
                                 [vmlib.nodes()["node2"]["ipv4"]], capture_output=True,
                                 text=True, timeout=120)
            if "usec/iter" in cli.stdout or srv.poll() is not None:
                break
        srv.communicate(timeout=30)
    finally:
        srv.kill()
        srv.wait()
    m = re.search(r"([\d.]+) usec/iter", cli.stdout)
    if cli.returncode or not m:
        raise RuntimeError("ibv_ud_pingpong: %s%s" % (cli.stdout, cli.stderr))
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--iters", type=int, default=2000, help="pingpong round trips per round")
    p.add_argument("--gap-us", type=int, default=1000)
    p.add_argument("--client", help="bench/resolve_latency.c, built")
    p.add_argument("--echo", help="bench/echo_server.c, built: with --client, also time "
                   "the zero-work floor of a Unix-socket round trip")
    p.add_argument("--pin", action="store_true", help="one vCPU each for node1, node2 and "
                   "the client (needs 3 vCPUs)")
    a = p.parse_args()
    global pinned
    pinned = a.pin
    gap = a.gap_us / 1e6

    vmlib.stop_daemon("node1")
    vmlib.start_daemon("node1", extra_resolve=("announce_interval = 0", "settle_time = 10m"))
    sock = vmlib.nodes()["node1"]["socket"]
    if pinned:
        for node in ("node1", "node2"):
            vmlib.run(["taskset", "-a", "-pc", str(PIN[node]), str(vmlib.daemon_pid(node))],
                      check=True)
    cl = Client(sock, timeout=30)
    req = resolve_request("node2", "node1")

    def timed():
        time.sleep(gap)
        t0 = time.perf_counter()
        ans = cl.request(req)
        return time.perf_counter() - t0, ans

    def ok(ans):
        return ans is not None and len(ans) >= 16 and parse_hdr(ans)["status"] == 0

    def c_client(n, path=sock, opts=()):
        cmd = [a.client, *opts, path, "node1", "node2", str(n), str(a.gap_us)]
        # each sample: two requests and three pauses; a lost answer ends the
        # client after its own 10 s bound
        out = subprocess.run(on_cpu("client") + cmd, capture_output=True, text=True,
                             timeout=60 + n * (3 * gap + 1))
        if out.returncode:
            raise RuntimeError("resolve_latency: %s" % out.stderr)
        got = json.loads(out.stdout)
        return [t / 1e6 for t in got["cold"]], [t / 1e6 for t in got["hot"]], got["fails"]

    r = dict(cold=[], hot=[], fails=0, pingpong_us=[], pingpong_events_us=[], gap_us=a.gap_us,
             client="c" if a.client else "python", echo=[], echo_fails=0, pinned=pinned)
    echo, echo_sock = None, "/tmp/echo.sock"
    if a.client and a.echo:
        echo = subprocess.Popen(on_cpu("node1") + [a.echo, echo_sock])
    try:
        if echo:
            vmlib.wait_until(lambda: os.path.exists(echo_sock), 10, "echo_server's socket")
        rounds(a, r, c_client, timed, ok, sock, echo and echo_sock)
    finally:
        if echo:
            echo.kill()
            echo.wait()
    cl.close()
    st = stats(sock)
    r["requests"] = st["fabric_requests_sent"]
    r["retries"] = st.get("fabric_query_retries", 0)
    r["hw"] = {d: vmlib.hw_counters(d) for d in ("rxe1", "rxe2")}
    print(json.dumps(r))


def rounds(a, r, c_client, timed, ok, sock, echo_sock):
    """ROUNDS interleaved rounds (after a warm-up round) into @r."""
    for rnd in range(ROUNDS + 1):
        per = n = 10 if rnd == 0 else max(1, a.samples // ROUNDS)  # round 0: warm-up
        cold, hot = [], []
        if a.client:
            cold, hot, fails = c_client(n)
            r["fails"] += fails if rnd else 0
            n = 0
        for _ in range(n):
            cache_flush(sock)
            dt1, a1 = timed()
            dt2, a2 = timed()
            if not ok(a1) or not ok(a2):
                r["fails"] += 1
                continue
            cold.append(dt1)
            hot.append(dt2)
        floor, _, echo_fails = c_client(per, echo_sock, ("-n",)) if echo_sock else ([], [], 0)
        pp = pingpong(a.iters if rnd else 100)
        ppe = pingpong(a.iters if rnd else 100, events=True)
        if rnd == 0:
            continue
        r["cold"] += cold
        r["hot"] += hot
        r["echo"] += floor
        r["echo_fails"] += echo_fails
        r["pingpong_us"].append(pp)
        r["pingpong_events_us"].append(ppe)


if __name__ == "__main__":
    main()
