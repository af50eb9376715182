#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed srnic as a program outside the tree sees it: meson install
# --destdir into a temporary stage, then, with only PKG_CONFIG_PATH pointing
# into the stage, build and run pair_write.c and the installed examples with
# "cc ... $(pkg-config --cflags --libs srnic-tools)". Also checks what is
# installed (SONAMEs, the two header tiers, no internal header, docs), that
# the application tier compiles alone, and that libsrnic.so and
# libsrnic_link.so export exactly the functions their tiers' headers declare
# (lib/srnic.map, lib/link/srnic_link.map).
#
#   test_install.sh BUILD_DIR SOURCE_DIR
# env: MESON, CC (the build's compiler command), SRNIC_SANITIZE (the build's
# b_sanitize: the staged library is instrumented the same, so the program
# is too), SRNIC_VERSION, SRNIC_TEST_TMPDIR.
set -euo pipefail

build=$1
src=$2
stage=$(mktemp -d "${SRNIC_TEST_TMPDIR:-/tmp}/install.XXXXXX")
trap 'rm -rf "$stage"' EXIT
# shellcheck source=test/common/check.sh
. "$src/test/common/check.sh"

"$MESON" install -C "$build" --no-rebuild --destdir "$stage" >"$stage/install.log" 2>&1 || {
	cat "$stage/install.log"
	echo "FAIL: meson install --destdir"
	exit 1
}
pc=$(find "$stage" -name srnic.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || { echo "FAIL: no srnic.pc under the stage"; exit 1; }
export PKG_CONFIG_PATH=${pc%/srnic.pc}
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR

# srnic.pc is relocatable: its prefix is the stage's, not the install prefix.
libdir=$(readlink -f "$(pkg-config --variable=libdir srnic)")
incdir=$(readlink -f "$(pkg-config --variable=includedir srnic)")
datadir=$(readlink -f "$(pkg-config --variable=prefix srnic)")/share
check "srnic.pc's libdir is in the stage ($libdir)" test "${libdir#"$stage"/}" != "$libdir"
check "pkg-config --modversion srnic is $SRNIC_VERSION" \
	test "$(pkg-config --modversion srnic)" = "$SRNIC_VERSION"
for l in srnic srnic_link; do
	check "lib$l.so.$SRNIC_VERSION installed" test -f "$libdir/lib$l.so.$SRNIC_VERSION"
	check "its SONAME is lib$l.so.${SRNIC_VERSION%%.*}" \
		bash -c "readelf -d '$libdir/lib$l.so' | grep -q 'SONAME.*\[lib$l.so.${SRNIC_VERSION%%.*}\]'"
done
check "no static srnic libraries installed (the shared ones have it all)" \
	test -z "$(find "$stage" -name 'libsrnic*.a')"
# The tiers: the application API in include/srnic, the tooling API (wire,
# link, pair) in include/srnic/tools, the internal headers nowhere.
app_hdrs=(srnic.h srnic_cm.h)
tool_hdrs=(srnic_wire.h srnic_hdr.h srnic_opcode.h srnic_psn.h srnic_pkt.h srnic_mad.h
	srnic_link.h srnic_pair.h srnic_lossy.h)
for h in "${app_hdrs[@]}"; do
	check "application header $h installed" test -f "$incdir/srnic/$h"
done
for h in "${tool_hdrs[@]}"; do
	check "tooling header $h installed in srnic/tools" test -f "$incdir/srnic/tools/$h"
done
for h in srnic_param.h rnic.h cq.h stats.h engine.h eng_internal.h neigh.h cm.h; do
	check "internal header $h not installed" test -z "$(find "$stage" -name "$h")"
done
check "pkg-config --cflags srnic does not reach the tooling tier" \
	bash -c "! pkg-config --cflags srnic | grep -q tools"
# every page of the source's doc/, not a list that can fall behind it
for d in README.md examples/readwalk/main.c examples/rc_pingpong/main.c \
		$(cd "$src/doc" && ls -- *.md); do
	check "share/doc/srnic/$d installed" test -f "$datadir/doc/srnic/$d"
done
# Test hooks (config/test_hooks.h) are compiled into the test builds only
# (srnicd-test, test/rdmacm/hooks' librdmacm.so.1), never installed: the
# installed daemon and librdmacm.so.1 do not know their variables.
# lacks FILE NAME: FILE's bytes hold no NAME (grep alone: no binutils;
# an unreadable FILE fails too)
lacks() {
	local rc=0

	grep -qaF -- "$2" "$1" || rc=$?
	[ "$rc" -eq 1 ]
}
srnicd_bin=$(find "$stage" -type f -name srnicd)
rdmacm_so=$(find "$stage" -type f -name 'librdmacm.so.1*')
verbs_so=$(find "$stage" -type f -name 'libibverbs.so.1*')
check "srnicd installed" test -n "$srnicd_bin"
check "librdmacm.so.1 installed" test -n "$rdmacm_so"
check "libibverbs.so.1 installed" test -n "$verbs_so"
for f in $srnicd_bin $rdmacm_so $verbs_so; do
	for v in SRNICD_MR_ELSEWHERE SRNICD_RECLAIM_REFUSE_MW_BIND SRNIC_RDMACM_TEST_HOLD_RTU \
			SRNIC_RDMACM_TEST_HOLD_DESTROY SRNIC_RDMACM_TEST_HOLD_REQ \
			SRNIC_RDMACM_TEST_HOLD_HANDLER SRNIC_TEST_HOOK_HOLD_S \
			srnic_test_hook_on; do
		check "installed ${f##*/} has no test hook ($v)" lacks "$f" "$v"
	done
done
check "no test build installed (srnicd-test)" test -z "$(find "$stage" -name 'srnicd-test*')"

# Exports: each library's tier's functions and nothing else. gcc lists
# every function a translation unit declares, with its header (-aux-info).
# declared PKG HEADER...: the functions those headers declare
declared() {
	local pc=$1 h
	shift
	for h in "$@"; do
		echo "#include <$h>"
	done >"$stage/hdrs.c"
	# shellcheck disable=SC2046 # pkg-config's words split on purpose
	gcc -c -o "$stage/hdrs.o" -aux-info "$stage/aux.txt" "$stage/hdrs.c" \
		$(pkg-config --cflags "$pc") || return 1
	# (the headers' path as pkg-config gave it: .../pkgconfig/../../../include)
	for h in "$@"; do
		grep -E "^/\* $stage/[^ ]*/include/srnic/(tools/)?$h:" "$stage/aux.txt" || true
	done | grep -v ' static ' | sed -E 's/.*[ *](srnic_[a-z0-9_]+) \(.*/\1/'
	# the one table
	for h in "$@"; do
		[ "$h" != srnic_opcode.h ] || echo srnic_opcode_table
	done
}
# srnic's own exports: EAL's four interrupt calls libsrnic.so also defines
# (under librte_eal.so.23's nodes, for the memif server guard in
# lib/core/port.c) are checked on their own below
eal_intr="rte_intr_callback_register@@DPDK_23 rte_intr_callback_unregister@@DPDK_23
rte_intr_callback_unregister_pending@@DPDK_23 rte_intr_instance_free@@EXPERIMENTAL"
exported() {
	nm -D --with-symbol-versions --defined-only "$libdir/$1" |
		awk -v eal="$eal_intr" 'BEGIN { n = split(eal, e); for (i = 1; i <= n; i++) skip[e[i]] = 1 }
			$2 != "A" && !($3 in skip) { sub(/@.*/, "", $3); print $3 }'
}
eal_exported() {
	local s

	for s in $eal_intr; do
		nm -D --with-symbol-versions --defined-only "$libdir/$1" | awk '{ print $3 }' |
			grep -qx "$s" || { echo "$1 does not export $s"; return 1; }
	done
}
if command -v gcc >/dev/null 2>&1; then
	check "the application headers compile with pkg-config srnic alone" \
		declared srnic "${app_hdrs[@]}"
	# libsrnic.so: the application API and the wire layer (the engine's)
	declared srnic-tools "${app_hdrs[@]}" srnic_wire.h srnic_hdr.h srnic_opcode.h \
		srnic_psn.h srnic_pkt.h srnic_mad.h | sort -u >"$stage/declared"
	exported libsrnic.so | sort -u >"$stage/exported"
	check "libsrnic.so exports the $(wc -l <"$stage/declared") declared symbols, no others" \
		diff -u "$stage/declared" "$stage/exported"
	check "libsrnic.so exports EAL's four interrupt calls under DPDK_23/EXPERIMENTAL" \
		eal_exported libsrnic.so
	declared srnic-tools srnic_link.h srnic_pair.h srnic_lossy.h | sort -u >"$stage/declared"
	exported libsrnic_link.so | sort -u >"$stage/exported"
	check "libsrnic_link.so exports the $(wc -l <"$stage/declared") declared symbols, no others" \
		diff -u "$stage/declared" "$stage/exported"
fi

# Build out of the tree, as the README says, and run.
cflags=()
if [ -n "${SRNIC_SANITIZE:-}" ] && [ "$SRNIC_SANITIZE" != none ]; then
	cflags=(-fsanitize="$SRNIC_SANITIZE")
fi
eal=(--no-huge -m 512 --no-pci -l 0 --log-level=lib.eal:error --no-telemetry)
build_prog() {
	local out=$1 c=$2

	# shellcheck disable=SC2046 # pkg-config's words split on purpose
	# shellcheck disable=SC2086 # CC may be "ccache cc"
	$CC -std=c11 -D_GNU_SOURCE -Wall -Werror "${cflags[@]}" -o "$out" "$c" \
		$(pkg-config --cflags --libs srnic-tools) -Wl,-rpath,"$libdir"
}
check "pair_write.c builds with cc \$(pkg-config --cflags --libs srnic-tools)" \
	build_prog "$stage/pair_write" "$src/test/install/pair_write.c"
check "the installed examples build the same way" \
	bash -c "$(declare -f build_prog); $(declare -p cflags libdir CC); \
		build_prog '$stage/readwalk' '$datadir/doc/srnic/examples/readwalk/main.c' &&
		build_prog '$stage/rc_pingpong' '$datadir/doc/srnic/examples/rc_pingpong/main.c'"
check "pair_write runs against the staged libsrnic.so" \
	bash -c "ldd '$stage/pair_write' | grep -q '=> $libdir/libsrnic.so'"
out=$("$stage/pair_write" "${eal[@]}" --file-prefix "srnic-install-$$" 2>&1) || true
echo "$out"
check "pair_write: 16 KiB written, status success, 0 bytes differ" \
	grep -q 'RDMA_WRITE of 16384 bytes: wr_id 42 status success, 0 bytes differ' <<<"$out"
out=$("$stage/readwalk" "${eal[@]}" --file-prefix "srnic-install-rw-$$" 2>&1) || true
check "the installed readwalk example reads 8 KiB, 0 bytes differ" \
	grep -q "status success opcode RDMA_READ byte_len 8192; 8192 bytes in A's buffer, 0 differ" \
	<<<"$out"

check_done
