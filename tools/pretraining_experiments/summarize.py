"""summarize.py FILE... - mean, spread (sample sd) and values per (name, lr) of ft.sh lines."""
import sys, collections, statistics
acc = collections.OrderedDict()
for path in sys.argv[1:]:
    for line in open(path):
        f = line.split()
        if len(f) == 4 and f[3].replace('.', '').isdigit():
            acc.setdefault((f[0], f[1]), []).append((int(f[2]), float(f[3])))
for (name, lr), v in acc.items():
    xs = [a for _, a in sorted(v)]
    sd = statistics.stdev(xs) if len(xs) > 1 else float('nan')
    print(f"| {name} | {lr} | {len(xs)} | {statistics.mean(xs):.1f} ± {sd:.1f} | {' / '.join(f'{x:.1f}' for x in xs)} |")
