"""`ibresctl stats --format prometheus` against a real ibresd: the output
passes `promtool check metrics`, every statistic the daemon reports is
described (typed, with help), counters end in _total, values match the JSON
form; the example textfile unit (conf/systemd/ibresd-metrics.service) writes
its file atomically and keeps the old one when the daemon is down; and the
bash completion of ibresctl completes commands, options and files."""
import json
import os
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import IBRESCTL, run
from nss_helpers import client_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT = os.path.join(ROOT, "conf/systemd/ibresd-metrics.service")
COMPLETION = os.path.join(ROOT, "conf/bash-completion/ibresctl")
needs_promtool = pytest.mark.skipif(not shutil.which("promtool"),
                                    reason="promtool (package prometheus) missing")


def prom(daemon):
    r = run([IBRESCTL, "stats", "--format", "prometheus"], env=client_env(daemon))
    assert r.returncode == 0, r.stderr
    return r.stdout


def families(text):
    """{name: (type, help, value)} from the exposition text, checking its shape."""
    out, helps, types = {}, {}, {}
    for line in text.splitlines():
        m = re.match(r"# HELP (\w+) (.+)$", line)
        if m:
            helps[m.group(1)] = m.group(2)
            continue
        m = re.match(r"# TYPE (\w+) (counter|gauge|untyped)$", line)
        if m:
            types[m.group(1)] = m.group(2)
            continue
        m = re.match(r"(\w+) (\d+)$", line)
        assert m, "not a sample line: %r" % line
        name = m.group(1)
        assert name in helps and name in types, "sample before its HELP/TYPE: %s" % name
        assert name not in out, "family twice: %s" % name
        out[name] = (types[name], helps[name], int(m.group(2)))
    return out


@needs_promtool
def test_promtool_accepts_the_output(single):
    text = prom(single)
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert p.returncode == 0 and p.stdout == b"", p.stdout.decode()


