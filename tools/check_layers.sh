#!/bin/sh
# tools/check_layers.sh [ROOT] — the include rules of docs/architecture.md,
# enforced: every #include "..." in the library and the CLI (tensor/,
# autograd/, nn/, zoo/, cli/, bertc.h) must be allowed by the table under
# "## Who may include whom" in ROOT/docs/architecture.md, so a lower layer
# never includes a higher one. The table is read, not copied here: change
# the rules in the document and this check follows.
#
# A table row is `| `KEY` | `ALLOWED` `ALLOWED` ... | comment |`. KEY is a
# folder ending in / (the files directly in it) or one file; a file takes the
# row of its own path, else of its folder. An include is allowed when its
# folder (ending in /) or its whole path is in the row. A file no row covers
# fails too (a new folder needs its row). make test runs this (check-layers).
set -eu
ROOT=${1:-.}
cd "$ROOT"
DOC=docs/architecture.md
[ -f "$DOC" ] || { echo "check-layers: $ROOT/$DOC is missing"; exit 1; }

FILES=$(find tensor autograd nn zoo cli -name '*.[ch]' 2>/dev/null | LC_ALL=C sort)
[ -f bertc.h ] && FILES="bertc.h $FILES"

# shellcheck disable=SC2086  # FILES is a list of paths without spaces
awk -v doc="$DOC" '
function ticked(s, out,   n) {   # the `...` tokens of s into out[1..n]
    n = 0
    while (match(s, /`[^`]*`/)) {
        out[++n] = substr(s, RSTART + 1, RLENGTH - 2)
        s = substr(s, RSTART + RLENGTH)
    }
    return n
}
function dir_of(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/)) : "" }
FILENAME == doc {
    if ($0 ~ /^## /) in_table = ($0 ~ /^## Who may include whom/)
    if (!in_table || $0 !~ /^\| *`/) next
    split($0, cell, "|")
    if (ticked(cell[2], key) != 1) { printf "check-layers: %s:%d: a row needs one key\n", doc, FNR; bad = 1; next }
    n = ticked(cell[3], allowed)
    rows++
    for (i = 1; i <= n; i++) rule[key[1], allowed[i]] = 1
    listing[key[1]] = cell[3]
    has_row[key[1]] = 1
    next
}
FNR == 1 {
    files++
    row = (FILENAME in has_row) ? FILENAME : dir_of(FILENAME)
    if (!(row in has_row)) {
        printf "check-layers: %s: no row of %s covers it (add its folder to the table)\n", FILENAME, doc
        bad = 1
    }
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
    sub(/".*/, "", inc)
    if (inc !~ /\//) inc = dir_of(FILENAME) inc
    includes++
    if (!(row in has_row) || (row, inc) in rule || (row, dir_of(inc)) in rule) next
    gsub(/^ +| +$/, "", listing[row])
    printf "check-layers: %s:%d: #include \"%s\": %s may include only %s (%s)\n", \
           FILENAME, FNR, inc, row, listing[row], doc
    bad = 1
}
END {
    if (rows == 0) { printf "check-layers: %s has no table under \"## Who may include whom\"\n", doc; exit 1 }
    if (files == 0) { print "check-layers: no source files found"; exit 1 }
    if (bad) exit 1
    printf "check-layers: %d includes in %d files follow the %d rules of %s\n", includes, files, rows, doc
}
' "$DOC" $FILES
