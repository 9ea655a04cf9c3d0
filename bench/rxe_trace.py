#!/usr/bin/python3
"""Runs inside the test VM (bench/rxe-bench --trace starts it with test/vm/run
--nodes 2 --daemons): an ftrace timeline of cold resolutions between rxe1 and
rxe2 and of ibv_ud_pingpong -e between the same devices, cut into phases.
Prints one JSON object on stdout. VM only: it cuts at rxe's kernel functions
and uses the VM's helpers (vmlib).

The kernel records, on its global clock: the daemons' system calls and a few
functions of rxe's send path (function tracer). bench/resolve_latency.c
writes a marker before and after each timed RESOLVE. A cold resolution is
cut at: node1's rxe_post_send (the REQUEST), node2's rxe_post_send (the
REPLY) and node1's sendto of the answer returning; and at each daemon's last
wake-up (epoll_wait returning events) before each of those, the one that
caused it. Phases: A, client to node1's wake-up; B, node1's work to the
REQUEST's post_send; C, the REQUEST over rxe (multicast) to node2's wake-up;
D, node2's work to the REPLY's post_send; E, the REPLY over rxe (unicast) to
node1's wake-up; F, node1's work to its answer's sendto; G, the answer to
the client's end marker. A resolution without every cut is counted as
dropped."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "vm", "guest"))

import vmlib  # noqa: E402

T = "/sys/kernel/tracing"
FUNCTIONS = ("rxe_post_send", "rxe_requester", "rxe_xmit_packet", "rxe_rcv", "veth_xmit")
SYS_WRITE, SYS_SENDTO, SYS_EPOLL_WAIT = 1, 44, 232
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(.*)$")
PHASES = ("A", "B", "C", "D", "E", "F", "G")


def put(path, value):
    with open(os.path.join(T, path), "w") as f:
        f.write(value)


def trace_on(syscall_pids):
    """Trace FUNCTIONS, and the system calls of @syscall_pids (none if empty)."""
    if not os.path.ismount(T):
        subprocess.run(["mount", "-t", "tracefs", "nodev", T], check=True)
    put("tracing_on", "0")
    put("current_tracer", "nop")
    put("trace", "")
    put("trace_clock", "global")  # one clock for every CPU
    put("buffer_size_kb", "16384")
    put("set_ftrace_filter", "\n".join(FUNCTIONS))
    put("current_tracer", "function")
    for e in ("sys_enter", "sys_exit"):
        put("events/raw_syscalls/%s/enable" % e, "1" if syscall_pids else "0")
    if syscall_pids:
        put("events/raw_syscalls/filter",
            " || ".join("common_pid == %d" % p for p in syscall_pids))
    put("tracing_on", "1")


def trace_off():
    put("tracing_on", "0")
    with open(os.path.join(T, "trace")) as f:
        text = f.read()
    put("trace", "")
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append((float(m.group(4)), int(m.group(2)), int(m.group(3)), m.group(5)))
    return out


def sys_exit(what, nr):
    """The return value if @what is system call @nr's exit, else None."""
    prefix = "sys_exit: NR %d = " % nr
    return int(what[len(prefix):].split()[0]) if what.startswith(prefix) else None


def marked_runs(ev, tag):
    """(start, end, events between) of each resolution marked @tag."""
    runs, cur = [], None
    for t, pid, cpu, what in ev:
        if "MARK %s " % tag in what:
            if what.rstrip().endswith("start"):
                cur = (t, [])
            elif cur:
                runs.append((cur[0], t, cur[1]))
                cur = None
        elif cur:
            cur[1].append((t, pid, what))
    return runs


def cold_phases(ev, node1, node2):
    """Per cold resolution, phases A..G in µs; and how many were dropped."""
    out = {k: [] for k in PHASES + ("total",)}
    dropped = 0
    for start, end, seq in marked_runs(ev, "cold"):
        def first(after, pid, pred):
            return next((t for t, p, w in seq if t >= after and p == pid and pred(w)), None)

        def last_wake(pid, lo, hi):
            wakes = [t for t, p, w in seq if p == pid and lo <= t <= hi and
                     (sys_exit(w, SYS_EPOLL_WAIT) or 0) > 0]
            return wakes[-1] if wakes else None

        req = first(start, node1, lambda w: w.startswith("rxe_post_send"))
        rep = req and first(req, node2, lambda w: w.startswith("rxe_post_send"))
        ans = rep and first(rep, node1, lambda w: sys_exit(w, SYS_SENDTO) is not None)
        cuts = [start, req and last_wake(node1, start, req), req,
                rep and last_wake(node2, req, rep), rep,
                ans and last_wake(node1, rep, ans), ans, end]
        if None in cuts:
            dropped += 1
            continue
        for k, lo, hi in zip(PHASES, cuts, cuts[1:]):
            out[k].append((hi - lo) * 1e6)
        out["total"].append((end - start) * 1e6)
    return out, dropped


