# nss-ib — top-level GNU Makefile. Sources are found by directory, so a new
# file in a layer of resolverd/, lib/, nss/, tools/ or test/unit/ needs no edit here.
#   make            build everything into build/
#   make check      unit tests (cmocka), integration tests (pytest), the VM suite
#   make check SANITIZE=1   the same with ASan+UBSan, built into build-san/
#   make valgrind   memcheck over libibres and the NSS module (unit and helper tests)
#   make vmcheck    the VM suite alone (test/vm/: qemu, soft-RoCE; root)
#   make demo       a 4-node emulated cluster resolving names (root)
#   make install DESTDIR=... PREFIX=...   /   make uninstall   /   make clean

VERSION := 0.1.0
CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
PKG_CONFIG ?= pkg-config
PYTHON ?= /usr/bin/python3
B := build

PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
ifneq ($(MULTIARCH),)
LIBDIR ?= $(PREFIX)/lib/$(MULTIARCH)
else
LIBDIR ?= $(PREFIX)/lib64
endif
ifeq ($(PREFIX),/usr)
SYSCONFDIR ?= /etc
else
SYSCONFDIR ?= $(PREFIX)/etc
endif
UNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

OPTFLAGS ?= -O2 -g
# SANITIZE=1: everything (daemon, libraries, tools, tests) with ASan and UBSan, any report
# fatal, in its own build directory. Programs we do not build (getent, python) load the
# sanitized NSS module and libibres with libasan preloaded: test/integration/conftest.py.
ifeq ($(SANITIZE),1)
B := build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
export IBRES_SAN_CFLAGS := $(SAN_FLAGS)
export IBRES_ASAN_PRELOAD := $(shell $(CC) -print-file-name=libasan.so)
export ASAN_OPTIONS := detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS := print_stacktrace=1:exitcode=86
endif
WARNFLAGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wno-format-nonliteral -Wpointer-arith -Wvla -Wundef
BASECFLAGS := -std=gnu11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -fno-strict-aliasing \
	-Iinclude -Ilib -DIBRES_VERSION='"$(VERSION)"' -MMD -MP
ALL_CFLAGS = $(BASECFLAGS) $(WARNFLAGS) $(OPTFLAGS) $(SAN_FLAGS) $(CFLAGS)
DAEMON_PKGS := libsystemd libnl-3.0 libnl-route-3.0 libibumad libibverbs
DAEMON_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(DAEMON_PKGS))
DAEMON_LIBS = -Wl,--as-needed $(shell $(PKG_CONFIG) --libs $(DAEMON_PKGS)) -lcrypto -lm
HARDEN_LDFLAGS := -Wl,-z,relro -Wl,-z,now

