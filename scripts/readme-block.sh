#!/usr/bin/env bash
# scripts/readme-block.sh NAME LANG OUT: README.md's quick start NAME as a reader copies it.
#
# The quick start is the one ```LANG fence between the marker comments `<!-- quickstart-NAME`
# (which may go on with a remark) and `<!-- /quickstart-NAME -->`; what the fence holds is
# written to OUT. Fails, saying why, when the markers or the fence are missing or when the
# program has more than 30 lines (README keeps every quick start that short). Used by the
# test scripts of C, C++, Java and Julia, so the README cannot drift from what they run.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ "$#" -eq 3 ] || { echo "usage: scripts/readme-block.sh NAME LANG OUT" >&2; exit 2; }
name="$1" lang="$2" out="$3"
open="<!-- quickstart-$name"
close="<!-- /quickstart-$name -->"
block="$(awk -v start="$open" -v stop="$close" '
    $0 == stop { on = 0 }
    on { print }
    index($0, start) == 1 && (substr($0, length(start) + 1, 1) ~ /[ :]/) { on = 1 }
' "$REPO/README.md")"
first="$(printf '%s\n' "$block" | head -n 1)"
last="$(printf '%s\n' "$block" | tail -n 1)"
if [ "$first" != "\`\`\`$lang" ] || [ "$last" != '```' ]; then
    echo "README.md: no \`\`\`$lang block between $open --> and $close"
    exit 1
fi
printf '%s\n' "$block" | sed '1d;$d' >"$out"
lines=$(wc -l <"$out")
echo "README.md's $name quick start: $lines lines"
[ "$lines" -le 30 ] || { echo "README.md's $name quick start has $lines lines: at most 30"; exit 1; }
