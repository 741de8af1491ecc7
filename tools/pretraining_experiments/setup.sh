#!/bin/sh
# tools/pretraining_experiments/setup.sh — the work directory of the runs in
# docs/pretraining-evidence.md: build/exp with make demo's split, the 8,000-token
# vocabulary, the configs, the packed corpus, and these scripts beside them.
#
#   make && sh tools/pretraining_experiments/setup.sh
#   cd build/exp && ./ft.sh scratch 1e-3 1 --config cfg.json --vocab vocab.txt
#
# The scripts find their files beside themselves (build/exp/...) and the repository
# two levels up; the bertc they run is $BERTC, else build/exp/bin/bertc (this
# checkout's build; the evidence pins bin/bertc-ffe5dc6 and bin/bertc-nodecay, builds of those commits).
# mlm.sh runs build/exp/bexp/bertc: the same source with the experiment knobs
# BERTC_EXP_WARMUP, BERTC_EXP_WD, BERTC_EXP_CONSTANT, BERTC_EXP_DECAY_ALL read from
# the environment (the patch is in docs/pretraining-evidence.md).
set -e
cd "$(dirname "$0")/../.."
W=${W:-build/exp}
mkdir -p "$W/bin" "$W/runs"
cp tools/pretraining_experiments/*.sh tools/pretraining_experiments/*.py "$W/"
rm -f "$W/setup.sh"
cp build/bertc "$W/bin/bertc"

# make demo's split: the first 915 texts to fine-tune on, the last 229 scored
(printf 'label\ttext\n'; head -915 data/topics.tsv) > "$W/train.tsv"
tail -229 data/topics.tsv > "$W/test.tsv"
cut -f2 "$W/test.tsv" > "$W/test.txt"
cut -f1 "$W/test.tsv" > "$W/test.gold"
tail -n +2 "$W/train.tsv" | cut -f2 > "$W/train.txt"
tail -n +2 "$W/train.tsv" | cut -f1 > "$W/train.gold"

# the unlabelled corpus (the held-out texts are not in it) and its vocabulary
(printf 'text\n'; cat data/pretrain.txt) > "$W/pretrain.tsv"
build/bertc vocab --train data/pretrain.txt --size 8000 --out "$W/vocab.txt"

# the same texts packed into rows of 42 words (about 60 WordPiece tokens)
python3 - "$W/pretrain-packed.tsv" <<'EOF'
import sys
texts = [l.strip() for l in open('data/pretrain.txt') if l.strip()]
rows, cur = [], []
for t in texts:
    for w in t.split():
        cur.append(w)
        if len(cur) >= 42:
            rows.append(' '.join(cur)); cur = []
if cur: rows.append(' '.join(cur))
open(sys.argv[1], 'w').write('text\n' + '\n'.join(rows) + '\n')
EOF

for drop in 0.1 0.0; do
    name=cfg.json
    [ "$drop" = 0.1 ] || name=cfg-drop0.json
    cat > "$W/$name" <<EOF
{
  "architectures": ["BertModel"],
  "vocab_size": 8000,
  "hidden_size": 128,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 512,
  "max_position_embeddings": 128,
  "hidden_dropout_prob": $drop,
  "attention_probs_dropout_prob": $drop
}
EOF
done

# the 31 MB corpus, when tools/build_corpus.sh has made it: 1,000 paragraphs held out
if [ -f build/corpus/corpus.txt ]; then
    awk 'NF' build/corpus/corpus.txt | awk 'BEGIN{srand(7)} {print rand() "\t" $0}' |
        sort -k1,1 -S 200M | cut -f2- > "$W/corpus-shuffled.txt"
    (printf 'text\n'; head -n 1000 "$W/corpus-shuffled.txt") > "$W/corpus-eval.tsv"
    (printf 'text\n'; tail -n +1001 "$W/corpus-shuffled.txt") > "$W/corpus-train.tsv"
    rm "$W/corpus-shuffled.txt"
fi
echo "ready: $W"
