#!/usr/bin/env bash
# Runs every fuzz target in the module for FUZZTIME each (default 30s) and
# prints a line per target: its package, name, result and executions.
#
#   bash scripts/fuzz.sh [PACKAGE-PATTERN...]     (default ./...)
#
# Minimization of a new input is capped at FUZZMINIMIZETIME (default 1s):
# with seed corpora of real-shaped transcripts (tens of KB), the default
# cap of 60 s per input leaves almost no time for fuzzing itself.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-30s}
minimize=${FUZZMINIMIZETIME:-1s}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(./...)

failed=0
summary=()
for pkg in $(go list "${patterns[@]}"); do
	targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for target in $targets; do
		log=$(mktemp)
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" >"$log" 2>&1; then
			result=ok
		else
			result=FAIL
			failed=$((failed + 1))
			cat "$log" >&2
		fi
		execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
		summary+=("$(printf '%-4s %-48s %-28s %s execs' "$result" "${pkg#github.com/agentctl/agentctl/}" "$target" "${execs:-?}")")
		rm -f "$log"
	done
done

echo
echo "fuzz summary ($fuzztime per target)"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || { echo "$failed fuzz target(s) failed" >&2; exit 1; }
