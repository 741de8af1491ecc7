#!/bin/sh
# tools/mpi_test.sh BUILD — `make mpi-test`: data-parallel training through
# mpirun against one process (docs/distributed.md).
#
#   1. the default build links no MPI (nm, ldd of BUILD/bertc and the
#      library), the MPI build does;
#   2. mpirun -np 2 finetune (and pretrain) with --batch-size 4 against one
#      process with --batch-size 8: the same checkpoint (weights and AdamW
#      moments) to 1e-6, the same log.jsonl, one report (rank 0's);
#   3. resume: a two-rank run stopped (--stop-after) and resumed on two ranks
#      ends as one that was not stopped (bit for bit); one process refuses
#      the two-rank checkpoint and two ranks a one-process one, naming both;
#   4. faults: a rank that hangs (SIGSTOP) ends the job within
#      BERTC_MPI_TIMEOUT with a line saying so; a rank killed (SIGKILL) ends
#      it; Ctrl-C (SIGINT to mpirun) stops every rank after the same step
#      with rank 0's checkpoint saved; each time the last checkpoint is whole
#      and --resume continues from it.
# Prints SKIPPED with the reason, and succeeds, where Open MPI is missing
# and cannot be installed.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.."
if ! sh tools/mpi_setup.sh --quiet-fail; then
    echo "mpi-test: SKIPPED: Open MPI is not installed and cannot be here (not root, or no" \
         "apt-get): sudo apt-get install -y libopenmpi-dev openmpi-bin"
    exit 0
fi
make --no-print-directory -s BUILD="$BUILD" mpi || { echo "mpi-test: FAIL: make mpi"; exit 1; }
B1=$BUILD/bertc
BM=$BUILD/mpi/bertc
T=$(mktemp -d)
trap 'kill -CONT $STOPPED 2>/dev/null; rm -rf "$T"' EXIT
STOPPED=""
FAILS=0
# mpirun as root needs both variables (a container's CI runs as root)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe -np 2"
ok() { echo "mpi-test: ok: $*"; }
fail() { echo "mpi-test: FAIL: $*"; FAILS=$((FAILS + 1)); }

# ---- 1. linking ------------------------------------------------------------
if nm "$B1" "$BUILD/libbertc.a" 2>/dev/null | grep -q ' U MPI_\| T MPI_'; then
    fail "$B1 or libbertc.a refers to MPI symbols"
elif ldd "$B1" | grep -q libmpi; then
    fail "$B1 links libmpi"
elif ! ldd "$BM" | grep -q libmpi; then
    fail "$BM does not link libmpi"
elif grep -l 'mpi\.h' tensor/*.[ch] autograd/*.[ch] nn/*.[ch] zoo/*/*.[ch] bertc.h >/dev/null; then
    fail "the library includes mpi.h"
else
    ok "the default build and the library link no MPI; $BM links $(ldd "$BM" | grep -o 'libmpi[^ ]*' | head -1)"
fi

# ---- data and models: tiny, without dropout ----------------------------------
V=data/pretrained/bertc-docs/vocab.txt
awk -F'\t' 'BEGIN { print "label\ttext" } NR <= 240 { print $1 "\t" $2 }' data/topics.tsv > "$T/train.tsv"
cut -f2 data/topics.tsv | head -400 > "$T/corpus.txt"
cat > "$T/cls.json" <<'EOF'
{"architectures": ["BertForSequenceClassification"], "vocab_size": 8000, "hidden_size": 32,
 "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
 "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02,
 "layer_norm_eps": 1e-12, "pad_token_id": 0}
EOF
sed 's/BertForSequenceClassification/BertForMaskedLM/' "$T/cls.json" > "$T/mlm.json"
FT="finetune --config $T/cls.json --vocab $V --train $T/train.tsv --max-len 32 --steps 8 --seed 1 --threads 1"
PT="pretrain --corpus $T/corpus.txt --config $T/mlm.json --vocab $V --max-len 32 --seed 3 --threads 1"

