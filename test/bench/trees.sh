# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by ab.sh and icount.sh: a built srnic-perf for a commit or a tree.
#   perf_binary REF      prints the path of REF's srnic-perf
# REF is a build directory that holds app/srnic-perf/srnic-perf (used as it
# is), or anything git names as a commit: that commit is checked out in a
# git worktree of its own under $AB_DIR (default /tmp/srnic-ab, outside the
# source tree), set up there with the project's defaults (release, LTO,
# `meson setup build .`) plus -Dtests=false (the tests are not needed and
# do not change the library), and srnic-perf built. A worktree left by an
# earlier run is reused, so a commit is built once; ccache makes the rest
# of a bisection cheap. Build logs: $AB_DIR/<commit>-<build dir>.log.

AB_DIR=${AB_DIR:-/tmp/srnic-ab}
# What every tree is built with, old or new alike (meson setup options).
AB_MESON_OPTS=(-Dtests=false)
# the build directory's name in the worktree (icount.sh: build-g, the same
# code with line information, -Ddebug=true)
AB_BUILD=${AB_BUILD:-build}
AB_PERF=app/srnic-perf/srnic-perf

perf_binary() {
	local ref=$1 sha wt log

	if [ -d "$ref" ]; then
		[ -x "$ref/$AB_PERF" ] || { echo "$ref: no $AB_PERF in it (build it first)" >&2; return 1; }
		echo "$(cd "$ref" && pwd)/$AB_PERF"
		return 0
	fi
	sha=$(git rev-parse --verify --quiet "$ref^{commit}") ||
		{ echo "$ref: neither a build directory nor a commit" >&2; return 1; }
	sha=${sha:0:12}
	wt=$AB_DIR/$sha
	log=$AB_DIR/$sha-$AB_BUILD.log
	mkdir -p "$AB_DIR"
	if [ ! -x "$wt/$AB_BUILD/$AB_PERF" ]; then
		if [ ! -d "$wt" ]; then
			git worktree prune
			git worktree add --detach --quiet "$wt" "$sha" >&2 ||
				{ echo "$ref: git worktree add $wt failed" >&2; return 1; }
		fi
		echo "building $ref ($sha) in $wt/$AB_BUILD (log: $log)" >&2
		if ! { [ -f "$wt/$AB_BUILD/build.ninja" ] ||
			(cd "$wt" && meson setup "$AB_BUILD" . "${AB_MESON_OPTS[@]}"); } >"$log" 2>&1 ||
			! ninja -C "$wt/$AB_BUILD" "$AB_PERF" >>"$log" 2>&1; then
			echo "$ref: build failed, see $log" >&2
			tail -n 20 "$log" >&2
			return 1
		fi
	fi
	echo "$wt/$AB_BUILD/$AB_PERF"
}
