#!/usr/bin/python3
"""Runs inside the test VM (bench/rxe-trace starts it with test/vm/run --nodes 2
--daemons): an ftrace timeline of cold resolutions between rxe1 and rxe2 and
of ibv_ud_pingpong -e between the same devices, cut into phases. Prints one
JSON object on stdout.

The kernel records, with one clock: the daemons' system calls, every process
switch and wake-up, softirqs, the network devices' queue and receive events
and a few rxe and uverbs functions (function tracer). bench/resolve_latency.c
writes a marker before and after each timed RESOLVE. A cold resolution is
then cut at: node1's epoll_wait returning with the RESOLVE (A: client to
daemon), node1's post_send of the REQUEST (B: node1's work), node2's
epoll_wait returning (C: the REQUEST over rxe, multicast), node2's post_send
of the REPLY (D: node2's work), node1's epoll_wait returning (E: the REPLY
over rxe, unicast), node1's sendto of the answer returning (F: node1's work)
and the end marker (G: the answer to the client)."""
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
FUNCTIONS = ("rxe_post_send", "rxe_requester", "rxe_xmit_packet", "rxe_rcv", "rxe_responder",
             "rxe_completer", "rxe_cq_post", "ib_uverbs_comp_handler", "ib_uverbs_write")
EVENTS = ("sched/sched_switch", "sched/sched_wakeup", "net/net_dev_queue", "net/netif_rx",
          "net/netif_receive_skb", "irq/softirq_entry", "irq/softirq_exit",
          "raw_syscalls/sys_enter", "raw_syscalls/sys_exit")
SYS_SENDTO, SYS_EPOLL_WAIT = 44, 232
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(.*)$")
PHASES = ("A", "B", "C", "D", "E", "F", "G")


def put(path, value):
    with open(os.path.join(T, path), "w") as f:
        f.write(value)


def trace_on(syscall_pids):
    if not os.path.ismount(T):
        subprocess.run(["mount", "-t", "tracefs", "nodev", T], check=True)
    put("tracing_on", "0")
    put("current_tracer", "nop")
    put("trace", "")
    put("buffer_size_kb", "16384")
    put("set_ftrace_filter", "\n".join(FUNCTIONS))
    put("current_tracer", "function")
    for e in EVENTS:
        put("events/%s/enable" % e, "1")
    flt = " || ".join("common_pid == %d" % p for p in syscall_pids) if syscall_pids \
        else "common_pid > 0"
    put("events/raw_syscalls/filter", flt)
    put("tracing_on", "1")


def trace_off():
    put("tracing_on", "0")
    with open(os.path.join(T, "trace")) as f:
        text = f.read()
    put("trace", "")
    return events(text)


def events(text):
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append((float(m.group(4)), int(m.group(2)), int(m.group(3)), m.group(5)))
    return out


def is_sys(what, edge, nr):
    return what.startswith("sys_%s: NR %d " % (edge, nr))


def cold_phases(ev, node1, node2):
    """Per cold resolution, the times of phases A..G in µs."""
    out = {k: [] for k in PHASES + ("total",)}
    runs, cur = [], None
    for t, pid, cpu, what in ev:
        if "MARK cold" in what:
            if what.rstrip().endswith("start"):
                cur = (t, [])
            elif cur:
                runs.append((cur[0], t, cur[1]))
                cur = None
        elif cur:
            cur[1].append((t, pid, what))
    for start, end, seq in runs:
        def first(after, pid, pred):
            for t, p, w in seq:
                if t >= after and p == pid and pred(w):
                    return t
            return None
        cuts = [start]
        steps = ((node1, lambda w: is_sys(w, "exit", SYS_EPOLL_WAIT)),
                 (node1, lambda w: w.startswith("rxe_post_send")),
                 (node2, lambda w: is_sys(w, "exit", SYS_EPOLL_WAIT)),
                 (node2, lambda w: w.startswith("rxe_post_send")),
                 (node1, lambda w: is_sys(w, "exit", SYS_SENDTO)))
        for pid, pred in steps:
            t = first(cuts[-1], pid, pred)
            if t is None:
                break
            cuts.append(t)
        if len(cuts) != len(steps) + 1:
            continue
        # E ends at node1's last wake-up before its answer: the one the REPLY
        # caused (its own multicast REQUEST, looped back by rxe, wakes it too)
        wakes = [t for t, p, w in seq if p == node1 and cuts[4] <= t <= cuts[5] and
                 is_sys(w, "exit", SYS_EPOLL_WAIT)]
        if not wakes:
            continue
        cuts.insert(5, wakes[-1])
        cuts.append(end)
        for k, a, b in zip(PHASES, cuts, cuts[1:]):
            out[k].append((b - a) * 1e6)
        out["total"].append((end - start) * 1e6)
    return out


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
    """ibv_ud_pingpong -e between rxe2 and rxe1 under the tracer; the events."""
    opts = ["-g", "1", "-n", str(iters), "-e"]
    srv = subprocess.Popen(["timeout", "60", "ibv_ud_pingpong", "-d", "rxe2"] + opts,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        trace_on([])
        cli = subprocess.run(["timeout", "60", "ibv_ud_pingpong", "-d", "rxe1"] + opts +
                             [vmlib.nodes()["node2"]["ipv4"]], capture_output=True, text=True)
        ev = trace_off()
        srv.wait(timeout=70)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    if cli.returncode:
        raise RuntimeError("ibv_ud_pingpong: %s%s" % (cli.stdout, cli.stderr))
    return ev


def summary(xs):
    return dict(n=len(xs), p50=statistics.median(xs) if xs else None,
                min=min(xs) if xs else None, max=max(xs) if xs else None)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--client", required=True, help="bench/resolve_latency.c, built")
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--iters", type=int, default=40, help="pingpong round trips traced")
    a = p.parse_args()

    vmlib.stop_daemon("node1")
    vmlib.start_daemon("node1", extra_resolve=("announce_interval = 0", "settle_time = 10m"))
    node1, node2 = vmlib.daemon_pid("node1"), vmlib.daemon_pid("node2")
    sock = vmlib.nodes()["node1"]["socket"]
    resolve = [a.client, sock, "node1", "node2"]
    vmlib.run(resolve + ["20", "5000"], timeout=120, check=True)  # warm-up, untraced

    trace_on([node1, node2])
    run = vmlib.run([a.client, "-m", os.path.join(T, "trace_marker")] + resolve[1:] +
                    [str(a.samples), "5000"], timeout=120 + a.samples)
    ev = trace_off()
    if run.returncode:
        raise RuntimeError("resolve_latency: %s" % run.stderr)
    phases = cold_phases(ev, node1, node2)

    pp = pingpong_traced(a.iters)
    posts = {}
    for t, pid, cpu, what in pp:
        if what.startswith("rxe_post_send"):
            posts.setdefault(pid, []).append(t)
    ends = sorted(posts, key=lambda k: -len(posts[k]))[:2]
    rtt = [(b - a) * 1e6 for pid in ends for a, b in zip(posts[pid], posts[pid][1:])]
    print(json.dumps(dict(
        phases={k: summary(v) for k, v in phases.items()},
        pingpong_rtt=summary(rtt),
        requester_daemon=summary(requester_times(ev, node2)),
        requester_pingpong=summary([x for pid in ends for x in requester_times(pp, pid)]))))


if __name__ == "__main__":
    main()
