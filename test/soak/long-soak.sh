#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Release check: the soak at millions of messages over several fault seeds.
#   test/soak/long-soak.sh [MESSAGES [SEEDS...]]   (default 5000000, seeds 1 2 3)
# Needs a build: usertools/srnic build (uses build/test/soak/test_soak).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/test/soak/test_soak
[ -x "$bin" ] || { echo "build first: usertools/srnic build" >&2; exit 1; }
msgs=${1:-5000000}
shift || true
seeds=("${@:-1 2 3}")
for seed in ${seeds[@]}; do
	echo "== seed $seed, $msgs messages"
	SRNIC_SOAK_MSGS=$msgs SRNIC_SOAK_SEED=$seed "$bin"
done
