"""tools/ibres-nsswitch on temporary files: where "ib" goes, byte-exact round
trips, idempotence, atomic replacement with the same mode, and refusals."""
import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "ibres-nsswitch")

DEBIAN = b"""# /etc/nsswitch.conf
#
# Example configuration of GNU Name Service Switch functionality.

passwd:         files systemd
group:          files systemd
shadow:         files systemd
gshadow:        files systemd

hosts:          files dns
networks:       files

protocols:      db files
services:       db files
ethers:         db files
rpc:            db files

netgroup:       nis
"""


def run(*args, check=None):
    p = subprocess.run([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


def make(tmp_path, content, name="nsswitch.conf", mode=0o644):
    path = tmp_path / name
    path.write_bytes(content)
    os.chmod(str(path), mode)
    return path


def hosts_line(data):
    return [line for line in data.split(b"\n") if line.lstrip().startswith(b"hosts")][0]


# (hosts line before, after enable). Each must also round-trip with disable.
PLACEMENT = [
    (b"hosts:          files dns", b"hosts:          files ib dns"),
    (b"hosts: files", b"hosts: files ib"),
    (b"hosts:files dns", b"hosts:files ib dns"),
    (b"hosts: dns", b"hosts: ib dns"),
    (b"hosts: files myhostname", b"hosts: files myhostname ib"),
    # before dns, after the action that belongs to the service before it
    (b"hosts: files mdns4_minimal [NOTFOUND=return] dns myhostname",
     b"hosts: files mdns4_minimal [NOTFOUND=return] ib dns myhostname"),
    # systemd-resolved's [!UNAVAIL=return] would hide an ib after it
    (b"hosts: files myhostname resolve [!UNAVAIL=return] dns",
     b"hosts: files myhostname ib resolve [!UNAVAIL=return] dns"),
    # after files, always, even when dns comes first
    (b"hosts: dns files", b"hosts: dns files ib"),
    (b"hosts: dns files nis", b"hosts: dns files ib nis"),
    # trailing actions, comments, tabs and odd spacing stay as they were
    (b"hosts: files [NOTFOUND=continue]", b"hosts: files [NOTFOUND=continue] ib"),
    (b"  hosts :\tfiles [ NOTFOUND = return ]   # a comment  ",
     b"  hosts :\tfiles [ NOTFOUND = return ] ib   # a comment  "),
    (b"hosts:\tfiles\tdns\t# keep\t", b"hosts:\tfiles\tib dns\t# keep\t"),
    (b"hosts files dns", b"hosts files ib dns"),
    (b"hosts: files dns\r", b"hosts: files ib dns\r"),
    (b"hosts: files \xe9t\xe9 dns", b"hosts: files \xe9t\xe9 ib dns"),
]


@pytest.mark.parametrize("before,after", PLACEMENT)
def test_enable_places_ib_and_disable_restores(tmp_path, before, after):
    original = DEBIAN.replace(b"hosts:          files dns", before)
    path = make(tmp_path, original)
    run("enable", "--file", str(path), check=0)
    data = path.read_bytes()
    assert hosts_line(data) == after
    assert data == original.replace(before, after)
    run("status", "--file", str(path), check=0)
    run("disable", "--file", str(path), check=0)
    assert path.read_bytes() == original
    run("status", "--file", str(path), check=3)


def test_round_trip_keeps_every_other_byte(tmp_path):
    original = DEBIAN
    path = make(tmp_path, original)
    run("enable", "-f", str(path), check=0)
    enabled = path.read_bytes()
    # exactly three bytes were added, all on the hosts line
    assert len(enabled) == len(original) + 3
    assert enabled.replace(b"files ib dns", b"files dns") == original
    run("disable", "-f", str(path), check=0)
    assert path.read_bytes() == original


@pytest.mark.parametrize("content", [
    b"hosts: files dns",                  # no final newline
    b"hosts: files dns\n\n\n",            # blank lines at the end
    b"\n# c\r\nhosts: files dns\r\npasswd: files\r\n",  # CRLF
    b"#hosts: dns\nhosts: files dns\n# hosts: nis\n",  # commented-out hosts lines
    b"hostsfoo: bar\nhosts: files dns\n",  # another database whose name starts with hosts
])
def test_round_trip_odd_files(tmp_path, content):
    path = make(tmp_path, content)
    run("enable", "-f", str(path), check=0)
    assert b"files ib dns" in path.read_bytes()
    run("disable", "-f", str(path), check=0)
    assert path.read_bytes() == content


def test_enable_is_idempotent_and_does_not_rewrite(tmp_path):
    path = make(tmp_path, DEBIAN)
    run("enable", "-f", str(path), check=0)
    once = path.read_bytes()
    ino = os.stat(str(path)).st_ino
    p = run("enable", "-f", str(path), check=0)
    assert b"already enabled" in p.stdout
    assert path.read_bytes() == once
    assert os.stat(str(path)).st_ino == ino  # not even replaced


def test_enable_keeps_an_ib_already_placed_by_hand(tmp_path):
    content = b"hosts: ib files dns\n"
    path = make(tmp_path, content)
    run("enable", "-f", str(path), check=0)
    assert path.read_bytes() == content


def test_disable_is_idempotent(tmp_path):
    path = make(tmp_path, DEBIAN)
    p = run("disable", "-f", str(path), check=0)
    assert b"already disabled" in p.stdout
    assert path.read_bytes() == DEBIAN


@pytest.mark.parametrize("line,after", [
    (b"hosts: ib files dns", b"hosts: files dns"),
    (b"hosts: files dns ib", b"hosts: files dns"),
    (b"hosts: files ib  dns", b"hosts: files dns"),
    (b"hosts: files ib dns ib", b"hosts: files dns"),
    (b"hosts: files ib # x", b"hosts: files # x"),
])
def test_disable_removes_every_bare_ib(tmp_path, line, after):
    path = make(tmp_path, line + b"\n")
    run("disable", "-f", str(path), check=0)
    assert path.read_bytes() == after + b"\n"


def test_dry_run_changes_nothing(tmp_path):
    path = make(tmp_path, DEBIAN)
    p = run("enable", "--dry-run", "-f", str(path), check=0)
    assert p.stdout.strip() == b"hosts:          files ib dns"
    assert path.read_bytes() == DEBIAN


def test_atomic_replace_keeps_mode_and_leaves_no_temp_file(tmp_path):
    path = make(tmp_path, DEBIAN, mode=0o640)
    ino = os.stat(str(path)).st_ino
    run("enable", "-f", str(path), check=0)
    st = os.stat(str(path))
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert st.st_ino != ino  # a new file renamed over the old one
    assert sorted(os.listdir(str(tmp_path))) == ["nsswitch.conf"]


def test_symlink_is_followed_and_kept(tmp_path):
    target = make(tmp_path, DEBIAN, name="real.conf")
    link = tmp_path / "nsswitch.conf"
    os.symlink("real.conf", str(link))
    run("enable", "-f", str(link), check=0)
    assert os.path.islink(str(link))
    assert b"files ib dns" in target.read_bytes()


REFUSED = [
    (b"passwd: files\ngroup: files\n", b"no hosts line"),
    (b"hosts: files\nhosts: files dns\n", b"2 hosts lines"),
    (b"hosts: files\n  hosts: dns\n", b"2 hosts lines"),
    (b"hosts: files \\\n  dns\n", b"backslash"),
    (b"hosts: files dns\\\n", b"backslash"),
    (b"passwd: files \\\nhosts: files dns\n", b"backslash"),
    (b"hosts: files ib [NOTFOUND=return] dns\n", b"ib with an action"),
    (b"hosts: files ib[!UNAVAIL=return]\n", b"ib with an action"),
    (b"hosts: files [NOTFOUND=return dns\n", b"unbalanced"),
    (b"hosts: [NOTFOUND=return] files\n", b"follows no service"),
]


@pytest.mark.parametrize("command", ["enable", "disable", "status"])
@pytest.mark.parametrize("content,why", REFUSED)
def test_refuses_files_it_does_not_understand(tmp_path, command, content, why):
    path = make(tmp_path, content)
    p = run(command, "-f", str(path), check=1)
    assert why in p.stderr, p.stderr
    assert p.stdout == b""
    assert path.read_bytes() == content


def test_refuses_empty_hosts_line_on_enable(tmp_path):
    content = b"hosts:   # nothing\n"
    path = make(tmp_path, content)
    p = run("enable", "-f", str(path), check=1)
    assert b"names no service" in p.stderr
    assert path.read_bytes() == content


def test_refuses_to_leave_hosts_empty(tmp_path):
    content = b"hosts: ib\n"
    path = make(tmp_path, content)
    p = run("disable", "-f", str(path), check=1)
    assert b"only service" in p.stderr
    assert path.read_bytes() == content


def test_missing_file_and_directory(tmp_path):
    p = run("enable", "-f", str(tmp_path / "nope"), check=1)
    assert b"No such file" in p.stderr
    p = run("enable", "-f", str(tmp_path), check=1)
    assert b"not a regular file" in p.stderr


def test_usage_errors(tmp_path):
    run(check=2)
    run("frobnicate", check=2)
    p = run("--help", check=0)
    assert b"enable" in p.stdout and b"--file" in p.stdout


def test_warns_when_an_action_hides_ib(tmp_path):
    path = make(tmp_path, b"hosts: files [NOTFOUND=return] dns\n")
    p = run("enable", "-f", str(path), check=0)
    assert b"warning" in p.stderr and b"NOTFOUND=return" in p.stderr
    # mdns4_minimal says NOTFOUND only for .local names: no warning
    path = make(tmp_path, b"hosts: files mdns4_minimal [NOTFOUND=return] dns\n")
    p = run("enable", "-f", str(path), check=0)
    assert p.stderr == b""


def test_quiet_status(tmp_path):
    path = make(tmp_path, DEBIAN)
    p = run("status", "-q", "-f", str(path), check=3)
    assert p.stdout == b"" and p.stderr == b""


def test_default_file_is_etc_nsswitch_conf():
    p = run("--help", check=0)
    assert b"/etc/nsswitch.conf" in p.stdout
