# Release tarball and RPM packages; included at the end of the Makefile.
#   make dist   dist/nss-ib-$(VERSION).tar.gz: every git-tracked file plus the
#               untracked files git does not ignore, under nss-ib-$(VERSION)/
#   make rpm    binary and source RPMs from that tarball (rpmbuild -ta), in a
#               private _topdir: build/rpm/RPMS/<arch>/, build/rpm/SRPMS/
#   make deb    Debian binary packages (debian/) from that tarball, unpacked in
#               build/deb/ with it as the .orig.tar.gz: build/deb/*.deb

DIST_NAME := nss-ib-$(VERSION)
DIST_TARBALL := dist/$(DIST_NAME).tar.gz
RPM_TOPDIR := $(CURDIR)/$(B)/rpm
RPMBUILD ?= rpmbuild
# The spec's BuildRequires are RPM package names, which Debian's rpm cannot
# check against dpkg's database: skip that check there (the build
# dependencies are Debian packages, installed by scripts/install-deps).
RPMBUILD_FLAGS ?= $(if $(wildcard /etc/debian_version),--nodeps)

.PHONY: dist rpm deb
dist: SHELL := /bin/bash

# Files modified in the work tree go in as they are now; files deleted but
# still in the index are left out. Owners, order, dates and gzip header do
# not depend on who builds or when: the same tree gives the same tarball.
dist:
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || \
		{ echo "make dist: needs a git work tree (it packs the files git knows)" >&2; exit 1; }
	@v=$$(sed -n 's/^Version:[[:space:]]*//p' rpm/nss-ib.spec); [ "$$v" = "$(VERSION)" ] || \
		{ echo "make dist: rpm/nss-ib.spec has Version $$v, the Makefile $(VERSION)" >&2; exit 1; }
	@mkdir -p dist
	@rm -f $(DIST_TARBALL) $(DIST_TARBALL).tmp
	git ls-files -z --cached --others --exclude-standard | sort -zu | \
		while IFS= read -r -d '' f; do [ -e "$$f" ] || [ -L "$$f" ] && printf '%s\0' "$$f"; done | \
		tar --null --no-recursion -T - --transform 's|^|$(DIST_NAME)/|S' \
			--sort=name --owner=0 --group=0 --numeric-owner --format=gnu \
			--mtime=@$$(git log -1 --format=%ct 2>/dev/null || echo 0) -cf - | \
		gzip -n -9 > $(DIST_TARBALL).tmp
	@mv $(DIST_TARBALL).tmp $(DIST_TARBALL)
	@echo "dist: $(DIST_TARBALL) ($$(tar tzf $(DIST_TARBALL) | wc -l) entries)"

rpm: dist
	rm -rf $(RPM_TOPDIR)
	mkdir -p $(RPM_TOPDIR)/BUILD $(RPM_TOPDIR)/BUILDROOT $(RPM_TOPDIR)/RPMS \
		$(RPM_TOPDIR)/SOURCES $(RPM_TOPDIR)/SPECS $(RPM_TOPDIR)/SRPMS
	$(RPMBUILD) -ta $(RPMBUILD_FLAGS) --define '_topdir $(RPM_TOPDIR)' $(DIST_TARBALL)
	@find $(RPM_TOPDIR)/RPMS $(RPM_TOPDIR)/SRPMS -name '*.rpm' | sort

DEB_DIR := $(CURDIR)/$(B)/deb
DEB_BUILD_FLAGS ?= -us -uc -b

deb: dist
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version); [ "$${v%-*}" = "$(VERSION)" ] || \
		{ echo "make deb: debian/changelog has $$v, the Makefile $(VERSION)" >&2; exit 1; }
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)
	cp $(DIST_TARBALL) $(DEB_DIR)/nss-ib_$(VERSION).orig.tar.gz
	tar -xzf $(DIST_TARBALL) -C $(DEB_DIR)
	cd $(DEB_DIR)/$(DIST_NAME) && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS \
		dpkg-buildpackage $(DEB_BUILD_FLAGS)
	@ls $(DEB_DIR)/*.deb