LIB_SRC := $(wildcard lib/*.c)
# The daemon's layers, top down; a folder of resolverd/ per layer (tools/layercheck).
DAEMON_LAYERS := frontend engine fabric ib os core
DAEMON_SRC := $(wildcard $(DAEMON_LAYERS:%=resolverd/%/*.c))
NSS_SRC := $(wildcard nss/*.c)
TOOLS_SRC := $(filter-out tools/ibresctl.c,$(wildcard tools/*.c))
UNIT_SRC := $(wildcard test/unit/test_*.c)
UNIT_SUPPORT := $(filter-out $(UNIT_SRC),$(wildcard test/unit/*.c))
FUZZ_SRC := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_SUPPORT := $(filter-out $(FUZZ_SRC) test/fuzz/replay_main.c,$(wildcard test/fuzz/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/%.o)
NSS_OBJ := $(NSS_SRC:%.c=$(B)/%.o)
TOOLS_OBJ := $(TOOLS_SRC:%.c=$(B)/%.o)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(B)/test/%)
UNIT_SUPPORT_OBJ := $(UNIT_SUPPORT:%.c=$(B)/%.o)
FUZZ_REPLAY := $(FUZZ_SRC:test/fuzz/%.c=$(B)/test/%-replay)

DEPS_STAMP := $(B)/.deps-ok

PROGRAMS := $(B)/ibresd $(B)/ibresctl $(B)/libnss_ib.so.2 $(B)/libibres.so.1 $(B)/libibres.so \
	$(B)/libibres.pc

.PHONY: all check unit integration valgrind vmcheck demo install uninstall clean fuzz bench format deps
all: $(PROGRAMS)

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps
	@scripts/install-deps
	@mkdir -p $(B) && touch $@

$(B)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(if $(filter resolverd/% tools/% test/%,$<),$(DAEMON_CFLAGS)) \
		$(if $(filter resolverd/% test/% bench/%,$<),-Iresolverd) -c -o $@ $<

$(B)/libibres-internal.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/libibresd.a: $(DAEMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/ibresd: $(B)/resolverd/main.o $(B)/libibresd.a $(B)/libibres-internal.a
	$(CC) $(ALL_CFLAGS) $(HARDEN_LDFLAGS) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(B)/ibresctl: $(B)/tools/ibresctl.o $(TOOLS_OBJ) $(B)/libibres-internal.a
	$(CC) $(ALL_CFLAGS) $(HARDEN_LDFLAGS) $(LDFLAGS) -o $@ $^

$(B)/libibres.so.1: $(LIB_OBJ) lib/libibres.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libibres.so.1 -Wl,--version-script=lib/libibres.map \
		-Wl,-z,defs $(HARDEN_LDFLAGS) $(LDFLAGS) -o $@ $(LIB_OBJ)

$(B)/libibres.so: $(B)/libibres.so.1
	ln -sf libibres.so.1 $@

$(B)/libibres.pc: lib/libibres.pc.in Makefile
	@mkdir -p $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|' $< > $@

# The NSS module runs inside every process: libc only, only _nss_ib_* exported.
$(B)/libnss_ib.so.2: $(NSS_OBJ) $(B)/libibres-internal.a nss/nss_ib.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libnss_ib.so.2 -Wl,--version-script=nss/nss_ib.map \
		-Wl,-z,defs -Wl,-z,nodelete $(HARDEN_LDFLAGS) $(LDFLAGS) -o $@ $(NSS_OBJ) \
		$(B)/libibres-internal.a

$(B)/test/%: $(B)/test/unit/%.o $(UNIT_SUPPORT_OBJ) $(B)/libibresd.a $(B)/libibres-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) -lcmocka
# The host store's tests again on a store whose index slots keep 1 bit of
# distance from home: every slot off its home is "far", its home the key's
# hash computed again (resolverd/core/hoststore_impl.h), a path the tests
# would otherwise take only where a probe run is 31 slots long.
FARDIST_STORE_OBJ := $(patsubst %.c,$(B)/test/fardist/%.o,\
	$(wildcard resolverd/core/hoststore*.c) resolverd/core/host_record.c)
UNIT_BIN += $(B)/test/test_hoststore_fardist
$(B)/test/fardist/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DAEMON_CFLAGS) -Iresolverd -DSLOT_DIST_BITS=1 -c -o $@ $<
$(B)/test/test_hoststore_fardist: $(B)/test/unit/test_hoststore.o $(FARDIST_STORE_OBJ) \
		$(UNIT_SUPPORT_OBJ) $(B)/libibresd.a $(B)/libibres-internal.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) -lcmocka
# nss/ is not in a library: its packing unit test links the object itself,
# before the archive whose record checks it calls.
$(B)/test/test_pack: $(B)/test/unit/test_pack.o $(B)/nss/pack.o $(UNIT_SUPPORT_OBJ) \
		$(B)/libibresd.a $(B)/libibres-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) -lcmocka

# Fuzz targets also build as plain programs that replay a corpus directory,
# so `make check` runs every saved input through them with any compiler. The
# support archive (test/fuzz's other files, the NSS module's objects) comes
# first: a target that uses daemon_fake.c gets its fake clock and transport.
$(B)/libfuzzsupport.a: $(FUZZ_SUPPORT:%.c=$(B)/%.o) $(NSS_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/test/%-replay: $(B)/test/fuzz/%.o $(B)/test/fuzz/replay_main.o $(B)/libfuzzsupport.a \
		$(B)/libibresd.a $(B)/libibres-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(B)/test/fuzz/replay_main.o: test/fuzz/replay_main.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Every test binary runs under a bound: a hang fails with its name, not CI's.
UNIT_TIMEOUT ?= 300
unit: $(UNIT_BIN) $(FUZZ_REPLAY)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; \
		timeout -k 5 $(UNIT_TIMEOUT) $$t || { echo "FAILED (status $$?): $$t"; exit 1; }; done
	@set -e; for f in $(FUZZ_REPLAY); do \
		n=$$(basename $$f -replay); echo "== $$f test/fuzz/corpus/$$n"; \
		timeout -k 5 $(UNIT_TIMEOUT) $$f test/fuzz/corpus/$$n || \
			{ echo "FAILED (status $$?): $$f"; exit 1; }; done

integration: all
	IBRES_BUILD=$(abspath $(B)) IBRESD=$(abspath $(B))/ibresd \
		$(PYTHON) -m pytest -ra -p no:cacheprovider test/integration

# memcheck over what runs inside other processes: libibres's and the NSS module's unit tests,
# then the integration tests that run the NSS module (through glibc) and libibres under it.
VALGRIND_UNITS := test_client test_msg test_pack test_ibenum
VALGRIND := valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect
valgrind: all $(VALGRIND_UNITS:%=$(B)/test/%)
	@set -e; for t in $(VALGRIND_UNITS); do echo "== valgrind $(B)/test/$$t"; \
		timeout -k 5 $(UNIT_TIMEOUT) $(VALGRIND) $(B)/test/$$t || \
			{ echo "FAILED (status $$?): valgrind $$t"; exit 1; }; done
	IBRES_BUILD=$(abspath $(B)) $(PYTHON) -m pytest -ra -p no:cacheprovider -m valgrind \
		test/integration/test_nss.py test/integration/test_libibres.py

# The VM suite (test/vm/): a real kernel RDMA stack under qemu. Where this
# machine cannot boot a guest, say why and go on.
vmcheck: all
	@if reason=$$(test/vm/run --check 2>&1); then \
		$(PYTHON) -m pytest -ra -p no:cacheprovider test/vm; \
	else echo "vmcheck: SKIPPED, no test VM here: $${reason#test/vm/run: }"; fi

check: all
	@tools/layercheck $(B)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory integration
	@$(if $(SAN_FLAGS),echo "vmcheck: not with SANITIZE=1 (the guests run build/: make check)",\
		$(MAKE) --no-print-directory vmcheck)

demo: all
	test/fabric/demo

bench: all
	bench/run

fuzz: | $(DEPS_STAMP)
	test/fuzz/run-libfuzzer

format:
	clang-format -i $(wildcard */*.c */*.h)

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSCONFDIR)/ibres
	install -m 0755 $(B)/ibresd $(DESTDIR)$(SBINDIR)/ibresd
	install -m 0755 tools/ibres-nsswitch $(DESTDIR)$(SBINDIR)/ibres-nsswitch
	install -m 0755 $(B)/ibresctl $(DESTDIR)$(BINDIR)/ibresctl
	install -m 0755 $(B)/libnss_ib.so.2 $(DESTDIR)$(LIBDIR)/libnss_ib.so.2
	install -m 0755 $(B)/libibres.so.1 $(DESTDIR)$(LIBDIR)/libibres.so.1
	ln -sf libibres.so.1 $(DESTDIR)$(LIBDIR)/libibres.so
	@# from the template, not build/: the paths are install-time ones
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|' \
		lib/libibres.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libibres.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/libibres.pc
	install -m 0644 include/ibres.h include/ibres_proto.h $(DESTDIR)$(INCLUDEDIR)/
	@# a page that is a symlink (ibres_close.3 -> ibres_open.3) stays a symlink
	for m in $(wildcard man/*.[1-8]); do s=$${m##*.}; d=$(DESTDIR)$(MANDIR)/man$$s; \
		install -d $$d && if [ -L $$m ]; then ln -sf "$$(readlink $$m)" $$d/$${m##*/}; \
		else install -m 0644 $$m $$d/; fi; done
	test -e $(DESTDIR)$(SYSCONFDIR)/ibres/ibresd.conf || \
		install -m 0644 conf/ibresd.conf $(DESTDIR)$(SYSCONFDIR)/ibres/ibresd.conf
	@# units name /usr/sbin/ibresd and /etc/ibres: point them at this install
	install -d $(DESTDIR)$(UNITDIR)
	for u in $(wildcard conf/systemd/*); do \
		sed -e 's|/usr/sbin/ibresd|$(SBINDIR)/ibresd|g; s|/etc/ibres/|$(SYSCONFDIR)/ibres/|g' \
			-e 's|/usr/bin/ibresctl|$(BINDIR)/ibresctl|g' $$u > $(DESTDIR)$(UNITDIR)/$${u##*/} && \
			chmod 0644 $(DESTDIR)$(UNITDIR)/$${u##*/}; done
	install -D -m 0644 conf/bash-completion/ibresctl $(DESTDIR)$(BASHCOMPDIR)/ibresctl

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/ibresd $(DESTDIR)$(SBINDIR)/ibres-nsswitch $(DESTDIR)$(BINDIR)/ibresctl \
		$(DESTDIR)$(LIBDIR)/libnss_ib.so.2 $(DESTDIR)$(LIBDIR)/libibres.so.1 \
		$(DESTDIR)$(LIBDIR)/libibres.so $(DESTDIR)$(LIBDIR)/pkgconfig/libibres.pc \
		$(DESTDIR)$(INCLUDEDIR)/ibres.h $(DESTDIR)$(INCLUDEDIR)/ibres_proto.h
	for m in $(notdir $(wildcard man/*.[1-8])); do s=$${m##*.}; \
		rm -f $(DESTDIR)$(MANDIR)/man$$s/$$m; done
	for u in $(notdir $(wildcard conf/systemd/*)); do rm -f $(DESTDIR)$(UNITDIR)/$$u; done
	rm -f $(DESTDIR)$(BASHCOMPDIR)/ibresctl

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)

include mk/dist.mk
