#!/usr/bin/env bash
# mutate.sh [PKG…] — mutation testing with gremlins (github.com/go-gremlins/gremlins v0.6.0), one
# package at a time, and a table of the results.
#
# For each package (default: ./membership ./internal/machine ./internal/streammachine ./heartbeat ./tasks ./topology ./config ./stream) it runs
#
#	GOFLAGS=-count=1 gremlins unleash --workers 1 --timeout-coefficient $GREMLINS_TIMEOUT_COEFFICIENT -o … PKG
#
# and prints killed / lived / not covered / timed out, the efficacy killed/(killed+lived), the
# target (>= 90% for the member core: membership, heartbeat, internal/..., consume, commit, taskoffsets
# and integration/chaos, and for the stream runtime; >= 85% elsewhere) and PASS or BELOW.
#
# Each package is mutated in a snapshot of the module taken when its turn comes (the working tree,
# uncommitted files included, without .git), so edits made while it runs cannot mix into its figures.
#
# One worker and a generous timeout coefficient, because with several workers on a small shared
# machine every mutant's test run times out and the figures mean nothing. GOFLAGS=-count=1 so no
# mutant is judged by a cached test result.
#
# gremlins runs only mutants on lines its coverage profile marks as run, and Go's profile never
# covers the expression of a switch case, so every mutant of a `case x < y:` is NOT COVERED however
# well it is tested. Unless MUTATE_UNCOVERED=0, this script runs those mutants itself (the same token
# change, in a copy of the module, the package's tests with -failfast) and reports them in the
# columns "uncov k" (killed, or timed out) and "uncov l" (lived).
#
# A NOT COVERED mutant in a file this platform does not build (lock_windows.go on Linux) cannot be
# judged by tests run here: it is listed in the notes and left out of the figures.
#
# scripts/mutate-equivalent.txt lists mutants that are truly equivalent (no behaviour change is
# possible), each with its reason, by file, column, mutator and the text of its line (not the line
# number, which moves whenever code above it changes). A listed mutant that lives is counted in the
# "equiv" column and
# left out of the judged efficacy; a listed mutant of a package in the run that no longer lives (killed
# now, or no mutant matches the entry any more) is reported as STALE and fails the run, so the list
# cannot rot silently.
#
# The verdict uses the judged efficacy: killed/(killed+lived) over gremlins' mutants and the
# hand-run uncovered ones, equivalent mutants left out. A timed-out mutant counts as killed, whether
# gremlins or this script ran it (its tests did not pass); the "timed out" column counts both. The
# plain gremlins figure (without timeouts) is printed too. A package whose NOT COVERED mutants were
# not all run (MUTATE_UNCOVERED=0, or a change the script cannot make) is UNJUDGED, never PASS.
#
# Environment: GREMLINS (the binary; installed with go install when absent),
# GREMLINS_TIMEOUT_COEFFICIENT (default 10), MUTATE_UNCOVERED (default 1), MUTATE_OUT (where the
# JSON and logs go; default a temporary directory, kept and printed).
#
# Exits 1 when a package is BELOW its target or UNJUDGED, an equivalent entry is STALE, or gremlins
# fails, else 0.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

gremlins_version=v0.6.0
coefficient=${GREMLINS_TIMEOUT_COEFFICIENT:-10}
uncovered=${MUTATE_UNCOVERED:-1}
equivalents="$root/scripts/mutate-equivalent.txt"

