"""Packaging: `make install` lays out an FHS tree and `make uninstall` takes
it back; the systemd units pass `systemd-analyze verify` and keep their
hardening; `make dist` packs the source tree; `make rpm` builds packages that
hold the expected files (skipped without rpmbuild); `make deb` builds Debian
packages that lintian passes, with the expected files, control fields and
maintainer scripts, and that dpkg installs into (and purges from) a
throwaway root (skipped without dpkg-buildpackage)."""
import glob
import os
import re
import shutil
import stat
import subprocess
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNITS = ["ibresd.service", "ibresd.socket", "ibresd-acm.socket", "ibresd-kernel.socket",
         "ibresd-metrics.service", "ibresd-metrics.timer"]
LIBDIRS = ["usr/lib/x86_64-linux-gnu", "usr/lib64"]


def version():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M).group(1)


def make(*args, timeout=300):
    """Run make at the top of the tree, free of any outer make's settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "SANITIZE", "IBRESD")
           and not k.startswith(("IBRES_", "ASAN_", "UBSAN_"))}
    p = subprocess.run(["make", "-s", "-C", ROOT] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env, timeout=timeout)
    assert p.returncode == 0, "make %s failed:\n%s" % (" ".join(args), p.stdout.decode()[-4000:])
    return p.stdout.decode()


def tree(root):
    """Every file and symlink under root, as paths relative to it."""
    out = set()
    for d, dirs, files in os.walk(root):
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            out.add(os.path.relpath(os.path.join(d, name), root))
    return out


def man_pages():
    return sorted(os.path.basename(m) for m in glob.glob(os.path.join(ROOT, "man", "*.[1-8]")))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("destdir"))
    make("install", "DESTDIR=" + dest, "PREFIX=/usr")
    return dest


def libdir_of(dest):
    found = [d for d in LIBDIRS if os.path.exists(os.path.join(dest, d, "libnss_ib.so.2"))]
    assert len(found) == 1, "libnss_ib.so.2 in none or several of %s" % LIBDIRS
    return found[0]


def test_install_fhs_layout(installed):
    dest = installed
    lib = libdir_of(dest)

    def executable(rel):
        st = os.stat(os.path.join(dest, rel))
        assert stat.S_ISREG(st.st_mode) and st.st_mode & 0o111, rel

    for rel in ("usr/sbin/ibresd", "usr/sbin/ibres-nsswitch", "usr/bin/ibresctl",
                lib + "/libnss_ib.so.2", lib + "/libibres.so.1"):
        executable(rel)
    assert os.readlink(os.path.join(dest, lib, "libibres.so")) == "libibres.so.1"
    for h in ("ibres.h", "ibres_proto.h"):
        assert os.path.isfile(os.path.join(dest, "usr/include", h))
    for u in UNITS:
        assert os.path.isfile(os.path.join(dest, "usr/lib/systemd/system", u)), u
    assert os.path.isfile(os.path.join(dest, "usr/share/bash-completion/completions/ibresctl"))
    with open(os.path.join(dest, "etc/ibres/ibresd.conf"), "rb") as f, \
            open(os.path.join(ROOT, "conf/ibresd.conf"), "rb") as g:
        assert f.read() == g.read()
    for m in man_pages():
        assert os.path.isfile(os.path.join(dest, "usr/share/man/man" + m[-1], m)), m
    # nothing lands outside the FHS places we expect
    for rel in tree(dest):
        assert rel.startswith(("usr/sbin/", "usr/bin/", "usr/include/", "usr/share/man/",
                               "usr/lib/systemd/system/", "usr/share/bash-completion/completions/",
                               lib + "/", "etc/ibres/")), rel


def test_installed_units_and_pkgconfig_name_the_install_paths(installed):
    with open(os.path.join(installed, "usr/lib/systemd/system/ibresd.service")) as f:
        unit = f.read()
    assert re.search(r"^ExecStart=/usr/sbin/ibresd --foreground --config /etc/ibres/ibresd.conf$",
                     unit, re.M)
    lib = libdir_of(installed)
    with open(os.path.join(installed, lib, "pkgconfig/libibres.pc")) as f:
        pc = f.read()
    assert "prefix=/usr\n" in pc
    assert "libdir=/%s\n" % lib in pc
    assert "includedir=/usr/include\n" in pc
    assert "Version: %s\n" % version() in pc


def test_reinstall_keeps_edited_config_and_uninstall_removes_the_rest(tmp_path):
    dest = str(tmp_path)
    make("install", "DESTDIR=" + dest, "PREFIX=/usr")
    conf = os.path.join(dest, "etc/ibres/ibresd.conf")
    with open(conf, "a") as f:
        f.write("# local edit\n")
    make("install", "DESTDIR=" + dest, "PREFIX=/usr")
    with open(conf) as f:
        assert f.read().endswith("# local edit\n")
    make("uninstall", "DESTDIR=" + dest, "PREFIX=/usr")
    assert tree(dest) == {"etc/ibres/ibresd.conf"}


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze missing")
def test_units_pass_systemd_analyze_verify(tmp_path):
    # The units name /usr/sbin/ibresd and man pages that exist only once
    # installed: install into a scratch prefix (the install rule points the
    # units at it) and verify the installed units as they are.
    pre = str(tmp_path)
    make("install", "PREFIX=%s/usr" % pre, "SYSCONFDIR=%s/etc" % pre)
    unitdir = os.path.join(pre, "usr/lib/systemd/system")
    with open(os.path.join(unitdir, "ibresd.service")) as f:
        assert "ExecStart=%s/usr/sbin/ibresd " % pre in f.read()
    env = dict(os.environ, MANPATH=os.path.join(pre, "usr/share/man") + ":",
               SYSTEMD_PAGER="", SYSTEMD_COLORS="0")
    p = subprocess.run(["systemd-analyze", "verify"] + [os.path.join(unitdir, u) for u in UNITS],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == b"", p.stdout.decode()


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze missing")
def test_service_hardening_does_not_regress():
    # offline mode (systemd >= 250) reads the unit file: no running systemd needed.
    # 2.6 today: the bounding set holds CAP_NET_ADMIN (kernel path queries) and
    # CAP_NET_RAW (the controlled Q_Key), each needed (see the unit's comment)
    p = subprocess.run(["systemd-analyze", "--no-pager", "security", "--offline=yes",
                        "--threshold=27", os.path.join(ROOT, "conf/systemd/ibresd.service")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                       env=dict(os.environ, SYSTEMD_COLORS="0"))
    out = p.stdout.decode()
    if "--offline" in out and "nrecognized" in out:
        pytest.skip("systemd-analyze too old for --offline")
    assert p.returncode == 0, out
    assert "✓ CapabilityBoundingSet=~CAP_SYS_ADMIN" in out
    assert "✓ NoNewPrivileges=" in out


def test_unit_contents():
    d = os.path.join(ROOT, "conf/systemd")
    with open(os.path.join(d, "ibresd.service")) as f:
        svc = f.read()
    for line in ("Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "ProtectSystem=strict",
                 "ProtectHome=yes", "PrivateTmp=yes", "NoNewPrivileges=yes",
                 "CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW", "RuntimeDirectory=ibres",
                 "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK AF_IB"):
        assert re.search("^%s$" % re.escape(line), svc, re.M), line
    with open(os.path.join(d, "ibresd.socket")) as f:
        sock = f.read()
    assert "ListenStream=/run/ibres/ibresd.sock\n" in sock and "SocketMode=0666\n" in sock
    with open(os.path.join(d, "ibresd-acm.socket")) as f:
        acm = f.read()
    for line in ("ListenStream=/run/ibacm-unix.sock", "Symlinks=/run/ibacm.sock",
                 "Conflicts=ibacm.socket ibacm.service", "Service=ibresd.service"):
        assert line + "\n" in acm, line
    with open(os.path.join(d, "ibresd-kernel.socket")) as f:
        kern = f.read()
    # systemd takes a group bit mask: 4 is RDMA_NL_GROUP_LS (3), as in ibacm.socket
    for line in ("ListenNetlink=rdma 4", "Service=ibresd.service",
                 "ConditionPathIsDirectory=/sys/class/infiniband"):
        assert line + "\n" in kern, line
    assert re.search(r"^Also=.*ibresd-kernel\.socket", svc, re.M)


def git_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], stdout=subprocess.PIPE, check=True).stdout
    return {f.decode() for f in out.split(b"\0") if f and os.path.lexists(os.path.join(ROOT, f.decode()))}


@pytest.mark.skipif(not shutil.which("git") or
                    not os.path.exists(os.path.join(ROOT, ".git")), reason="not a git tree")
def test_make_dist_packs_the_source_tree():
    before = git_files()
    make("dist")
    after = git_files()  # others may add files meanwhile in a shared tree
    name = "nss-ib-" + version()
    path = os.path.join(ROOT, "dist", name + ".tar.gz")
    with tarfile.open(path) as t:
        members = t.getmembers()
    assert all(m.name.startswith(name + "/") for m in members)
    packed = {m.name[len(name) + 1:] for m in members}
    assert packed in (before, after), (packed ^ before, packed ^ after)
    for must in ("Makefile", "mk/dist.mk", "rpm/nss-ib.spec", "tools/ibres-nsswitch",
                 "conf/systemd/ibresd.service", "man/ibresd.8"):
        assert must in packed, must
    assert not any(p.startswith(("build/", "dist/")) for p in packed)
    # reproducible: no builder's name, ids or clock in the archive
    commit_time = int(subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ct"],
                                     stdout=subprocess.PIPE, check=True).stdout)
    for m in members:
        assert (m.uid, m.gid, m.uname, m.gname) == (0, 0, "", ""), m.name
        assert m.mtime == commit_time, m.name
    assert [m.name for m in members] == sorted(m.name for m in members)
    with open(path, "rb") as f:
        assert f.read(8)[4:8] == b"\0\0\0\0"  # gzip -n: no time stamp


@pytest.mark.skipif(not shutil.which("rpmbuild"), reason="rpmbuild missing")
@pytest.mark.timeout(900)
def test_make_rpm_builds_packages_with_the_expected_files():
    make("rpm", timeout=600)
    v = version()
    rpms = glob.glob(os.path.join(ROOT, "build/rpm/RPMS/*/*.rpm"))
    byname = {}
    for r in rpms:
        n = subprocess.run(["rpm", "-qp", "--qf", "%{NAME}", r], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, check=True).stdout.decode()
        byname[n] = r
    assert set(byname) >= {"nss-ib", "nss-ib-devel"}, rpms
    assert glob.glob(os.path.join(ROOT, "build/rpm/SRPMS/nss-ib-%s-*.src.rpm" % v))

    def files(pkg):
        out = subprocess.run(["rpm", "-qlp", byname[pkg]], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode()
        return set(out.split())

    def configs(pkg):
        out = subprocess.run(["rpm", "-qcp", byname[pkg]], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode()
        return set(out.split())

    main = files("nss-ib")
    libdir = "/usr/lib64" if "/usr/lib64/libnss_ib.so.2" in main else "/usr/lib/x86_64-linux-gnu"
    for f in ("/usr/sbin/ibresd", "/usr/sbin/ibres-nsswitch", "/usr/bin/ibresctl",
              libdir + "/libnss_ib.so.2", libdir + "/libibres.so.1", "/etc/ibres/ibresd.conf",
              "/usr/lib/systemd/system/ibresd.service", "/usr/lib/systemd/system/ibresd.socket",
              "/usr/lib/systemd/system/ibresd-acm.socket",
              "/usr/lib/systemd/system/ibresd-kernel.socket",
              "/usr/lib/systemd/system/ibresd-metrics.timer",
              "/usr/share/bash-completion/completions/ibresctl"):
        assert f in main, f
    assert configs("nss-ib") == {"/etc/ibres/ibresd.conf"}
    # the pages of the tarball the packages were built from (a shared work
    # tree may have gained some since)
    with tarfile.open(os.path.join(ROOT, "dist", "nss-ib-%s.tar.gz" % v)) as t:
        pages = [os.path.basename(n) for n in t.getnames()
                 if re.match(r"[^/]+/man/[^/]+\.[1-8]$", n)]
    assert "ibresd.8" in pages
    for m in pages:
        want = "/usr/share/man/man%s/%s" % (m[-1], m)
        pkg = "nss-ib-devel" if m[-1] == "3" else "nss-ib"
        assert {want, want + ".gz"} & files(pkg), (m, pkg)
    devel = files("nss-ib-devel")
    for f in ("/usr/include/ibres.h", "/usr/include/ibres_proto.h", libdir + "/libibres.so",
              libdir + "/pkgconfig/libibres.pc"):
        assert f in devel, f
    assert not (main & devel)
    scripts = subprocess.run(["rpm", "-qp", "--scripts", byname["nss-ib"]], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode()
    assert "ibresd.service" in scripts and "ldconfig" in scripts
    assert "nsswitch" not in scripts  # never edits nsswitch.conf by itself


# ---- Debian packages ----------------------------------------------------------

DEBS = ["ibresd", "libnss-ib", "libibres1", "libibres-dev", "ibres-tools"]
MULTIARCH = "usr/lib/x86_64-linux-gnu"
needs_deb = pytest.mark.skipif(not (shutil.which("dpkg-buildpackage") and shutil.which("dh")),
                               reason="dpkg-buildpackage or debhelper missing")


def out(cmd, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    assert p.returncode == 0, "%s:\n%s" % (cmd, p.stdout.decode())
    return p.stdout.decode()


@pytest.fixture(scope="module")
def debs():
    make("deb", timeout=900)
    v = version()
    found = {}
    for name in DEBS:
        path = os.path.join(ROOT, "build/deb", "%s_%s-1_amd64.deb" % (name, v))
        if not os.path.exists(path):  # another architecture
            path = glob.glob(os.path.join(ROOT, "build/deb", "%s_%s-1_*.deb" % (name, v)))[0]
        found[name] = path
    return found


def deb_files(path):
    """The regular files and symlinks of a .deb, as absolute paths."""
    files = set()
    for line in out(["dpkg-deb", "--contents", path]).splitlines():
        f = line.split()
        if f[0][0] in "-l":
            files.add(f[5][1:])
    return files


def deb_control(path, member):
    p = subprocess.run(["dpkg-deb", "--info", path, member], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=60)
    return p.stdout.decode() if p.returncode == 0 else None


@needs_deb
@pytest.mark.timeout(1200)  # the first one builds the packages
def test_deb_contents(debs):
    files = {n: deb_files(p) for n, p in debs.items()}
    lib = "/" + MULTIARCH if "/%s/libibres.so.1" % MULTIARCH in files["libibres1"] else None
    assert lib, files["libibres1"]
    want = {
        "ibresd": ["/usr/sbin/ibresd", "/etc/ibres/ibresd.conf",
                   "/lib/systemd/system/ibresd.service", "/lib/systemd/system/ibresd.socket",
                   "/lib/systemd/system/ibresd-acm.socket",
                   "/lib/systemd/system/ibresd-kernel.socket", "/usr/share/man/man8/ibresd.8.gz",
                   "/usr/share/man/man5/ibresd.conf.5.gz",
                   "/usr/share/doc/ibresd/README.Debian", "/usr/share/doc/ibresd/copyright"],
        "libnss-ib": [lib + "/libnss_ib.so.2", "/usr/sbin/ibres-nsswitch",
                      "/usr/share/man/man8/nss-ib.8.gz",
                      "/usr/share/man/man8/ibres-nsswitch.8.gz"],
        "libibres1": [lib + "/libibres.so.1"],
        "libibres-dev": ["/usr/include/ibres.h", "/usr/include/ibres_proto.h",
                         lib + "/libibres.so", lib + "/pkgconfig/libibres.pc",
                         "/usr/share/man/man3/libibres.3.gz",
                         "/usr/share/man/man3/ibres_open.3.gz"],
        "ibres-tools": ["/usr/bin/ibresctl", "/usr/share/man/man1/ibresctl.1.gz",
                        "/usr/share/bash-completion/completions/ibresctl",
                        "/lib/systemd/system/ibresd-metrics.service",
                        "/lib/systemd/system/ibresd-metrics.timer"],
    }
    for name, paths in want.items():
        for f in paths:
            assert f in files[name], (name, f)
    # each file in one package only (docs under each package's own directory)
    seen = {}
    for name, fs in files.items():
        for f in fs:
            assert f not in seen, (f, name, seen.get(f))
            seen[f] = name
    # every page of the tarball the packages came from is in some package
    with tarfile.open(os.path.join(ROOT, "dist", "nss-ib-%s.tar.gz" % version())) as t:
        pages = [os.path.basename(n) for n in t.getnames()
                 if re.match(r"[^/]+/man/[^/]+\.[1-8]$", n)]
    for m in pages:
        assert "/usr/share/man/man%s/%s.gz" % (m[-1], m) in seen, m


@needs_deb
@pytest.mark.timeout(1200)  # the first one builds the packages
def test_deb_control_fields_and_triggers(debs):
    info = {n: out(["dpkg-deb", "--info", p]) for n, p in debs.items()}
    for n in ("libnss-ib", "libibres1", "libibres-dev"):
        assert "Multi-Arch: same" in info[n], n
    assert re.search(r"Depends:.*libibres1 \(= %s-1\)" % re.escape(version()),
                     info["libibres-dev"])
    assert re.search(r"Depends:.*python3", info["libnss-ib"])  # ibres-nsswitch
    assert re.search(r"Depends:.*libibverbs1", info["ibresd"])
    # ldconfig through dpkg triggers, a symbols file for the public library
    for n in ("libibres1", "libnss-ib"):
        trig = deb_control(debs[n], "triggers") or ""
        assert "activate-noawait ldconfig" in trig, n
    symbols = deb_control(debs["libibres1"], "symbols")
    assert symbols and "ibres_getaddrinfo@IBRES_1.0" in symbols
    assert deb_control(debs["ibresd"], "conffiles").split() == ["/etc/ibres/ibresd.conf"]


@needs_deb
@pytest.mark.timeout(1200)  # the first one builds the packages
def test_deb_maintainer_scripts(debs):
    post = deb_control(debs["ibresd"], "postinst")
    # enabled through deb-systemd-helper; only the socket is started
    assert "deb-systemd-helper enable 'ibresd.service'" in post
    assert "deb-systemd-helper enable 'ibresd.socket'" in post
    assert "deb-systemd-invoke $_dh_action 'ibresd.socket'" in post or \
        "deb-systemd-invoke start 'ibresd.socket'" in post
    assert not re.search(r"deb-systemd-invoke \S+ 'ibresd.service'", post)
    assert "try-restart ibresd.service" in post  # upgrades restart a running daemon
    # ibresd-acm.socket is only re-enabled if the admin had enabled it
    acm = post[post.index("'ibresd-acm.socket'") - 200:]
    assert "debian-installed 'ibresd-acm.socket'" in acm
    tools_post = deb_control(debs["ibres-tools"], "postinst") or ""
    assert "enable 'ibresd-metrics.timer'" not in tools_post.split("was-enabled")[0]
    # libnss-ib never edits nsswitch.conf, it says how
    for s in ("preinst", "postinst", "prerm", "postrm"):
        text = deb_control(debs["libnss-ib"], s) or ""
        assert "ibres-nsswitch enable" not in text.replace("    ibres-nsswitch enable", "")
        assert not re.search(r"(sed|>>?)\s*\S*nsswitch", text), s


@needs_deb
@pytest.mark.timeout(1200)  # the first one builds the packages
def test_libnss_ib_postinst_prints_how_to_enable(debs, tmp_path):
    script = tmp_path / "postinst"
    script.write_text(deb_control(debs["libnss-ib"], "postinst"))
    stub = tmp_path / "bin"
    stub.mkdir()
    for status, says in ((3, True), (0, False)):
        (stub / "ibres-nsswitch").write_text("#!/bin/sh\n[ \"$1\" = status ] && exit %d\n"
                                             "exit 99\n" % status)
        os.chmod(stub / "ibres-nsswitch", 0o755)
        env = {"PATH": "%s:/usr/bin:/bin" % stub}
        for args, first in ((["configure", ""], True), (["configure", "0.0.9-1"], False)):
            p = subprocess.run(["sh", str(script)] + args, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            assert p.returncode == 0, p.stderr
            assert ("ibres-nsswitch enable" in p.stderr.decode()) == (says and first)


@needs_deb
@pytest.mark.timeout(1200)  # the first one builds the packages
def test_lintian_reports_no_errors(debs):
    if not shutil.which("lintian"):
        pytest.skip("lintian missing")
    p = subprocess.run(["lintian", "--no-tag-display-limit"] + list(debs.values()),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    text = p.stdout.decode()
    errors = [x for x in text.splitlines() if x.startswith("E:")]
    assert not errors, text
    # the warnings kept are the ones debian/README.source explains
    with open(os.path.join(ROOT, "debian/README.source")) as f:
        explained = f.read()
    for line in text.splitlines():
        if line.startswith("W:"):
            tag = line.split()[2]
            assert tag in explained, line


@needs_deb
@pytest.mark.timeout(1200)  # the first one builds the packages
def test_dpkg_installs_and_purges_in_a_throwaway_root(debs, tmp_path):
    root = tmp_path / "root"
    admin = root / "var/lib/dpkg"
    for d in (admin / "info", admin / "updates", root / "usr/sbin"):
        d.mkdir(parents=True)
    (admin / "status").write_text("")
    # policy-rc.d in the root: deb-systemd-invoke starts nothing anywhere
    (root / "usr/sbin/policy-rc.d").write_text("#!/bin/sh\nexit 101\n")
    os.chmod(root / "usr/sbin/policy-rc.d", 0o755)
    host_links = sorted(os.listdir("/etc/systemd/system")) \
        if os.path.isdir("/etc/systemd/system") else []
    # chrootless scripts with DPKG_ROOT set: deb-systemd-helper works in the root
    dpkg = ["dpkg", "--root=%s" % root, "--force-depends", "--force-script-chrootless"]
    out(dpkg + ["--install"] + [debs[n] for n in DEBS], timeout=300)
    status = out(["dpkg-query", "--admindir=%s" % admin, "-W", "-f",
                  "${Package} ${Status}\n"])
    for n in DEBS:
        assert "%s install ok installed" % n in status, status
    wants = root / "etc/systemd/system"
    assert os.readlink(wants / "multi-user.target.wants/ibresd.service") == \
        "/lib/systemd/system/ibresd.service"
    assert os.path.islink(wants / "sockets.target.wants/ibresd.socket")
    assert os.path.islink(wants / "sockets.target.wants/ibresd-kernel.socket")  # Also=
    assert not os.path.lexists(wants / "sockets.target.wants/ibresd-acm.socket")
    assert not os.path.lexists(wants / "timers.target.wants/ibresd-metrics.timer")
    assert (root / "usr/sbin/ibresd").is_file()
    assert (root / MULTIARCH / "libnss_ib.so.2").is_file()
    listed = out(["dpkg-query", "--admindir=%s" % admin, "-L", "ibres-tools"])
    assert "/usr/share/bash-completion/completions/ibresctl" in listed
    out(dpkg + ["--purge"] + DEBS, timeout=300)
    left = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
            if not d.startswith(str(admin)) and "policy-rc.d" not in f]
    assert not left, left
    assert not os.path.lexists(wants / "multi-user.target.wants/ibresd.service")
    if os.path.isdir("/etc/systemd/system"):
        assert sorted(os.listdir("/etc/systemd/system")) == host_links  # host untouched
