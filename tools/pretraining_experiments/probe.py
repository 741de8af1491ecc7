"""probe.py MODELDIR POOLING - linear probe (ridge least squares, one-vs-all) on frozen
embeddings: train on the 915 texts, accuracy on the 229 held-out ones."""
import subprocess, sys, os, math
d = os.path.dirname(os.path.abspath(__file__))
def embed(model, pooling, f):
    out = subprocess.run([d + '/../bertc', 'embed', '--model', model, '--pooling', pooling,
                          '--input', f, '--max-len', '64', '--threads', '1'],
                         capture_output=True, text=True, check=True).stdout
    return [[float(x) for x in l.rsplit('\t', 1)[1].split()] for l in out.splitlines()]
def solve(A, b):   # Gaussian elimination, A n x n
    n = len(A); M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c])); M[c], M[p] = M[p], M[c]
        for r in range(c + 1, n):
            f = M[r][c] / M[c][c]
            if f:
                for k in range(c, n + 1): M[r][k] -= f * M[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (M[r][n] - sum(M[r][k] * x[k] for k in range(r + 1, n))) / M[r][r]
    return x
model, pooling = sys.argv[1], sys.argv[2]
lam = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
Xtr, Xte = embed(model, pooling, d + '/train.txt'), embed(model, pooling, d + '/test.txt')
ytr = open(d + '/train.gold').read().split(); yte = open(d + '/test.gold').read().split()
H = len(Xtr[0]); mu = [sum(x[j] for x in Xtr) / len(Xtr) for j in range(H)]
sd = [math.sqrt(sum((x[j] - mu[j]) ** 2 for x in Xtr) / len(Xtr)) + 1e-8 for j in range(H)]
z = lambda X: [[(x[j] - mu[j]) / sd[j] for j in range(H)] + [1.0] for x in X]
Ztr, Zte = z(Xtr), z(Xte)
labels = sorted(set(ytr)); D = H + 1
G = [[sum(r[i] * r[j] for r in Ztr) + (lam if i == j and i < H else 0) for j in range(D)] for i in range(D)]
W = {c: solve(G, [sum(r[i] * (1.0 if y == c else 0.0) for r, y in zip(Ztr, ytr)) for i in range(D)]) for c in labels}
pred = [max(labels, key=lambda c: sum(w * v for w, v in zip(W[c], r))) for r in Zte]
acc = 100 * sum(p == y for p, y in zip(pred, yte)) / len(yte)
# mean cosine similarity between held-out vectors (anisotropy)
def cos(a, b): return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)) + 1e-12)
pairs = [(Xte[i], Xte[(i * 7 + 3) % len(Xte)]) for i in range(len(Xte))]
print(f"{model} {pooling} probe {acc:.1f} mean-cos {sum(cos(a, b) for a, b in pairs) / len(pairs):.3f}")
