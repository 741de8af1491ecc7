"""graft.py BASE DONOR OUT KEY-SUBSTRING... - copy model dir BASE to OUT, with every tensor whose
name contains one of the substrings taken from DONOR (an ablation of what pretraining changed)."""
import sys, shutil, os, st
base, donor, out, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
shutil.rmtree(out, ignore_errors=True); shutil.copytree(base, out)
a, meta = st.read(base + '/model.safetensors'); b, _ = st.read(donor + '/model.safetensors')
n = 0
for k in a:
    if any(s in k for s in keys):
        a[k] = b[k]; n += 1
# the tied decoder names the same tensor as the word embeddings
if 'cls.predictions.decoder.weight' in a:
    a['cls.predictions.decoder.weight'] = a['bert.embeddings.word_embeddings.weight']
for f in ('checkpoint.safetensors',):
    if os.path.exists(out + '/' + f): os.remove(out + '/' + f)
meta = {k: v for k, v in (meta or {}).items() if k != 'bertc.crc32'}
st.write(out + '/model.safetensors', a, meta)
print(out, 'took', n, 'tensors from', donor)
