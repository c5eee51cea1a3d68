# deploy/build.mk - installing spanprof: `make install`, `make uninstall`,
# `make deb`.
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   what is built in $(O)/:
#     $(BINDIR)/spanprof, $(BINDIR)/spanprof-symbolizer
#     $(LIBDIR)/libspanctx.so.1 (+ libspanctx.so link), libspanctx.a
#     $(INCLUDEDIR)/spanctx.h, $(PKGCONFIGDIR)/libspanctx.pc
#     $(SYSTEMDUNITDIR)/spanprof-agent.service (ExecStart rewritten to
#       $(BINDIR)/spanprof, so the unit runs the binary installed with it)
#     $(DOCDIR)/README.md and the deploy/ examples
#   make uninstall  removes exactly those files (same variables).
#   make deb        $(O)/spanprof_VERSION_ARCH.deb with dpkg-deb, from a
#     `make install PREFIX=/usr` into a staging root (scripts/mkdeb.sh).
#
# Install does not build: it needs `make all` first (so `sudo make install`
# never compiles as root into the tree); a missing file stops it with a
# message.  The version is the collector's SPANPROF_VERSION, one source.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/spanprof
DESTDIR ?=
INSTALL ?= install

SPANPROF_VERSION := $(shell sed -n 's/^\#define SPANPROF_VERSION "\(.*\)"$$/\1/p' src/collector/main.c)
SPANCTX_VERSION := $(shell sed -n 's/^\#define SPANCTX_VERSION_STRING "\(.*\)"$$/\1/p' lib/spanctx/spanctx.h)

INSTALL_BUILT := $(O)/spanprof $(O)/spanprof-symbolizer $(O)/libspanctx.so $(O)/libspanctx.a
INSTALL_DOCS := README.md deploy/otel-collector/config.yaml \
	deploy/otel-collector/config-k8s.yaml deploy/kubernetes/daemonset.yaml \
	deploy/kubernetes/symbolizer.yaml

INSTALLED := $(BINDIR)/spanprof $(BINDIR)/spanprof-symbolizer \
	$(LIBDIR)/$(SPANCTX_SONAME) $(LIBDIR)/libspanctx.so $(LIBDIR)/libspanctx.a \
	$(INCLUDEDIR)/spanctx.h $(PKGCONFIGDIR)/libspanctx.pc \
	$(SYSTEMDUNITDIR)/spanprof-agent.service \
	$(addprefix $(DOCDIR)/,README.md $(addprefix examples/,$(notdir $(filter deploy/%,$(INSTALL_DOCS)))))

.PHONY: install uninstall deb install-check
install-check:
	@for f in $(INSTALL_BUILT); do test -e $$f || { \
		echo "spanprof install: $$f is not built: run 'make all' (O=$(O)) first" >&2; exit 1; }; done

install: install-check
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR)/examples
	$(INSTALL) -m 0755 $(O)/spanprof $(O)/spanprof-symbolizer $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 0644 $(O)/libspanctx.so $(DESTDIR)$(LIBDIR)/$(SPANCTX_SONAME)
	ln -sf $(SPANCTX_SONAME) $(DESTDIR)$(LIBDIR)/libspanctx.so
	$(INSTALL) -m 0644 $(O)/libspanctx.a $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 0644 lib/spanctx/spanctx.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(SPANCTX_VERSION)|' \
		lib/spanctx/libspanctx.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libspanctx.pc
	sed -e 's|^ExecStart=/usr/bin/spanprof |ExecStart=$(BINDIR)/spanprof |' \
		-e 's|file:///usr/share/doc/spanprof/|file://$(DOCDIR)/|' \
		deploy/systemd/spanprof-agent.service > $(DESTDIR)$(SYSTEMDUNITDIR)/spanprof-agent.service
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/libspanctx.pc $(DESTDIR)$(SYSTEMDUNITDIR)/spanprof-agent.service
	$(INSTALL) -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -m 0644 $(filter deploy/%,$(INSTALL_DOCS)) $(DESTDIR)$(DOCDIR)/examples/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null

deb: install-check
	O=$(O) VERSION=$(SPANPROF_VERSION) bash scripts/mkdeb.sh
