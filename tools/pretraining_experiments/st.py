"""st.py - tiny safetensors reader/writer in pure Python (array module)."""
import json, struct, array, math, sys
def read(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in hdr.items():
        if k == '__metadata__': continue
        a, b = v['data_offsets']
        arr = array.array('f'); arr.frombytes(data[a:b])
        out[k] = (v['shape'], arr)
    return out, hdr.get('__metadata__')
def write(path, tensors, meta=None):
    hdr, off, blobs = {}, 0, []
    for k, (shape, arr) in tensors.items():
        b = arr.tobytes(); hdr[k] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [off, off + len(b)]}
        off += len(b); blobs.append(b)
    if meta: hdr['__metadata__'] = meta
    h = json.dumps(hdr).encode(); h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h))); f.write(h)
        for b in blobs: f.write(b)
if __name__ == '__main__':
    t, _ = read(sys.argv[1])
    for k, (shape, a) in t.items():
        n = len(a); m = sum(a) / n; sd = math.sqrt(sum((x - m) ** 2 for x in a) / n)
        print(f"{k:60s} {str(shape):14s} mean {m:+.4f} sd {sd:.4f} maxabs {max(abs(x) for x in a):.3f}")
