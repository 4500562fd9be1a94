#!/usr/bin/env bash
# callsites.sh - the call-site macros of include/tjit.h, generated from its
# own declarations: every function returning tj_tensor * (TJ_BINARY_DECL rows
# give NAME and NAME_s) and every int function whose first parameter is a
# tj_tensor, tj_compiled or tj_optimizer pointer. Each becomes
#   #define tj_NAME(...) (tj__callsite(__FILE__, __LINE__), tj_NAME(__VA_ARGS__))
# in OUT (include/tjit_callsites.h, which tjit.h includes at its end; kept out
# of tjit.h so the header stays under make loc's limit).
#
#   scripts/callsites.sh [--check|--update] [HEADER [OUT]]
#     (none)    print OUT's content
#     --check   exit 1 when OUT differs (make test)
#     --update  rewrite OUT when it differs (make, make callsites)
set -euo pipefail
mode=print
case "${1:-}" in --check|--update) mode=${1#--}; shift ;; esac
header=${1:-include/tjit.h}
out=${2:-$(dirname "$header")/tjit_callsites.h}

names() {
    sed '/callsites: begin/,/callsites: end/d' "$header" | {
        sed -nE 's/^tj_tensor \*(tj_[a-z0-9_]+)\(.*/\1/p;
                 s/^TJ_BINARY_DECL\(([a-z0-9_]+)\).*/tj_\1\ntj_\1_s/p;
                 s/^int (tj_[a-z0-9_]+)\((tj_tensor|tj_compiled|tj_optimizer) \*.*/\1/p'
    }
}

block() {
    echo '/* tjit_callsites.h - the call-site macros of tjit.h (included at its end):'
    echo ' * generated from its declarations by scripts/callsites.sh (make callsites;'
    echo ' * make test checks it), do not edit. #define TJ_NO_CALLSITE leaves them out. */'
    echo '#ifndef TJIT_CALLSITES_H'
    echo '#define TJIT_CALLSITES_H'
    echo '/* callsites: begin */'
    echo '#ifndef TJ_NO_CALLSITE'
    names | while read -r n; do
        printf '#define %s(...) (tj__callsite(__FILE__, __LINE__), %s(__VA_ARGS__))\n' "$n" "$n"
    done
    echo '#endif'
    echo '/* callsites: end */'
    echo '#endif /* TJIT_CALLSITES_H */'
}

current() { [ -f "$out" ] && cat "$out"; }

case $mode in
print) block ;;
check)
    if ! diff <(current) <(block) >/dev/null; then
        echo "$out: the call-site macros are out of date (make callsites)" >&2
        exit 1
    fi ;;
update)
    new=$(block)
    if [ "$(current)" != "$new" ]; then
        tmp=$(mktemp "$out.XXXXXX")
        printf '%s\n' "$new" > "$tmp"
        chmod 644 "$tmp"
        mv "$tmp" "$out"
        echo "$out: call-site macros regenerated ($(names | wc -l) entry points)" >&2
    fi ;;
esac
