#!/usr/bin/python3
"""tools/make_pretrain.py - the unlabelled pre-training corpus of the SpanBERT example.

Reads the BSD fortune(6) databases in ../shared/data/fortunes (entries
separated by a line holding only '%') and writes data/pretrain.txt: one
entry per line, whitespace folded to single spaces, from benign topics only.
Entries shorter than 20 or longer than 400 characters are dropped (the
example reads 64 tokens), as in tools/make_topics.py.

No test leakage: examples/spanbert.c fine-tunes on data/topics.tsv and
holds out its last 20 %; every one of those held-out texts is left out of
the corpus, wherever it appears (some fortunes sit in two databases). The
order is shuffled with a fixed seed; the example keeps the last 256 lines
for measuring the masked-LM loss before and after pre-training.
"""
import os
import random
import sys

TOPICS = ["computers", "science", "law", "food", "literature", "education", "work",
          "wisdom", "people"]
MIN_CHARS, MAX_CHARS = 20, 400

here = os.path.dirname(__file__)
src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    here, "..", "..", "shared", "data", "fortunes")
data = os.path.join(here, "..", "data")

# The held-out texts of the topic task: the last 20 % of topics.tsv, exactly
# as examples/topics.c splits it (n_train = n * 4 // 5).
with open(os.path.join(data, "topics.tsv"), encoding="utf-8") as f:
    labelled = [line.rstrip("\n").split("\t", 1)[1] for line in f]
held_out = set(labelled[len(labelled) * 4 // 5:])

texts, seen, dropped = [], set(), 0
for topic in TOPICS:
    with open(os.path.join(src, topic), encoding="utf-8", errors="replace") as f:
        entries = f.read().split("\n%\n")
    for entry in entries:
        text = " ".join(entry.split())
        if not MIN_CHARS <= len(text) <= MAX_CHARS or text in seen:
            continue
        if text in held_out:
            dropped += 1
            continue
        seen.add(text)
        texts.append(text)
random.Random(2025).shuffle(texts)
out = os.path.join(data, "pretrain.txt")
with open(out, "w", encoding="utf-8") as f:
    for text in texts:
        f.write(text + "\n")
print("wrote", out, len(texts), "texts,", sum(len(t) + 1 for t in texts), "bytes;",
      dropped, "held-out topic texts left out")