# values FILE: every value of every tensor but the RNG state, one a line
values() {
    "$B1" show "$1" --values 1000000000 | awk '/^[^ ]/ { name = $1 }
        /^  first / && name !~ /^rng\./ { sub(/^  first [0-9]+: /, ""); n = split($0, v, ", ")
                                          for (i = 1; i <= n; i++) print v[i] }'
}
# max_diff A B: the largest |a - b| over two checkpoints' values
max_diff() {
    values "$1" > "$T/va"; values "$2" > "$T/vb"
    [ -s "$T/va" ] && [ "$(wc -l < "$T/va")" = "$(wc -l < "$T/vb")" ] || { echo nan; return; }
    paste -d' ' "$T/va" "$T/vb" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d }
                                       END { printf "%.3g\n", m }'
}
# same NAME ONE TWO: the two runs' checkpoints within 1e-6 and their logs alike
same() {
    d=$(max_diff "$2/checkpoint.safetensors" "$3/checkpoint.safetensors")
    if awk -v d="$d" 'BEGIN { exit !(d == d + 0 && d <= 1e-6) }'; then
        ok "$1: 2 ranks x 4 = 1 process x 8 (checkpoint max |diff| $d)"
    else
        fail "$1: 2 ranks x 4 against 1 process x 8: checkpoint max |diff| $d"
    fi
}

# ---- 2. two ranks = one process with the doubled batch ------------------------
"$B1" $FT --batch-size 8 --out "$T/ft1" > "$T/ft1.log" 2>&1 || fail "finetune, one process: $(tail -1 "$T/ft1.log")"
$MPIRUN "$BM" $FT --batch-size 4 --out "$T/ft2" > "$T/ft2.log" 2>&1 || fail "finetune, 2 ranks: $(tail -3 "$T/ft2.log")"
same finetune "$T/ft1" "$T/ft2"
n=$(grep -c '^trained ' "$T/ft2.log")
[ "$n" = 1 ] && ok "finetune: one report (rank 0's)" || fail "finetune: $n reports from 2 ranks"
"$B1" $PT --batch-size 8 --steps 8 --out "$T/pt1" > "$T/pt1.log" 2>&1 || fail "pretrain, one process: $(tail -1 "$T/pt1.log")"
$MPIRUN "$BM" $PT --batch-size 4 --steps 8 --out "$T/pt2" > "$T/pt2.log" 2>&1 || fail "pretrain, 2 ranks: $(tail -3 "$T/pt2.log")"
same pretrain "$T/pt1" "$T/pt2"

# ---- 3. resume rules ----------------------------------------------------------
RUN="$PT --batch-size 4 --steps 12 --eval-every 4"
$MPIRUN "$BM" $RUN --out "$T/whole" > "$T/whole.log" 2>&1 || fail "pretrain 12 steps on 2 ranks: $(tail -3 "$T/whole.log")"
$MPIRUN "$BM" $RUN --out "$T/cut" --stop-after 6 > "$T/cut.log" 2>&1
if "$B1" $RUN --out "$T/cut" --resume > "$T/solo.log" 2>&1; then
    fail "one process resumed a two-rank checkpoint"
elif grep -q "ranks 1, but the checkpoint was made with 2" "$T/solo.log"; then
    ok "resume: one process refuses a two-rank checkpoint, naming both"
else
    fail "resume on one process: $(tail -1 "$T/solo.log")"
fi
$MPIRUN "$BM" $RUN --out "$T/cut" --resume > "$T/resume.log" 2>&1 || fail "resume on 2 ranks: $(tail -3 "$T/resume.log")"
d=$(max_diff "$T/whole/checkpoint.safetensors" "$T/cut/checkpoint.safetensors")
[ "$d" = 0 ] && ok "resume: stopped at 6, resumed on 2 ranks = not stopped (bit for bit)" ||
    fail "resume: stopped and resumed against whole: max |diff| $d"
