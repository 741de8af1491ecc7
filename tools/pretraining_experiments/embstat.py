"""embstat.py MODEL... - word-embedding geometry by token frequency in data/pretrain.txt:
mean pairwise cosine among tokens of a frequency band, and mean row norm."""
import sys, math, subprocess, collections, random, os, st
d = os.path.dirname(os.path.abspath(__file__))
vocab = [l.rstrip('\n') for l in open(d + '/vocab.txt')]
# token frequencies in the corpus, from bertc tokenize? approximate by counting vocab words
# among whitespace/punct-split lowercase words (whole words only, enough for bands)
import re
cnt = collections.Counter(re.findall(r"[a-z]+", open(d + '/../../data/pretrain.txt').read().lower()))
ids = {w: i for i, w in enumerate(vocab)}
bands = [(0, 0), (1, 2), (3, 9), (10, 99), (100, 10**9)]
for path in sys.argv[1:]:
    t, _ = st.read(path + '/model.safetensors')
    E = t['bert.embeddings.word_embeddings.weight'][1]; H = t['bert.embeddings.word_embeddings.weight'][0][1]
    row = lambda i: E[i * H:(i + 1) * H]
    mu = [sum(E[i * H + j] for i in range(len(vocab))) / len(vocab) for j in range(H)]
    out = []
    for lo, hi in bands:
        toks = [i for w, i in ids.items() if w.isalpha() and lo <= cnt.get(w, 0) <= hi and i > 100]
        random.Random(0).shuffle(toks); toks = toks[:200]
        rows = [row(i) for i in toks]
        norm = lambda v: math.sqrt(sum(x * x for x in v))
        cs = [sum(a * b for a, b in zip(rows[k], rows[k + 1])) / (norm(rows[k]) * norm(rows[k + 1])) for k in range(len(rows) - 1)]
        out.append(f"freq {lo}-{hi if hi < 10**9 else 'inf'} (n={len(toks)}): cos {sum(cs)/len(cs):+.3f} norm {sum(map(norm, rows))/len(rows):.3f}")
    print(path); print('  ' + '\n  '.join(out))
