#!/usr/bin/env bash
# check-layers.sh - fails when a file includes a header from a layer it must
# not (make check-layers, run by make test).
#
# The allowed arrows are written once, in the layer table of
# docs/architecture.md (the rows between its `layers: begin` and `layers: end`
# markers: a layer, then the layers or single headers it may include; a file
# may always include its own layer). Temporary exceptions sit in the table
# under it (`layer-exceptions` markers): a file or glob, what it may include
# besides, and when the row is removed. An exception nothing needs any more
# is reported, to be deleted.
#
# Every #include "..." (and #include <...> that names a file under include/)
# of the .c, .h and .def files under the layers' directories is resolved
# like the compiler does (the including file's directory, then -Iinclude);
# the layer of a file is the first directory of its path.
#
#   scripts/check-layers.sh [ROOT]       checks the tree at ROOT (default: this repo)
#   scripts/check-layers.sh --self-test  checks that it catches a forbidden include,
#                                        one that resolves nowhere and a C file in
#                                        no layer, and reports an unused exception
set -u

self_test() {
    local tmp rc=0 out
    tmp=$(mktemp -d) || exit 1
    mkdir -p "$tmp/docs" "$tmp/ir" "$tmp/passes" "$tmp/tools" "$tmp/include"
    cat > "$tmp/docs/architecture.md" <<'EOF'
<!-- layers: begin -->
| `include` | |
| `ir` | `include` |
| `passes` | `include`, `ir` |
| `tools` | `include` |
<!-- layers: end -->
<!-- layer-exceptions: begin -->
| `tools/old.c` | `passes` | removed when tools/old.c goes |
| `tools/gone.c` | `passes` | removed when tools/gone.c goes |
<!-- layer-exceptions: end -->
EOF
    printf '#include "../include/pub.h"\n' > "$tmp/ir/graph.h"
    : > "$tmp/include/pub.h"
    printf '#include "../ir/graph.h"\n#include <stdio.h>\n' > "$tmp/passes/ok.c"
    printf '#include "../passes/ok.c"\n' > "$tmp/tools/old.c"
    printf '#include <pub.h>\n' > "$tmp/tools/t.c"
    out=$("$0" "$tmp" 2>&1) || { echo "self-test: a clean tree failed: $out"; rc=1; }
    case $out in *"tools/gone.c"*) ;; *) echo "self-test: the unused exception was not reported"; rc=1;; esac
    printf '#include "../passes/ok.c"\n' > "$tmp/ir/bad.c"
    out=$("$0" "$tmp" 2>&1) && { echo "self-test: ir including passes passed"; rc=1; }
    case $out in *"ir/bad.c:1: includes passes/ok.c"*) ;; *) echo "self-test: wrong report: $out"; rc=1;; esac
    rm "$tmp/ir/bad.c"
    printf '#include "../ir/graph.h"\n' > "$tmp/tools/new.c"
    "$0" "$tmp" > /dev/null 2>&1 && { echo "self-test: tools/new.c including ir passed"; rc=1; }
    rm "$tmp/tools/new.c"
    printf '#include "nowhere.h"\n' > "$tmp/passes/lost.c"
    "$0" "$tmp" > /dev/null 2>&1 && { echo "self-test: an include that resolves nowhere passed"; rc=1; }
    rm "$tmp/passes/lost.c"
    mkdir "$tmp/stray" && : > "$tmp/stray/x.c"
    "$0" "$tmp" > /dev/null 2>&1 && { echo "self-test: a C file outside every layer passed"; rc=1; }
    rm -rf "$tmp"
    [ $rc -eq 0 ] && echo "check-layers self-test: ok"
    return $rc
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
    exit $?
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
table=$root/docs/architecture.md
[ -f "$table" ] || { echo "check-layers: no $table" >&2; exit 2; }

