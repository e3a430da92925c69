#!/usr/bin/env bash
# No function in src/ over 100 lines (docs/development.md, "Short functions"): counts each
# function of src/**/*.c from the first line of its signature (a line at column 0 after a blank
# line, a comment, a preprocessor line or a declaration) to its closing brace at column 0, and
# names those over the limit. Usage: function_length.sh [LIMIT] [FILE...] (default: 100, every
# .c file under src/).
set -u
limit=${1:-100}
shift || true
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $# -eq 0 ]]; then
  mapfile -t files < <(find "$source_dir/src" -name '*.c' | sort)
  set -- "${files[@]}"
fi

long=$(awk -v limit="$limit" '
FNR == 1 { body = 0; sig = 0; name = "" }
!body && /^[A-Za-z_]/ && !sig { sig = FNR; name = $0 }
!body && (/^$/ || /^\/\*/ || /^ \*/ || /;[ \t]*$/ || /^#/) { sig = 0 }
!body && /^\{/ { body = 1; if (!sig) sig = FNR }
!body && /^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ && !/=/ { body = 1; sig = FNR; name = $0 }
body && /^\}/ {
        n = FNR - sig + 1
        if (n > limit) {
                sub(/\(.*/, "", name)
                k = split(name, word, /[ *]+/)
                printf "%s:%d: %s is %d lines\n", FILENAME, sig, word[k], n
        }
        body = 0; sig = 0
}' "$@")
if [[ -n $long ]]; then
  echo "functions over $limit lines (cut them along their own comment headings):"
  echo "${long//$source_dir\//}"
  exit 1
fi
echo "ok   no function over $limit lines in $# file(s)"
