#!/usr/bin/env bash
# mutate.sh [PKG…] — mutation testing with gremlins (github.com/go-gremlins/gremlins v0.6.0), one
# package at a time, and a table of the results.
#
# For each package (default: ./membership ./heartbeat ./tasks ./topology ./config) it runs
#
#	GOFLAGS=-count=1 gremlins unleash --workers 1 --timeout-coefficient $GREMLINS_TIMEOUT_COEFFICIENT -o … PKG
#
# and prints killed / lived / not covered / timed out, the efficacy killed/(killed+lived), the
# target (>= 90% for membership and heartbeat, >= 85% elsewhere) and PASS or BELOW.
#
# One worker and a generous timeout coefficient, because with several workers on a small shared
# machine every mutant's test run times out and the figures mean nothing. GOFLAGS=-count=1 so no
# mutant is judged by a cached test result.
#
# scripts/mutate-equivalent.txt lists mutants that are truly equivalent (no behaviour change is
# possible), each with its reason. A listed mutant that lives is counted in the "equiv" column and
# left out of the efficacy the verdict uses ("judged"); the plain efficacy is printed as well. A
# listed mutant that no longer lives is reported as stale, so the list cannot rot silently.
#
# Environment: GREMLINS (the binary; installed with go install when absent),
# GREMLINS_TIMEOUT_COEFFICIENT (default 10), MUTATE_OUT (where the JSON and logs go; default a
# temporary directory, kept and printed).
#
# Exits 1 when a package is BELOW its target or gremlins fails, else 0.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

gremlins_version=v0.6.0
coefficient=${GREMLINS_TIMEOUT_COEFFICIENT:-10}
equivalents="$root/scripts/mutate-equivalent.txt"

if [ $# -eq 0 ]; then
	set -- ./membership ./heartbeat ./tasks ./topology ./config
fi

gremlins=${GREMLINS:-}
if [ -z "$gremlins" ]; then
	gremlins=$(command -v gremlins || true)
fi
if [ -z "$gremlins" ]; then
	gobin=$(go env GOBIN)
	gremlins="${gobin:-$(go env GOPATH)/bin}/gremlins"
	if [ ! -x "$gremlins" ]; then
		echo "mutate: installing gremlins $gremlins_version" >&2
		go install "github.com/go-gremlins/gremlins/cmd/gremlins@$gremlins_version"
	fi
fi

out=${MUTATE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/streamsgroup-mutate.XXXXXX")}
mkdir -p "$out"

status=0
results=()
for pkg in "$@"; do
	pkg="./${pkg#./}"
	pkg="${pkg%/}"
	name=${pkg#./}
	json="$out/${name//\//_}.json"
	log="$out/${name//\//_}.log"
	echo "mutate: $pkg (log $log)" >&2
	start=$(date +%s)
	if ! GOFLAGS=-count=1 "$gremlins" unleash --workers 1 --timeout-coefficient "$coefficient" \
		--output "$json" "$pkg" >"$log" 2>&1; then
		echo "mutate: gremlins failed on $pkg; the end of its log:" >&2
		tail -20 "$log" >&2
		status=1
		continue
	fi
	results+=("$name" "$json" "$(($(date +%s) - start))")
done

[ ${#results[@]} -gt 0 ] || exit 1

python3 - "$equivalents" "${results[@]}" <<'EOF' || status=1
import json, re, sys

equiv_file, rest = sys.argv[1], sys.argv[2:]

# mutate-equivalent.txt: "<package dir>/<file>:<line>:<column> <MUTATOR>  <reason>"; '#' starts a comment.
equivalents = {}
try:
    with open(equiv_file) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"(\S+):(\d+):(\d+)\s+([A-Z_]+)\b", line)
            if not m:
                sys.exit(f"mutate: {equiv_file}: cannot read {raw.strip()!r}")
            equivalents[(m[1], int(m[2]), int(m[3]), m[4])] = False
except FileNotFoundError:
    pass

def target(pkg):
    return 90.0 if pkg.split("/")[0] in ("membership", "heartbeat") else 85.0

def pct(killed, lived):
    return 100.0 * killed / (killed + lived) if killed + lived else float("nan")

rows, below = [], False
for i in range(0, len(rest), 3):
    pkg, path, secs = rest[i], rest[i + 1], int(rest[i + 2])
    with open(path) as f:
        report = json.load(f)
    count = {"KILLED": 0, "LIVED": 0, "NOT COVERED": 0, "TIMED OUT": 0, "NOT VIABLE": 0}
    equiv, lived = 0, []
    for file in report.get("files") or []:
        for m in file.get("mutations") or []:
            count[m["status"]] = count.get(m["status"], 0) + 1
            key = (f"{pkg}/{file['file_name']}", m["line"], m["column"], m["type"])
            if m["status"] in ("NOT COVERED", "TIMED OUT"):
                lived.append(f"{key[0]}:{key[1]}:{key[2]} {key[3]} {m['status']}")
            if m["status"] == "LIVED":
                if key in equivalents:
                    equivalents[key] = True
                    equiv += 1
                else:
                    lived.append(f"{key[0]}:{key[1]}:{key[2]} {key[3]} LIVED")
    k, l = count["KILLED"], count["LIVED"]
    plain, judged = pct(k, l), pct(k, l - equiv)
    ok = judged >= target(pkg)  # False for nan: a package with no killed or lived mutant has no figure
    below |= not ok
    rows.append((pkg, k, l, equiv, count["NOT COVERED"], count["TIMED OUT"], count["NOT VIABLE"],
                 plain, judged, target(pkg), "PASS" if ok else "BELOW", secs, lived))

for pkg, *_, lived in rows:
    for m in lived:
        print(m)
stale = [k for k, seen in equivalents.items() if not seen and any(k[0].startswith(r[0] + "/") for r in rows)]
for k in stale:
    print(f"STALE  {k[0]}:{k[1]}:{k[2]} {k[3]} is listed as equivalent but did not live: update {equiv_file}")
print()
head = f"{'package':<12} {'killed':>6} {'lived':>5} {'equiv':>5} {'not cov':>7} {'timed out':>9} {'not viable':>10} {'efficacy':>8} {'judged':>7} {'target':>6}  verdict  time"
print(head)
print("-" * len(head))
for pkg, k, l, e, nc, to, nv, plain, judged, tgt, verdict, secs, _ in rows:
    print(f"{pkg:<12} {k:>6} {l:>5} {e:>5} {nc:>7} {to:>9} {nv:>10} {plain:>7.1f}% {judged:>6.1f}% {tgt:>5.0f}%  {verdict:<7}  {secs}s")
print()
print("efficacy = killed/(killed+lived); judged leaves out the lived mutants listed in scripts/mutate-equivalent.txt")
sys.exit(1 if below else 0)
EOF

echo "mutate: reports in $out" >&2
exit "$status"
