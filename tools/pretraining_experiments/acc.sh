#!/bin/sh
# acc.sh MODELDIR -> held-out accuracy on the 229 texts (make demo's split)
d=$(dirname "$0")
BERTC_THREADS=1 "${BERTC:-$d/bin/bertc}" predict --model "$1" --input "$d/test.txt" 2>/dev/null | cut -f1 | paste - "$d/test.gold" | awk -F'\t' '{n++; if ($1==$2) c++} END {printf "%.1f\n", 100*c/n}'