if [ $# -eq 0 ]; then
	set -- ./membership ./internal/machine ./internal/streammachine ./heartbeat ./tasks ./topology ./config ./stream
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

# run_uncovered MODULE PKG REPORT OUT: run the NOT COVERED mutants of REPORT by hand; write their
# statuses to OUT as JSON.
run_uncovered() {
	python3 - "$@" "$coefficient" <<'EOF'
import json, os, shutil, subprocess, sys, tempfile, time

root, pkg, report_path, out_path, coef = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
OPS = [b"<=", b">=", b"==", b"!=", b"++", b"--", b"<", b">", b"+", b"-", b"*", b"/", b"%"]
MUTATIONS = {  # gremlins v0.6.0 internal/engine/mappings.go, the mutators enabled by default
    "ARITHMETIC_BASE": {b"+": b"-", b"-": b"+", b"*": b"/", b"/": b"*", b"%": b"*"},
    "CONDITIONALS_BOUNDARY": {b">=": b">", b">": b">=", b"<=": b"<", b"<": b"<="},
    "CONDITIONALS_NEGATION": {b"==": b"!=", b"!=": b"==", b">=": b"<", b">": b"<=", b"<=": b">", b"<": b">="},
    "INCREMENT_DECREMENT": {b"++": b"--", b"--": b"++"},
    "INVERT_NEGATIVES": {b"-": b"+"},
}
with open(report_path) as f:
    report = json.load(f)
todo = [(f["file_name"], m["line"], m["column"], m["type"])
        for f in report.get("files") or [] for m in f.get("mutations") or [] if m["status"] == "NOT COVERED"]
results = []
if todo:
    tmp = tempfile.mkdtemp(prefix="streamsgroup-uncovered.")
    try:
        mod = os.path.join(tmp, "module")
        shutil.copytree(root, mod, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        pdir, binary = os.path.join(mod, pkg), os.path.join(tmp, "pkg.test")
        env = dict(os.environ, GOFLAGS="-count=1")

        def build():
            return subprocess.run(["go", "test", "-c", "-o", binary, "./" + pkg], cwd=mod, env=env,
                                  capture_output=True).returncode == 0

        def run(timeout):
            try:
                rc = subprocess.run([binary, "-test.count=1", "-test.failfast"], cwd=pdir, env=env,
                                    capture_output=True, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                return "TIMED OUT"
            return "LIVED" if rc == 0 else "KILLED"

        if not build():
            sys.exit(f"mutate: {pkg} does not build in a copy of the module")
        # The package's files this platform builds: a mutant of another (lock_windows.go on Linux)
        # changes nothing these tests run, so it cannot be judged here.
        listed = subprocess.run(["go", "list", "-f", '{{join .GoFiles " "}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}',
                                 "./" + pkg], cwd=mod, env=env, capture_output=True, text=True)
        built = set(listed.stdout.split()) if listed.returncode == 0 else None
        start = time.monotonic()
        if run(None) != "LIVED":
            sys.exit(f"mutate: the tests of {pkg} fail without any mutant")
        timeout = max(10.0, coef * (time.monotonic() - start))
        for file, line, col, typ in todo:
            if built is not None and file not in built:
                results.append({"file_name": file, "line": line, "column": col, "type": typ, "status": "NOT BUILT"})
                continue
            path = os.path.join(pdir, file)
            with open(path, "rb") as f:
                orig = f.read()
            lines = orig.split(b"\n")
            text, i = lines[line - 1], col - 1
            tok = next((t for t in OPS if text[i:i + len(t)] == t), None)
            new = MUTATIONS.get(typ, {}).get(tok)
            if new is None:
                status = "UNKNOWN"
            else:
                lines[line - 1] = text[:i] + new + text[i + len(tok):]
                with open(path, "wb") as f:
                    f.write(b"\n".join(lines))
                status = run(timeout) if build() else "NOT VIABLE"
                with open(path, "wb") as f:
                    f.write(orig)
            results.append({"file_name": file, "line": line, "column": col, "type": typ, "status": status})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
with open(out_path, "w") as f:
    json.dump(results, f)
EOF
}

snap=
trap '[ -z "$snap" ] || rm -rf "$snap"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

status=0
results=()
for pkg in "$@"; do
	pkg="./${pkg#./}"
	pkg="${pkg%/}"
	name=${pkg#./}
	base="$out/${name//\//_}"
	json="$base.json"
	rm -f "$json" "$base.uncovered.json"
	echo "mutate: $pkg at $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes') (log $base.log)" >&2
	start=$(date +%s)
	# The module the package belongs to: the nearest go.mod above it (integration/chaos is a module of
	# its own); gremlins and the hand-run mutants run inside that module, the package relative to it.
	moddir=$name
	while [ "$moddir" != "." ] && [ ! -f "$root/$moddir/go.mod" ]; do moddir=$(dirname "$moddir"); done
	if [ "$moddir" = "." ]; then sub=$name; elif [ "$moddir" = "$name" ]; then sub=.; else sub=${name#"$moddir"/}; fi
	snap=$(mktemp -d "${TMPDIR:-/tmp}/streamsgroup-mutate-snapshot.XXXXXX")
	# A file edited while it is read makes tar exit 1 ("file changed as we read it"): the snapshot
	# is still a consistent copy of each file, so only worse failures stop the run.
	{ tar -C "$root" --exclude=./.git --warning=no-file-changed -cf - . || [ $? -eq 1 ]; } | tar -C "$snap" -xf -
	# gremlins given a module's root (./.) mutates every package under it; only the one named is
	# measured (for integration/chaos: the checker, not the cmd/chaos runner, whose code needs brokers).
	exclude=()
	if [ "$sub" = . ]; then exclude=(--exclude-files /); fi
	if ! (cd "$snap/$moddir" && GOFLAGS=-count=1 "$gremlins" unleash --workers 1 --timeout-coefficient "$coefficient" \
		"${exclude[@]}" --output "$json" "./$sub" >"$base.log" 2>&1) || [ ! -s "$json" ]; then
		echo "mutate: gremlins failed on $pkg (or was stopped before writing its report); the end of its log:" >&2
		tail -20 "$base.log" >&2
		rm -rf "$snap"
		status=1
		continue
	fi
	if [ "$uncovered" != 0 ]; then
		echo "mutate: $pkg: running the mutants gremlins could not see" >&2
		if ! run_uncovered "$snap/$moddir" "$sub" "$json" "$base.uncovered.json"; then
			rm -rf "$snap"
			status=1
			continue
		fi
	fi
	rm -rf "$base.src" && mkdir -p "$base.src" && cp "$snap/$name"/*.go "$base.src/"
	rm -rf "$snap"
	results+=("$name" "$base" "$(($(date +%s) - start))")
done

[ ${#results[@]} -gt 0 ] || exit 1

python3 - "$equivalents" "${results[@]}" <<'EOF' || status=1
import json, re, sys

equiv_file, rest = sys.argv[1], sys.argv[2:]

# mutate-equivalent.txt: "<package dir>/<file>:<column> <MUTATOR> <the line's code>", the code as
# in the source with leading and trailing white space removed; lines starting with '#' are comments.
equivalents = {}
try:
    with open(equiv_file) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"(\S+):(\d+)\s+([A-Z_]+)\s+(.+)$", line)
            if not m:
                sys.exit(f"mutate: {equiv_file}: cannot read {raw.strip()!r}")
            equivalents[(m[1], int(m[2]), m[3], m[4].strip())] = False
except FileNotFoundError:
    pass

def source_line(base, file, line):
    try:
        with open(f"{base}.src/{file}", encoding="utf-8", errors="replace") as f:
            return f.read().split("\n")[line - 1].strip()
    except (OSError, IndexError):
        return ""

# The member core (issue 21's list) and the stream runtime (issue 26) are held to 90%; the leaf
# parsers and models to 85%.
CORE = ("membership", "heartbeat", "internal", "consume", "commit", "taskoffsets", "integration/chaos", "stream")

def target(pkg):
    return 90.0 if any(pkg == c or pkg.startswith(c + "/") for c in CORE) else 85.0

def pct(killed, lived):
    return 100.0 * killed / (killed + lived) if killed + lived else float("nan")

rows, below, notes = [], False, []
for i in range(0, len(rest), 3):
    pkg, base, secs = rest[i], rest[i + 1], int(rest[i + 2])
    with open(base + ".json") as f:
        report = json.load(f)
    try:
        with open(base + ".uncovered.json") as f:
            by_hand = {(m["file_name"], m["line"], m["column"], m["type"]): m["status"] for m in json.load(f)}
    except FileNotFoundError:
        by_hand = None
    count = {"KILLED": 0, "LIVED": 0, "NOT COVERED": 0, "TIMED OUT": 0, "NOT VIABLE": 0}
    uk = ul = equiv = hand_to = unjudged = 0
    for file in report.get("files") or []:
        for m in file.get("mutations") or []:
            status = m["status"]
            count[status] = count.get(status, 0) + 1
            where = f"{pkg}/{file['file_name']}:{m['line']}:{m['column']} {m['type']}"
            key = (f"{pkg}/{file['file_name']}", m["column"], m["type"], source_line(base, file["file_name"], m["line"]))
            if status == "NOT COVERED" and by_hand is None:
                # Not run (MUTATE_UNCOVERED=0): no verdict for the package, and an equivalent entry
                # for it cannot be told stale.
                unjudged += 1
                if key in equivalents:
                    equivalents[key] = True
                notes.append(f"{where} NOT COVERED, not run (MUTATE_UNCOVERED=0)")
            elif status == "NOT COVERED":
                hand = by_hand.get((file["file_name"], m["line"], m["column"], m["type"]), "UNKNOWN")
                if hand == "KILLED":
                    uk += 1
                    continue
                if hand == "TIMED OUT":
                    # As for gremlins' own timeouts: the tests did not pass, so the mutant is caught.
                    hand_to += 1
                    notes.append(f"{where} NOT COVERED, TIMED OUT when run by hand (counted as killed)")
                    continue
                if hand == "NOT BUILT":
                    # A file this platform does not build (lock_windows.go on Linux): its mutants
                    # cannot be judged here, and are left out of the figures.
                    notes.append(f"{where} NOT COVERED, in a file not built on this platform (not judged)")
                    continue
                if hand == "UNKNOWN":
                    unjudged += 1
                if hand == "LIVED":
                    ul += 1
                    if key in equivalents:
                        equivalents[key] = True
                        equiv += 1
                        continue
                notes.append(f"{where} NOT COVERED, {hand} when run by hand")
            elif status == "LIVED":
                if key in equivalents:
                    equivalents[key] = True
                    equiv += 1
                    continue
                notes.append(f"{where} LIVED")
            elif status == "TIMED OUT":
                notes.append(f"{where} TIMED OUT (counted as killed)")
            elif status != "KILLED":
                notes.append(f"{where} {status}")
    k, l, to = count["KILLED"], count["LIVED"], count["TIMED OUT"] + hand_to
    # A timed-out mutant, whether gremlins or this script ran it, is caught (its tests did not pass)
    # and counts as killed in the judged figure; the plain figure is gremlins' own, without them.
    plain, judged = pct(k, l), pct(k + uk + to, l + ul - equiv)
    ok = judged >= target(pkg)  # False for nan: a package with no killed or lived mutant has no figure
    verdict = "PASS" if ok else "BELOW"
    if ok and unjudged:
        verdict, ok = "UNJUDGED", False  # uncovered mutants whose fate is unknown: no PASS on them
    below |= not ok
    rows.append((pkg, k, l, equiv, count["NOT COVERED"], uk if by_hand is not None else "-",
                 ul if by_hand is not None else "-", to, count["NOT VIABLE"],
                 plain, judged, target(pkg), verdict, secs))

for n in notes:
    print(n)
stale = [k for k, seen in equivalents.items() if not seen and any(k[0].startswith(r[0] + "/") for r in rows)]
for k in stale:
    print(f"STALE  {k[0]}:{k[1]} {k[2]} {k[3]!r} is listed as equivalent but did not live: update {equiv_file}")
print()
head = (f"{'package':<12} {'killed':>6} {'lived':>5} {'equiv':>5} {'not cov':>7} {'uncov k':>7} {'uncov l':>7} "
        f"{'timed out':>9} {'not viable':>10} {'efficacy':>8} {'judged':>7} {'target':>6}  verdict  time")
print(head)
print("-" * len(head))
for pkg, k, l, e, nc, uk, ul, to, nv, plain, judged, tgt, verdict, secs in rows:
    print(f"{pkg:<12} {k:>6} {l:>5} {e:>5} {nc:>7} {uk:>7} {ul:>7} {to:>9} {nv:>10} {plain:>7.1f}% {judged:>6.1f}% "
          f"{tgt:>5.0f}%  {verdict:<7}  {secs}s")
print()
print("efficacy = killed/(killed+lived) as gremlins ran them; judged = the same over gremlins' mutants and the")
print("NOT COVERED ones run by hand (uncov k/l), timed out ones (gremlins' and by hand) counted as killed, less the")
print("equivalent mutants of scripts/mutate-equivalent.txt. UNJUDGED: NOT COVERED mutants were not run (or their")
print("change could not be made), so the package has no verdict. A STALE equivalent entry fails the run.")
sys.exit(1 if below or stale else 0)
EOF

echo "mutate: reports in $out" >&2
exit "$status"
