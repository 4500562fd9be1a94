#!/usr/bin/env bash
# test-install.sh - checks `make install` the way a user of the library meets
# it: installs into a temporary DESTDIR, checks the files, the shared
# library's soname and exports (tj_* and nothing else, every public function
# among them), builds the README's example against the installed copy alone
# with pkg-config (shared and static) and runs it, then `make uninstall`.
# Prints TAP lines (ok N - what / not ok N - what); exit 1 on any failure.
#
#   BUILD=build bash scripts/test-install.sh
set -u
BUILD=${BUILD:-${TJ_BUILD:-build}}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root prefix=/usr/local
root=$dest$prefix
n=0 bad=0
check() {   # check "what" command...: one TAP line
    local what=$1; shift
    n=$((n + 1))
    if out=$("$@" 2>&1); then echo "ok $n - $what"
    else bad=$((bad + 1)); echo "not ok $n - $what"; printf '%s\n' "$out" | sed 's/^/#   /' | head -20; fi
}

check "make install DESTDIR=... PREFIX=$prefix" \
    make -C "$src" --no-print-directory -s install BUILD="$BUILD" DESTDIR="$dest" PREFIX="$prefix"

ver=$(sed -n 's/^Version: //p' "$root/lib/pkgconfig/tjit.pc")
major=${ver%%.*}
files=(lib/libtjit.so."$ver" lib/libtjit.a lib/pkgconfig/tjit.pc include/tjit.h include/tjit_profile.h include/tjit_train.h include/tjit_inspect.h
       bin/tjit share/doc/tjit/README.md share/doc/tjit/LICENSE share/doc/tjit/CHANGELOG.md)
check "installed files present" bash -c 'cd "$1" && shift && for f; do [ -f "$f" ] || { echo "missing $f"; exit 1; }; done' \
    _ "$root" "${files[@]}"
check "libtjit.so -> libtjit.so.$major -> libtjit.so.$ver" bash -c \
    '[ "$(readlink "$1/libtjit.so")" = "libtjit.so.$2" ] && [ "$(readlink "$1/libtjit.so.$2")" = "libtjit.so.$3" ]' \
    _ "$root/lib" "$major" "$ver"
check "soname is libtjit.so.$major" bash -c \
    'readelf -d "$1" | grep -q "SONAME.*\[libtjit.so.$2\]"' _ "$root/lib/libtjit.so.$ver" "$major"

# Exports: every defined dynamic symbol is tj_*, and every function the
# public headers declare is among them.
nm -D --defined-only "$root/lib/libtjit.so.$ver" | awk '{print $3}' | sort -u > "$tmp/exported"
check "nm -D: only tj_* exported" bash -c '! grep -v "^tj_" "$1"' _ "$tmp/exported"
printf '#include <tjit.h>\n#include <tjit_inspect.h>\n' |
    cc -E -P -I"$root/include" - | grep -o 'tj_[a-z0-9_]*[[:space:]]*(' | tr -d ' (' | sort -u > "$tmp/declared"
check "every public function is exported ($(wc -l < "$tmp/declared") declared)" bash -c \
    '[ -s "$1" ] && ! comm -23 "$1" "$2" | grep .' _ "$tmp/declared" "$tmp/exported"

# The README's first C example, built in an empty directory with nothing from
# the source tree: pkg-config pointed at the staged tree.
mkdir -p "$tmp/user" && cd "$tmp/user" || exit 1
awk '/^```c$/ {on=1; next} on && /^```$/ {exit} on' "$src/README.md" > ex.c
pc() { PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --define-variable=prefix="$root" "$@" tjit; }
export -f pc; export root
check "README example found" grep -q 'tj_scope_begin' ex.c
check "pkg-config --modversion = $ver, the header's version" bash -c '[ "$(pc --modversion)" = "$1" ]' _ "$ver"
check "README example builds against libtjit.so (pkg-config --cflags --libs)" bash -c \
    'cc -std=c11 -Wall -Wextra -Werror ex.c -o ex-shared $(pc --cflags --libs) -Wl,-rpath,"$root/lib"'
check "it runs, on the installed libtjit.so.$major" bash -c \
    './ex-shared > out && grep -q "^y: f32\[64,512\]" out && ldd ex-shared | grep -q "libtjit.so.$1 => $root/lib/"' _ "$major"
check "README example builds against libtjit.a (pkg-config --static)" bash -c \
    'cc -std=c11 -Wall -Wextra -Werror ex.c -o ex-static $(pc --cflags) $(pc --static --libs | sed "s/-ltjit/-l:libtjit.a/")'
check "it runs, with no libtjit.so" bash -c './ex-static > out && grep -q "^y: f32" out && ! ldd ex-static | grep -q libtjit'
cat > ver.c <<'C'
#include <stdio.h>
#include <string.h>
#include <tjit.h>
int main(void) { printf("%s\n", tj_version()); return strcmp(tj_version(), TJ_VERSION) != 0; }
C
check "tj_version() = TJ_VERSION = $ver" bash -c \
    'cc -std=c11 ver.c -o ver $(pc --cflags --libs) -Wl,-rpath,"$root/lib" && [ "$(./ver)" = "$1" ]' _ "$ver"
check "installed tjit --version" bash -c '[ "$("$root/bin/tjit" --version)" = "tjit $1" ]' _ "$ver"
cd "$src" || exit 1

check "make uninstall removes every file" bash -c \
    'make -C "$1" --no-print-directory -s uninstall BUILD="$2" DESTDIR="$3" PREFIX="$4" && [ -z "$(find "$3" ! -type d)" ]' \
    _ "$src" "$BUILD" "$dest" "$prefix"
echo "1..$n"
[ "$bad" -eq 0 ]