# The rows between <!-- $1: begin --> and <!-- $1: end --> as "first-column
# tokens | second-column tokens" (the backticked words of each).
rows() {
    sed -n "/<!-- $1: begin -->/,/<!-- $1: end -->/p" "$table" | grep '^| *`' |
        awk -F'|' 'function ticks(s,   out) {
                       out = ""
                       while (match(s, /`[^`]*`/)) {
                           out = out " " substr(s, RSTART + 1, RLENGTH - 2)
                           s = substr(s, RSTART + RLENGTH)
                       }
                       return out
                   }
                   { print ticks($2) "|" ticks($3) }'
}
arrows=$(rows layers)
exceptions=$(rows layer-exceptions)
[ -n "$arrows" ] || { echo "check-layers: no layer table in $table" >&2; exit 2; }
layers=$(printf '%s\n' "$arrows" | cut -d'|' -f1)

cd "$root" || exit 2
dirs=$(for l in $layers; do [ -d "$l" ] && echo "$l"; done)
# shellcheck disable=SC2086
files=$(find $dirs -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort)
all=$(find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||')

{
    printf '%s\n' "$arrows" | sed 's/^/A|/'
    printf '%s\n' "$exceptions" | sed '/^$/d; s/^/E|/'
    printf '%s\n' "$all" | sed 's/^/F|/'
    # shellcheck disable=SC2086
    grep -Hn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' $files | sed 's/^/I|/'
} | awk -F'|' '
function trim(s) { gsub(/^ +| +$/, "", s); return s }
function norm(p,   n, i, parts, out, k) {   # a/b/../c -> a/c
    n = split(p, parts, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
        out[++k] = parts[i]
    }
    p = ""
    for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
    return p
}
function glob_re(g) { gsub(/\./, "\\.", g); gsub(/\*/, "[^/]*", g); return "^" g "$" }
function layer_of(p) { sub(/\/.*/, "", p); return p }
function allows(list, target,   n, i, w) {   # list: words, each a layer or a path
    n = split(list, w, " ")
    for (i = 1; i <= n; i++)
        if (w[i] == "anything" || w[i] == layer_of(target) || w[i] == target) return 1
    return 0
}
$1 == "A" { allowed[trim($2)] = $3; next }
$1 == "E" { ne++; eglob[ne] = trim($2); elist[ne] = $3; eused[ne] = 0; next }
$1 == "F" {
    exists[$2] = 1
    if ($2 ~ /\.(c|h|def)$/ && !(layer_of($2) in allowed)) {
        printf "%s: a source file in no layer (add its directory to the table in docs/architecture.md)\n", $2
        bad++
    }
    next
}
$1 == "I" {
    line = substr($0, 3)
    split(line, f, ":"); file = f[1]; lno = f[2]
    inc = line; sub(/^[^:]*:[^:]*:[[:space:]]*#[[:space:]]*include[[:space:]]*/, "", inc)
    angle = substr(inc, 1, 1) == "<"
    inc = substr(inc, 2); sub(/[">].*/, "", inc)
    dir = file; sub(/\/[^\/]*$/, "", dir)
    target = ""
    if (!angle && exists[norm(dir "/" inc)]) target = norm(dir "/" inc)
    else if (exists[norm("include/" inc)]) target = norm("include/" inc)
    else if (angle) next   # a system header
    if (target == "") { printf "%s:%s: includes \"%s\", which is no file of the tree\n", file, lno, inc; bad++; next }
    from = layer_of(file); to = layer_of(target)
    checked++
    if (from == to || allows(allowed[from], target)) next
    for (e = 1; e <= ne; e++)
        if (file ~ glob_re(eglob[e]) && allows(elist[e], target)) { eused[e] = 1; break }
    if (e <= ne) { excepted++; next }
    may = trim(allowed[from]); gsub(/ +/, ", ", may)
    printf "%s:%s: includes %s: layer %s may include only %s\n", file, lno, target, from,
           (may == "" ? "itself" : may " and itself")
    bad++
}
END {
    for (e = 1; e <= ne; e++)
        if (!eused[e])
            printf "check-layers: the exception for %s (%s) is no longer needed: remove its row from docs/architecture.md\n", eglob[e], trim(elist[e])
    printf "check-layers: %d includes checked, %d allowed by a temporary exception, %d errors\n", checked, excepted, bad
    exit bad > 0
}'
