#!/usr/bin/env bash
# loc.sh - lines of C per directory and per file (make loc), and the limit on
# a source file's length: a .c or .h file over LOC_MAX lines fails (split it).
#
#   scripts/loc.sh            the report: per directory, then per file (longest first)
#   scripts/loc.sh --check    only the files over the limit, and one summary line
#                             (make test runs this)
set -u
LOC_MAX=${LOC_MAX:-1200}   # the limit; the environment may lower it to look ahead
cd "$(dirname "$0")/.." || exit 2
check=0
[ "${1:-}" = "--check" ] && check=1

find . \( -path ./.git -o -path './build*' \) -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
    sed 's|^\./||' | sort | xargs wc -l | grep -v ' total$' |
    awk -v max="$LOC_MAX" -v check="$check" '
    {
        n = $1; f = $2; d = f; sub(/\/[^\/]*$/, "", d); if (d == f) d = "."
        lines[f] = n; dl[d] += n; df[d]++; total += n; files++
        if (n > max) over[f] = n
    }
    END {
        if (!check) {
            printf "%-20s %6s %8s\n", "directory", "files", "lines"
            for (d in dl) printf "%-20s %6d %8d\n", d, df[d], dl[d] | "sort"
            close("sort")
            printf "%-20s %6d %8d\n\n", "total", files, total
            for (f in lines) printf "%8d  %s\n", lines[f], f | "sort -rn"
            close("sort -rn")
        }
        bad = 0
        for (f in over) { printf "%s: %d lines, over the limit of %d: split it\n", f, over[f], max; bad++ }
        printf "loc: %d lines of C in %d files; %d over %d lines\n", total, files, bad, max
        exit bad > 0
    }'
