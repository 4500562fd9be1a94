#!/usr/bin/env bash
# callsites.sh - the call-site macros of include/tjit.h, generated from its
# own declarations: every function returning tj_tensor * (TJ_BINARY_DECL rows
# give NAME and NAME_s) and every int function whose first parameter is a
# tj_tensor, tj_compiled or tj_optimizer pointer. Each becomes
#   #define tj_NAME(...) (tj__callsite(__FILE__, __LINE__), tj_NAME(__VA_ARGS__))
# between the lines "/* callsites: begin */" and "/* callsites: end */".
#
#   scripts/callsites.sh [--check|--update] [HEADER]
#     (none)    print the block
#     --check   exit 1 when HEADER's block differs (make test)
#     --update  rewrite HEADER's block when it differs (make, make callsites)
set -euo pipefail
mode=print
case "${1:-}" in --check|--update) mode=${1#--}; shift ;; esac
header=${1:-include/tjit.h}

names() {
    sed '/callsites: begin/,/callsites: end/d' "$header" | {
        sed -nE 's/^tj_tensor \*(tj_[a-z0-9_]+)\(.*/\1/p;
                 s/^TJ_BINARY_DECL\(([a-z0-9_]+)\).*/tj_\1\ntj_\1_s/p;
                 s/^int (tj_[a-z0-9_]+)\((tj_tensor|tj_compiled|tj_optimizer) \*.*/\1/p'
    }
}

block() {
    echo '/* callsites: begin */'
    echo '#ifndef TJ_NO_CALLSITE'
    names | while read -r n; do
        printf '#define %s(...) (tj__callsite(__FILE__, __LINE__), %s(__VA_ARGS__))\n' "$n" "$n"
    done
    echo '#endif'
    echo '/* callsites: end */'
}

current() { sed -n '/callsites: begin/,/callsites: end/p' "$header"; }

case $mode in
print) block ;;
check)
    if ! diff <(current) <(block) >/dev/null; then
        echo "$header: the call-site macros are out of date (make callsites)" >&2
        exit 1
    fi ;;
update)
    new=$(block)
    if [ "$(current)" != "$new" ]; then
        tmp=$(mktemp "$header.XXXXXX")
        awk -v blk="$new" '
            /callsites: begin/ { print blk; skip = 1; next }
            /callsites: end/ { skip = 0; next }
            !skip { print }' "$header" > "$tmp"
        chmod --reference="$header" "$tmp"
        mv "$tmp" "$header"
        echo "$header: call-site macros regenerated ($(names | wc -l) entry points)" >&2
    fi ;;
esac