"$B1" $RUN --out "$T/solo" --stop-after 6 > /dev/null 2>&1
if $MPIRUN "$BM" $RUN --out "$T/solo" --resume > "$T/pair.log" 2>&1; then
    fail "two ranks resumed a one-process checkpoint"
elif grep -q "ranks 2, but the checkpoint was made by one process" "$T/pair.log"; then
    ok "resume: two ranks refuse a one-process checkpoint, naming both"
else
    fail "resume of a one-process checkpoint on 2 ranks: $(grep bertc "$T/pair.log" | head -1)"
fi

# ---- 4. faults ----------------------------------------------------------------
# rank_pid: the pid of rank 1 of the job writing to DIR
rank_pid() {
    for p in $(pgrep -f "$BM pretrain.*--out $1"); do
        grep -qz '^OMPI_COMM_WORLD_RANK=1$' "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# start_job DIR: a long two-rank run in the background (JOB), until its
# first checkpoint is written
start_job() {
    rm -rf "$1"
    BERTC_MPI_TIMEOUT=5 $MPIRUN -x BERTC_MPI_TIMEOUT "$BM" $PT --batch-size 8 --steps 100000 \
        --eval-every 20 --out "$1" > "$1.log" 2>&1 &
    JOB=$!
    i=0
    while [ ! -f "$1/checkpoint.safetensors" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}
# ends_within SECONDS: JOB ends by then (else it is killed and this fails)
ends_within() {
    i=0
    while kill -0 "$JOB" 2>/dev/null && [ $i -lt $(($1 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$JOB" 2>/dev/null; then
        pkill -KILL -f "$BM pretrain" 2>/dev/null; kill -KILL "$JOB" 2>/dev/null
        return 1
    fi
    wait "$JOB" 2>/dev/null
    return 0
}
# resumes DIR: the checkpoint left is whole: --resume continues it on 2 ranks
resumes() {
    step=$("$B1" show "$1/checkpoint.safetensors" --values 1 2>/dev/null |
           awk '/^train.step/ { getline; print $3 }')
    [ -n "$step" ] || return 1
    $MPIRUN "$BM" $PT --batch-size 8 --steps 100000 --eval-every 20 --out "$1" --resume \
        --stop-after $((step + 2)) > "$1.resume.log" 2>&1 &&
        grep -q "resumed from .* at step $step" "$1.resume.log"
}
for fault in hang kill ctrl-c; do
    D=$T/fault-$fault
    start_job "$D"
    pid=$(rank_pid "$D")
    case $fault in
        hang) kill -STOP "$pid"; STOPPED=$pid ;;
        kill) kill -KILL "$pid" ;;
        ctrl-c) sleep 1; pkill -INT -x mpirun ;;
    esac
    if ! ends_within 30; then
        fail "$fault: the job did not end within 30 s"
        continue
    fi
    [ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null; STOPPED=""
    case $fault in
        hang) grep -q "waited [0-9]* s for the other ranks" "$D.log" &&
                  ok "hang: a stopped rank ends the job: $(grep -m1 'waited' "$D.log" | cut -c1-90)..." ||
                  fail "hang: no line saying the ranks waited: $(tail -2 "$D.log")" ;;
        kill) ok "kill: a killed rank ends the job" ;;
        ctrl-c) grep -q "stopped by SIGTERM after step [0-9]* .*checkpoint saved" "$D.log" &&
                    ok "ctrl-c: every rank stops after the same step, rank 0 saves" ||
                    fail "ctrl-c: $(tail -2 "$D.log")" ;;
    esac
    resumes "$D" && ok "$fault: the checkpoint is whole and --resume continues it" ||
        fail "$fault: --resume from the last checkpoint: $(tail -2 "$D.resume.log" 2>/dev/null)"
done

if [ "$FAILS" -gt 0 ]; then
    echo "mpi-test: $FAILS failed"
    exit 1
fi
echo "mpi-test: all passed"
