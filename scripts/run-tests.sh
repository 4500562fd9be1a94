#!/usr/bin/env bash
# run-tests.sh - runs each suite given on the command line and prints one line
# per suite (name, passed, failed, seconds); a suite's own output is shown
# only when it failed, but for its "#summary ..." lines (counts a suite
# reports, e.g. test_opinfo's samples per mode), shown under its line. Ends
# with one line "N passed, N failed" (exit 1 if any failed).
#
# A suite is a cmocka binary (counted from its [  PASSED  ] / [  FAILED  ]
# lines) or a script (*.sh) printing TAP lines "ok N - ..." / "not ok N - ...";
# a script's "# summary: ..." lines are shown under its line too.
# A suite that exits non-zero without reporting a failure counts one.
set -u
passed=0 failed=0
for t in "$@"; do
    t0=$(date +%s.%N)
    if [ "${t%.sh}" != "$t" ]; then
        out=$(bash "$t" 2>&1); rc=$?
        p=$(printf '%s\n' "$out" | grep -c '^ok ')
        f=$(printf '%s\n' "$out" | grep -c '^not ok ')
    else
        out=$("$t" 2>&1); rc=$?
        p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
        f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    fi
    p=${p:-0} f=${f:-0}
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1 && out="$out
suite $t exited with $rc"
    secs=$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.2f", $2 - $1}')
    printf '%-24s %5d passed %4d failed %8s s\n' "$(basename "$t")" "$p" "$f" "$secs"
    printf '%s
' "$out" | sed -n -e 's/^# summary: /    /p' -e 's/^#summary /    /p'
    [ "$f" -ne 0 ] && printf '%s\n' "$out" | sed 's/^/    /'
    passed=$((passed + p)) failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
