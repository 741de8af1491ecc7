"""attn.py OUT.safetensors IN.safetensors - [CLS]'s attention in each layer and head: its entropy
(nats; uniform over n real tokens = ln n) and the share it puts on itself and on its neighbour."""
import sys, json, struct, math, array
def read(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]; hdr = json.loads(f.read(n)); data = f.read()
    out = {}
    for k, v in hdr.items():
        if k == '__metadata__': continue
        a, b = v['data_offsets']; arr = array.array({'F32': 'f', 'I64': 'q', 'I32': 'i'}[v['dtype']])
        arr.frombytes(data[a:b]); out[k] = (v['shape'], arr)
    return out
o, x = read(sys.argv[1]), read(sys.argv[2])
(B, S), mask = x['attention_mask']
for l in range(8):
    k = f'layers.{l}.attention_probs'
    if k not in o: break
    (_, nh, _, _), p = o[k]
    for h in range(nh):
        ent = selfw = nb = unif = 0.0
        for b in range(B):
            n = sum(mask[b * S:(b + 1) * S]); base = ((b * nh + h) * S + 0) * S
            row = p[base:base + S]
            ent += -sum(q * math.log(q) for q in row if q > 0); unif += math.log(n)
            selfw += row[0]; nb += row[1]
        print(f"{sys.argv[1].split('-out-')[-1]:28s} layer {l} head {h}: CLS entropy {ent/B:.2f} (uniform {unif/B:.2f}), on itself {selfw/B:.2f}, on token 1 {nb/B:.2f}")