def test_promtool_would_catch_a_bad_name():
    # the check above can fail: a counter without _total is a lint error
    if not shutil.which("promtool"):
        pytest.skip("promtool missing")
    bad = "# HELP x_requests requests.\n# TYPE x_requests counter\nx_requests 1\n"
    p = subprocess.run(["promtool", "check", "metrics"], input=bad.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert p.returncode != 0


def test_every_statistic_is_described_and_typed(single):
    fams = families(prom(single))
    r = run([IBRESCTL, "--json", "stats"], env=client_env(single))
    counters = json.loads(r.stdout)["counters"]
    assert len(fams) == len(counters)
    untyped = [n for n, (t, _, _) in fams.items() if t == "untyped"]
    assert not untyped, "describe these in tools/metrics.c: %s" % untyped
    for name, (kind, help_text, _) in fams.items():
        assert name.startswith("ibresd_")
        assert name.endswith("_total") == (kind == "counter"), name
        assert help_text and "not described" not in help_text
    # units in names, gauges where the value goes both ways
    assert fams["ibresd_uptime_seconds"][0] == "gauge"
    assert fams["ibresd_cache_size_bytes"][0] == "gauge"
    assert fams["ibresd_clients_connected"][0] == "gauge"
    assert fams["ibresd_cache_hits_total"][0] == "counter"
    # the ib transport's receive queues: overruns are counters, the size a gauge
    # (an ip-only daemon: no buffers, nothing dropped)
    assert fams["ibresd_fabric_rx_queue_empty_total"][0] == "counter"
    assert fams["ibresd_fabric_rx_hca_out_of_buffer_total"][0] == "counter"
    assert fams["ibresd_fabric_rx_queue_slots"][0] == "gauge"
    assert counters["fabric_rx_queue_slots"] == counters["fabric_rx_queue_empty"] == 0
    # the same numbers as the JSON form (those that a request does not move)
    assert fams["ibresd_cache_hosts"][2] == counters["cache_hosts"]
    assert fams["ibresd_cache_size_bytes"][2] == counters["cache_bytes"]
    assert fams["ibresd_fabric_tx_multicast_messages_total"][2] == counters["fabric_tx_mcast"]


@pytest.mark.parametrize("args", [["--format", "prometheus", "host", "x"],
                                  ["--format", "yaml", "stats"], ["-f"]])
def test_format_usage_errors(args, tmp_path):
    r = run([IBRESCTL] + args, env=client_env(socket_path=str(tmp_path / "none.sock")))
    assert r.returncode == 2 and r.stderr


def test_format_json_is_json(single):
    r = run([IBRESCTL, "stats", "--format", "json"], env=client_env(single))
    assert r.returncode == 0 and "requests" in json.loads(r.stdout)["counters"]


def unit_command():
    """The unit's ExecStart as argv, with systemd's $$ unescaped and our ibresctl."""
    with open(UNIT) as f:
        line = [x for x in f.read().splitlines() if x.startswith("ExecStart=")][0]
    argv = shlex.split(line[len("ExecStart="):])
    argv = [a.replace("$$", "$").replace("/usr/bin/ibresctl", IBRESCTL) for a in argv]
    assert argv[0] == "/bin/sh"
    return argv


@needs_promtool
def test_textfile_unit_writes_atomically_and_keeps_old_file(single, tmp_path):
    out = tmp_path / "textfile"
    out.mkdir()
    env = dict(client_env(single), TEXTFILE_DIR=str(out))
    p = subprocess.run(unit_command(), env=env, timeout=60)
    assert p.returncode == 0
    assert sorted(os.listdir(out)) == ["ibresd.prom"]
    assert os.stat(out / "ibresd.prom").st_mode & 0o777 == 0o644
    text = (out / "ibresd.prom").read_text()
    assert "ibresd_requests_total" in text
    assert subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                          timeout=60).returncode == 0
    # daemon gone: the unit fails, the last good file stays, no temporary left
    env["IBRES_SOCKET"] = str(tmp_path / "none.sock")
    p = subprocess.run(unit_command(), env=env, timeout=60, stderr=subprocess.PIPE)
    assert p.returncode != 0
    assert sorted(os.listdir(out)) == ["ibresd.prom"]
    assert (out / "ibresd.prom").read_text() == text


def complete(words, cwd=ROOT):
    """COMPREPLY of _ibresctl for the command line @words (the last is completed)."""
    script = ('source %s || exit 9; complete -p ibresctl || exit 8; COMP_WORDS=(%s); '
              'COMP_CWORD=%d; _ibresctl; printf "%%s\\n" "${COMPREPLY[@]}"'
              % (shlex.quote(COMPLETION), " ".join(shlex.quote(w) for w in words),
                 len(words) - 1))
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    lines = p.stdout.decode().splitlines()
    assert lines[0] == "complete -F _ibresctl ibresctl"
    return sorted(x for x in lines[1:] if x)


def test_bash_completion(tmp_path):
    assert complete(["ibresctl", ""]) == sorted(
        ["resolve", "host", "endpoints", "cache", "stats", "config"])
    assert complete(["ibresctl", "st"]) == ["stats"]
    assert complete(["ibresctl", "--js"]) == ["--json"]
    assert "--format" in complete(["ibresctl", "--"])
    assert complete(["ibresctl", "stats", "--format", ""]) == ["json", "prometheus", "text"]
    assert complete(["ibresctl", "-s", "/x", "cache", ""]) == ["flush", "list"]
    assert complete(["ibresctl", "config", ""]) == ["check", "generate", "import-ibacm"]
    (tmp_path / "site.conf").write_text("")
    (tmp_path / "etcdir").mkdir()
    assert complete(["ibresctl", "config", "check", "si"], cwd=tmp_path) == ["site.conf"]
    assert complete(["ibresctl", "config", "import-ibacm", ""], cwd=tmp_path) == ["etcdir"]
    assert complete(["ibresctl", "--socket", "si"], cwd=tmp_path) == ["site.conf"]
    assert complete(["ibresctl", "stats", ""]) == []
