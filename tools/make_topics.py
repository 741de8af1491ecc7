#!/usr/bin/python3
"""tools/make_topics.py - the topic-classification data set of the demo.

Reads the BSD fortune(6) databases in ../shared/data/fortunes (entries
separated by a line holding only '%') and writes data/topics.tsv:
    label<TAB>text
one entry per line, whitespace folded to single spaces, for four benign
topics. Entries longer than 400 characters are dropped (the demo reads 64
tokens); the two large topics are capped at 400 entries so the classes are
not too unbalanced. The order is shuffled with a fixed seed; the demo holds
out the last 20 % for evaluation.
"""
import os
import random
import sys

TOPICS = ["computers", "science", "law", "food"]
CAP = 400
MAX_CHARS = 400

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data", "fortunes")
out = os.path.join(os.path.dirname(__file__), "..", "data", "topics.tsv")
rows = []
rng = random.Random(2024)
for topic in TOPICS:
    with open(os.path.join(src, topic), encoding="utf-8", errors="replace") as f:
        entries = f.read().split("\n%\n")
    texts = [" ".join(e.split()) for e in entries]
    texts = [t for t in texts if 20 <= len(t) <= MAX_CHARS]
    rng.shuffle(texts)
    rows += [(topic, t) for t in texts[:CAP]]
rng.shuffle(rows)
with open(out, "w", encoding="utf-8") as f:
    for label, text in rows:
        f.write(label + "\t" + text + "\n")
counts = {t: sum(1 for r in rows if r[0] == t) for t in TOPICS}
print("wrote", out, len(rows), "entries", counts)
