#!/bin/sh
# bench/mpi_throughput.sh — pretraining tokens/s of one process against
# mpirun -np 2 on the same global batch (docs/distributed.md): the shipped
# model's recipe (data/pretrained/bertc-docs: L4/H128, vocabulary 8000),
# STEPS steps (default 60), global batch 32 x 128:
#   1 process --threads 1, 1 process --threads 2, 2 ranks x --threads 1
# each RUNS times in turn (default 2), with the sum time of each rank
# (BERTC_MPI_STATS=1).
#
#   bench/mpi_throughput.sh [STEPS [RUNS]]     (BUILD=build by default)
set -eu
STEPS=${1:-60}
RUNS=${2:-2}
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" mpi >&2
CORPUS=$BUILD/corpus/corpus.txt
[ -f "$CORPUS" ] || sh tools/build_corpus.sh "$CORPUS" >&2
P=data/pretrained/bertc-docs
W=$BUILD/mpi-throughput
mkdir -p "$W"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R="pretrain --corpus $CORPUS --config $P/config.json --vocab $P/vocab.txt --cache $W/corpus.tokens
   --max-len 128 --steps $STEPS --lr 1e-3 --warmup 0.06 --eval-every $STEPS --eval-rows 64 --seed 42"
echo "bench/mpi_throughput.sh: $STEPS steps of 32 x 128; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(mpirun --version | head -1)"
i=0
while [ $i -lt "$RUNS" ]; do
    rm -rf "$W/a" "$W/b" "$W/c"
    echo "1 process, 1 thread:  $("$BUILD/bertc" $R --batch-size 32 --threads 1 --out "$W/a" 2>&1 | grep '^pretrained')"
    echo "1 process, 2 threads: $("$BUILD/bertc" $R --batch-size 32 --threads 2 --out "$W/b" 2>&1 | grep '^pretrained')"
    BERTC_MPI_STATS=1 mpirun -x BERTC_MPI_STATS --oversubscribe -np 2 --bind-to core \
        "$BUILD/mpi/bertc" $R --batch-size 16 --threads 1 --out "$W/c" > "$W/c.log" 2>&1
    echo "2 ranks x 1 thread:   $(grep '^pretrained' "$W/c.log")"
    grep 'sums of' "$W/c.log" | sed 's/^/    /'
    i=$((i + 1))
done
