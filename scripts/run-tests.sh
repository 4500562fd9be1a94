#!/usr/bin/env bash
# run-tests.sh - runs each cmocka suite given on the command line, shows their
# output, and ends with one line "N passed, N failed" (exit 1 if any failed).
set -u
passed=0 failed=0
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    passed=$((passed + ${p:-0}))
    if [ -n "$f" ]; then failed=$((failed + f))
    elif [ $rc -ne 0 ]; then failed=$((failed + 1)); echo "suite $t exited with $rc" >&2; fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
