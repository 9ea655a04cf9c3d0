"""Man pages: every page passes `mandoc -Tlint -W warning` silently, and every
option a program's --help prints is documented in its page."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import IBRESCTL, IBRESD

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAN = os.path.join(ROOT, "man")
PAGES = sorted(glob.glob(os.path.join(MAN, "*.[1-8]")))

needs_mandoc = pytest.mark.skipif(not shutil.which("mandoc"), reason="mandoc missing")


@needs_mandoc
@pytest.mark.parametrize("page", PAGES, ids=[os.path.basename(p) for p in PAGES])
def test_mandoc_lint_is_silent(page):
    p = subprocess.run(["mandoc", "-Tlint", "-W", "warning", page], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    assert p.stdout == b"", p.stdout.decode()
    assert p.returncode == 0


def rendered(page):
    """The page as a reader sees it: plain text, no overstrike, no hyphenation
    at line ends."""
    if shutil.which("mandoc"):
        out = subprocess.run(["mandoc", "-Tascii", "-Owidth=200", page], stdout=subprocess.PIPE,
                             check=True, timeout=30).stdout.decode("ascii", "replace")
        out = re.sub(r".\x08", "", out)
    else:
        with open(page) as f:
            out = f.read().replace("\\-", "-").replace("\\&", "")
    return out


def help_options(cmd):
    """Short and long options in the option lines of `cmd --help`."""
    out = subprocess.run(cmd + ["--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=30).stdout.decode()
    opts = set()
    for line in out.splitlines():
        m = re.match(r"^\s{1,8}((?:-\w|--[\w-]+)(?:[ ,]+(?:-\w|--[\w-]+|[A-Z_]+|\{[^}]*\}))*)",
                     line)
        if not m:
            continue
        opts.update(re.findall(r"(?<![\w-])(--[\w][\w-]*|-\w)(?![\w-])", m.group(1)))
    return out, opts


def documented(text, opt):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), text) is not None


def check_options(cmd, page):
    out, opts = help_options(cmd)
    assert "--help" in opts, "no option parsed from:\n" + out
    text = rendered(page)
    missing = sorted(o for o in opts if not documented(text, o))
    assert not missing, "%s: options of --help not in the page: %s" % (
        os.path.basename(page), missing)


def test_ibresd_options_are_in_ibresd_8():
    exe = IBRESD
    if not os.access(exe, os.X_OK):
        pytest.skip("build/ibresd not built")
    out, opts = help_options([exe])
    # the options this test must at least find, so a change of --help's
    # layout cannot make it pass vacuously
    assert {"-c", "--config", "-s", "--socket", "-f", "--foreground", "-d", "--debug",
            "--check-config", "-h", "--help", "-V", "--version"} <= opts, opts
    check_options([exe], os.path.join(MAN, "ibresd.8"))


def test_ibresctl_options_are_in_ibresctl_1():
    exe = IBRESCTL
    page = os.path.join(MAN, "ibresctl.1")
    if not os.access(exe, os.X_OK) or not os.path.exists(page):
        pytest.skip("build/ibresctl or man/ibresctl.1 missing")
    check_options([exe], page)


def test_ibres_nsswitch_options_are_in_its_page():
    check_options([sys.executable, os.path.join(ROOT, "tools", "ibres-nsswitch")],
                  os.path.join(MAN, "ibres-nsswitch.8"))


@pytest.mark.skipif(not shutil.which("man"), reason="man missing")
def test_ibresd_8_renders_with_man():
    p = subprocess.run(["man", "-l", os.path.join(MAN, "ibresd.8")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(os.environ, MANPAGER="cat", PAGER="cat",
                                                        MANWIDTH="80"), timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    text = re.sub(r".\x08", "", p.stdout.decode("utf-8", "replace"))
    for section in ("NAME", "SYNOPSIS", "OPTIONS", "SIGNALS", "FILES", "EXIT STATUS",
                    "EXAMPLES", "SEE ALSO"):
        assert re.search(r"^%s$" % section, text, re.M), section
