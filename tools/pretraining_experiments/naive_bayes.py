#!/usr/bin/env python3
"""naive_bayes.py TRAIN.tsv TEST.tsv: multinomial naive Bayes over lowercase [a-z0-9]+ words
(Laplace alpha 1; words unseen in training skipped), the accuracy on TEST. The same rule as
zoo/train/naive_bayes.c, which make demo prints."""
import sys, re, math, collections
def load(p):
    rows=[l.rstrip("\n").split("\t",1) for l in open(p)][1:]
    return [(a,b) for a,b in rows]
tr, te = load(sys.argv[1]), load(sys.argv[2])
tok=lambda t: re.findall(r"[a-z0-9]+", t.lower())
cls=sorted(set(a for a,_ in tr)); cnt={c:collections.Counter() for c in cls}; prior=collections.Counter()
for a,b in tr: prior[a]+=1; cnt[a].update(tok(b))
V=set(w for c in cls for w in cnt[c]); tot={c:sum(cnt[c].values()) for c in cls}
ok=0
for a,b in te:
    best=max(cls, key=lambda c: math.log(prior[c]) + sum(math.log((cnt[c][w]+1)/(tot[c]+len(V))) for w in tok(b) if w in V))
    ok+= best==a
print("NB accuracy %.1f%% (%d/%d)"%(100*ok/len(te), ok, len(te)))
