#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the core module and of plugin/sgpebble, one after another, each
# for FUZZTIME (default 10s), and fails on the first target that fails. The targets are found with
# `go test -list '^Fuzz'`, so a new one is fuzzed without editing this file; a run that finds none
# fails too (the listing broke). A failing input is kept under the package's testdata/fuzz, where
# plain `go test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
fuzztime=${FUZZTIME:-10s}
total=0
for mod in . plugin/sgpebble; do
	for pkg in $(cd "$mod" && $go list ./...); do
		targets=$(cd "$mod" && $go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
		for target in $targets; do
			echo "=== $pkg $target ($fuzztime)"
			(cd "$mod" && $go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg")
			total=$((total + 1))
		done
	done
done
if [ "$total" -eq 0 ]; then
	echo "fuzz.sh: no fuzz target found: the listing is broken" >&2
	exit 1
fi
echo "fuzz.sh: $total fuzz targets ran for $fuzztime each"
