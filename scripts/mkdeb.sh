#!/usr/bin/env bash
# scripts/mkdeb.sh - builds $O/spanprof_VERSION_ARCH.deb with dpkg-deb (what
# `make deb` runs; O and VERSION come from the Makefile).
#
# One binary package, "spanprof": the two binaries in /usr/bin, libspanctx
# (.so.1, .so, .a, header, pkg-config) in /usr/lib/<multiarch>, the agent's
# unit in /lib/systemd/system (bookworm's unit directory for packages), the
# README and deploy/ examples in /usr/share/doc/spanprof.  Depends comes
# from dpkg-shlibdeps (the Debian packages that provide the libraries the
# ELF files really link), so `dpkg -i` refuses the package on a machine
# that lacks one, naming it.  Binaries lose their DWARF (--strip-debug) but
# keep their symbol table and GNU build id.  The unit is installed, not
# enabled: `systemctl enable --now spanprof-agent` is the administrator's
# choice.  Why dpkg-deb and not debhelper: dpkg-deb and dpkg-shlibdeps come
# with dpkg-dev, the tree already has its build (make), and a package built
# from `make install` into a staging root needs none of debhelper's steps.
set -euo pipefail
cd "$(dirname "$0")/.."
O=${O:-build}
VERSION=${VERSION:?VERSION not set (run make deb)}
for t in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
	command -v "$t" >/dev/null || {
		echo "spanprof deb: $t missing: install dpkg-dev (scripts/deps.sh)" >&2; exit 1; }
done
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(realpath -m "$O/deb")
root=$work/root
out=$O/spanprof_${VERSION}_${ARCH}.deb
rm -rf "$work"
mkdir -p "$root/DEBIAN"

make --no-print-directory -s install O="$O" DESTDIR="$root" PREFIX=/usr \
	LIBDIR="/usr/lib/$MULTIARCH" SYSTEMDUNITDIR=/lib/systemd/system >/dev/null
strip --strip-debug "$root/usr/bin/spanprof" "$root/usr/bin/spanprof-symbolizer" \
	"$root/usr/lib/$MULTIARCH/libspanctx.so.1"
strip --strip-debug "$root/usr/lib/$MULTIARCH/libspanctx.a"

# dpkg-shlibdeps reads debian/control from its working directory
mkdir -p "$work/src/debian"
printf 'Source: spanprof\n\nPackage: spanprof\nArchitecture: any\n' >"$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/spanprof" \
	-e"$root/usr/bin/spanprof-symbolizer" -e"$root/usr/lib/$MULTIARCH/libspanctx.so.1" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "spanprof deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: spanprof
Version: $VERSION
Architecture: $ARCH
Maintainer: spanprof developers <root@localhost>
Installed-Size: $size
Depends: $depends
Section: devel
Priority: optional
Description: continuous eBPF profiler with trace context
 spanprof samples kernel and user stacks of every CPU with eBPF, reads the
 sampled thread's W3C trace and span ids (OpenTelemetry thread context),
 and writes raw addresses with build ids as pprof or OTLP Profiles;
 spanprof-symbolizer symbolizes them later, unprivileged.  Includes the
 agent's systemd unit (not enabled) and libspanctx for applications.
CONTROL
# the shared library is new to the linker cache
echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
cat >"$root/DEBIAN/postinst" <<'SH'
#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
SH
cat >"$root/DEBIAN/postrm" <<'SH'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
SH
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
	xargs -0 md5sum) >"$root/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zgzip --build "$root" "$out" >/dev/null
rm -rf "$work"
echo "$out"