def send_path(ev, pid):
    """In @pid's post_sends (rxe_post_send to its write() returning): µs to
    the packet's veth_xmit, and whether an rxe_rcv came first (a copy looped
    back to the sender's own device before the packet left)."""
    to_wire, looped, since, rcv = [], 0, None, False
    for t, p, cpu, what in ev:
        if p != pid:
            continue
        if what.startswith("rxe_post_send"):
            since, rcv = t, False
        elif since is None:
            continue
        elif what.startswith("rxe_rcv"):
            rcv = True
        elif what.startswith("veth_xmit"):
            to_wire.append((t - since) * 1e6)
            looped += rcv
            since = None
    return to_wire, looped


def requester_times(ev, pid):
    """µs from rxe_requester to rxe_xmit_packet in @pid's sends: the same kernel
    code in every sender, the daemons' and pingpong's."""
    out, since = [], {}
    for t, p, cpu, what in ev:
        if p != pid:
            continue
        if what.startswith("rxe_requester"):
            since[cpu] = t
        elif what.startswith("rxe_xmit_packet") and cpu in since:
            out.append((t - since.pop(cpu)) * 1e6)
    return out


def pingpong_traced(iters):
    """ibv_ud_pingpong -e between rxe2 and rxe1 under the tracer; the events.
    The server listens (TCP, for the QP numbers) after a while on a loaded
    machine: the client tries again, as bench/rxe_latency.py's does."""
    opts = ["-g", "1", "-n", str(iters), "-e"]
    srv = subprocess.Popen(["timeout", "120", "ibv_ud_pingpong", "-d", "rxe2"] + opts,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        trace_on([])
        for _ in range(20):
            time.sleep(0.5)
            cli = subprocess.run(["timeout", "60", "ibv_ud_pingpong", "-d", "rxe1"] + opts +
                                 [vmlib.nodes()["node2"]["ipv4"]], capture_output=True,
                                 text=True)
            if "usec/iter" in cli.stdout or srv.poll() is not None:
                break
        ev = trace_off()
    finally:
        srv.kill()
        srv.wait()
    if cli.returncode or "usec/iter" not in cli.stdout:
        raise RuntimeError("ibv_ud_pingpong: %s%s" % (cli.stdout, cli.stderr))
    return ev


def summary(xs):
    if not xs:
        raise RuntimeError("rxe_trace: no samples to summarize")
    return dict(n=len(xs), p50=statistics.median(xs), min=min(xs), max=max(xs))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--client", required=True, help="bench/resolve_latency.c, built")
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--iters", type=int, default=40, help="pingpong round trips traced")
    p.add_argument("--gap-us", type=int, default=5000)
    args = p.parse_args()

    vmlib.stop_daemon("node1")
    vmlib.start_daemon("node1", extra_resolve=("announce_interval = 0", "settle_time = 10m"))
    node1, node2 = vmlib.daemon_pid("node1"), vmlib.daemon_pid("node2")
    sock = vmlib.nodes()["node1"]["socket"]
    resolve = [sock, "node1", "node2"]
    budget = lambda n: 60 + n * (3 * args.gap_us / 1e6 + 1)  # noqa: E731
    vmlib.run([args.client] + resolve + ["20", str(args.gap_us)], timeout=budget(20),
              check=True)  # warm-up, untraced

    trace_on([node1, node2])
    run = vmlib.run([args.client, "-m", os.path.join(T, "trace_marker")] + resolve +
                    [str(args.samples), str(args.gap_us)], timeout=budget(args.samples))
    ev = trace_off()
    if run.returncode:
        raise RuntimeError("resolve_latency: %s" % run.stderr)
    fails = json.loads(run.stdout)["fails"]
    phases, dropped = cold_phases(ev, node1, node2)
    req_wire, req_looped = send_path(ev, node1)
    rep_wire, rep_looped = send_path(ev, node2)

    pp = pingpong_traced(args.iters)
    posts = {}
    for t, pid, cpu, what in pp:
        if what.startswith("rxe_post_send"):
            posts.setdefault(pid, []).append(t)
    ends = sorted(posts, key=lambda k: -len(posts[k]))[:2]
    rtt = [(y - x) * 1e6 for pid in ends for x, y in zip(posts[pid], posts[pid][1:])]
    print(json.dumps(dict(
        phases={k: summary(v) for k, v in phases.items()},
        resolutions=dict(cut=len(phases["total"]), dropped=dropped, failed=fails),
        request_to_wire=summary(req_wire), request_looped_back=req_looped,
        reply_to_wire=summary(rep_wire), reply_looped_back=rep_looped,
        pingpong_rtt=summary(rtt),
        requester_daemon=summary(requester_times(ev, node2)),
        requester_pingpong=summary([x for pid in ends for x in requester_times(pp, pid)]))))


if __name__ == "__main__":
    main()
