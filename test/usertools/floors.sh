#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# usertools/srnic-floors on this tree and its build: no include nor call
# runs back up a floor (doc/architecture.md). Then that it, and the build,
# catch one that does: a back-include in a copy of the sources (the
# checker names it; the file does not compile with its floor's include
# paths, the command of compile_commands.json), and a call from the engine
# into the control path added to a copy of the engine's library (the
# checker names it, and the new function without the engine's prefix), and
# a circle between two files of srnic-perf (named).
#   floors.sh SOURCE_DIR BUILD_DIR TMP_DIR
set -euo pipefail

src=$1
build=$2
tmp=$(mktemp -d "$3/floors.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=test/common/check.sh
. "$src/test/common/check.sh"
floors=$src/usertools/srnic-floors

out=$("$floors" --src "$src" "$build" 2>&1) && rc=0 || rc=$?
echo "$out"
check "this tree: no include nor call back up a floor (exit 0)" test "$rc" = 0

# A back-include: the wire layer reaching up for the object model.
mkdir -p "$tmp/src"
cp -r "$src/lib" "$src/drivers" "$tmp/src/"
sed -i '0,/^#include "/s//#include "rnic.h"\n#include "/' "$tmp/src/lib/wire/wire_parse.c"
out=$("$floors" --src "$tmp/src" 2>&1) && rc=0 || rc=$?
echo "$out"
check "a back-include: exit 1" test "$rc" = 1
check "a back-include: named (lib/wire/wire_parse.c includes rnic.h of lib/rnic)" \
	grep -q 'include: lib/wire/wire_parse.c:[0-9]* includes rnic.h of lib/rnic, above it' \
	<<<"$out"

# ... and it does not compile: the same command as the build's for that
# file, on the copy (the unmodified file compiles with it).
cmd=$(/usr/bin/python3 - "$build/compile_commands.json" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1])):
    if e["file"].endswith("lib/wire/wire_parse.c"):
        print(e["directory"])
        print(e["command"])
        break
PY
)
dir=$(head -n 1 <<<"$cmd")
cmd=$(tail -n 1 <<<"$cmd")
compile() { # FILE: the build's command for wire_parse.c on FILE
	(cd "$dir" && eval "${cmd/ -o * -c */ -o $tmp/out.o -c $1}")
}
check "wire_parse.c compiles with its floor's include paths" compile "$src/lib/wire/wire_parse.c"
out=$(compile "$tmp/src/lib/wire/wire_parse.c" 2>&1) && rc=0 || rc=$?
check "with the back-include it does not (rnic.h not found)" \
	bash -c "[ $rc != 0 ] && grep -q 'rnic.h: No such file' <<<'${out//\'/}'"

# A call back up: the engine's library with one more object that calls
# srnic_poll_cq() (the control path's), in a copy of the build's objects.
mkdir -p "$tmp/build/lib" "$tmp/build/drivers"
cp -as "$(cd "$build" && pwd)/lib/." "$tmp/build/lib/"
cp -as "$(cd "$build" && pwd)/drivers/." "$tmp/build/drivers/"
rm "$tmp/build/lib/libsrnic_engine.a"
printf 'int srnic_poll_cq(void);\nint floors_up(void) { return srnic_poll_cq(); }\n' >"$tmp/up.c"
cc -c -o "$tmp/up.o" "$tmp/up.c"
# (the build's archive is thin: a new one from its objects)
ar rc "$tmp/build/lib/libsrnic_engine.a" "$build"/lib/libsrnic_engine.a.p/*.o "$tmp/up.o"
out=$("$floors" --src "$src" "$tmp/build" 2>&1) && rc=0 || rc=$?
echo "$out"
check "a call back up: exit 1" test "$rc" = 1
check "a call back up: named (lib/engine calls srnic_poll_cq, defined in lib/core)" \
	grep -q 'call: lib/engine calls srnic_poll_cq, defined in lib/core, above it' <<<"$out"
check "... and its function, floors_up, has not the engine's prefix (eng_)" \
	grep -q 'prefix: lib/engine defines floors_up: neither eng_\* nor declared' <<<"$out"

# A circle inside a folder that must have none: two more srnic-perf
# objects, each calling the other.
mkdir -p "$tmp/build/app/srnic-perf/srnic-perf.p"
cp -s "$(cd "$build" && pwd)"/app/srnic-perf/srnic-perf.p/*.o "$tmp/build/app/srnic-perf/srnic-perf.p/"
printf 'int floors_b(void);\nint floors_a(void) { return floors_b(); }\n' >"$tmp/a.c"
printf 'int floors_a(void);\nint floors_b(void) { return floors_a(); }\n' >"$tmp/b.c"
cc -c -o "$tmp/build/app/srnic-perf/srnic-perf.p/app_srnic-perf_a.c.o" "$tmp/a.c"
cc -c -o "$tmp/build/app/srnic-perf/srnic-perf.p/app_srnic-perf_b.c.o" "$tmp/b.c"
out=$("$floors" --src "$src" "$tmp/build" 2>&1) && rc=0 || rc=$?
echo "$out"
check "a circle in srnic-perf: exit 1" test "$rc" = 1
check "a circle in srnic-perf: named (a.c -> b.c -> a.c)" \
	grep -q 'circle: in app/srnic-perf, a.c -> b.c -> a.c' <<<"$out"

check_done
