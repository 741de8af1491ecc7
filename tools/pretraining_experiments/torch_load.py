#!/usr/bin/python3
"""torch_load.py DIR IN.safetensors OUT.safetensors: DIR (a bertc pretrain output) loads into a
Hugging-Face-shaped BertForMaskedLM with load_state_dict(strict=True), and its MLM logits on
`bertc encode`s inputs IN match `bertc run`s OUT. Debian python3-torch (/usr/bin/python3)."""
import sys, json, torch
sys.path.insert(0, "tools")
import bert_ref, st
d, fin, fout = sys.argv[1:4]
c = json.load(open(f"{d}/config.json"))
class HFMaskedLM(bert_ref.BertForMaskedLM):
    def __init__(self, c):
        super().__init__(c)
        dec = torch.nn.Linear(c["hidden_size"], c["vocab_size"])
        dec.weight = self.bert.embeddings.word_embeddings.weight   # tied, as HF
        dec.bias = self.cls.predictions.bias
        self.cls.predictions.decoder = dec
m = HFMaskedLM(c).eval()
sd = st.load(f"{d}/model.safetensors")
m.load_state_dict(sd, strict=True)
x = st.load(fin)
ids = torch.as_tensor(x["input_ids"]).long(); mask = torch.as_tensor(x["attention_mask"]).long()
with torch.no_grad():
    x_last = m.bert(ids, mask, torch.zeros_like(ids))[0]
    logits = m.cls.predictions(x_last, m.bert.embeddings.word_embeddings.weight)
ref = torch.as_tensor(st.load(fout)["logits"])
print("strict load ok; max |torch - bertc| logits =", float((logits - ref).abs().max()), "of max |ref|", float(ref.abs().max()))
