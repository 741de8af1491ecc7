#!/usr/bin/python3
"""tools/fixtures_spanbert.py - parity fixtures for SpanBertForPreTraining
(SPEC 6.7) and its span masking (6.7.2). Run: /usr/bin/python3 tools/fixtures_spanbert.py

The model is HF BertModel (no pooler) + the HF MLM head (bert_ref.py) + the
seed's SBOHead, copied from the seed with the SPEC's fixes (LN eps from the
config, span_pos_emb rows = 3 * sbo_max_span_length). The masking is an
independent Python implementation of the seed's SpanCollator on SplitMix64
(6.7.1); its outputs are both the expected masking.* tensors and the model's
input_ids / labels / mask_labels, so each case also runs masking -> model.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import bert_ref as R
import zoo_common as Z

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
MAX_DRAWS = 1 << 20             # SPAN_MASKING_MAX_DRAWS in zoo/zoo.h
M64 = (1 << 64) - 1


class SplitMix64:
    """SPEC 6.7.1, bit for bit."""

    def __init__(self, seed):
        self.state = seed & M64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return ((self.next_u64() >> 11) + 0.5) * 2.0 ** -53

    def geometric(self, p):
        return math.floor(math.log(self.uniform()) / math.log1p(-p))

    def randint(self, lo, hi):
        return lo + self.next_u64() % (hi - lo + 1)


def whole_word_mask(tokens, kinds, c, rng):
    """SpanCollator._whole_word_mask on ids + kinds (0 word start, 1 '##',
    2 excluded). Returns (mask_labels, number of spans started)."""
    m = c["masking"]
    cap = m.get("max_span_length_cap", 10)
    p = m.get("span_probability", 0.2)
    cand = []
    for i, tok in enumerate(tokens):
        if tok in (c["cls_token_id"], c["sep_token_id"]):
            continue
        if len(cand) >= 1 and kinds[i] == 1:
            cand[-1].append(i)
        elif kinds[i] == 0:
            cand.append([i])
    l = len(tokens)
    budget = int(m.get("masking_budget", 0.15) * l)
    if budget and not cand:
        raise ValueError("no candidate")
    covered, spans, draws = set(), 0, 0
    while budget:
        if draws == MAX_DRAWS:
            raise ValueError("draw limit")
        draws += 1
        span_length = max(1, min(cap, rng.geometric(p)))
        src_index = rng.randint(0, len(cand) - 1)
        if span_length > budget:
            if budget < 5:
                span_length = budget
            else:
                continue
        if cand[src_index][0] + span_length > l - 1:
            continue
        if len(cand[src_index]) > span_length:
            continue
        pos = cand[src_index][0]
        spans += 1
        while span_length and pos not in covered:
            covered.add(pos)
            span_length -= 1
            budget -= 1
            pos += 1
    return [1 if i in covered else 0 for i in range(l)], spans


def span_masking(c, ids, kinds, lengths):
    """The padded batch, rows in order from one stream (SPEC 6.7.2)."""
    rng = SplitMix64(c["masking"]["seed"])
    B, S = ids.shape
    raw = torch.zeros(B, S, dtype=torch.long)
    spans = 0
    for b in range(B):
        n = int(lengths[b])
        row, k = whole_word_mask(ids[b, :n].tolist(), kinds[b, :n].tolist(), c, rng)
        raw[b, :n] = torch.tensor(row)
        spans += k
    special = {PAD, UNK, CLS, SEP, MASK, c["pad_token_id"]} | set(
        c["masking"].get("special_token_ids", []))
    is_special = torch.tensor([[int(t) in special for t in r] for r in ids.tolist()])
    mask_labels = raw.masked_fill(is_special, 0)
    labels = torch.where(mask_labels.bool(), ids, torch.full_like(ids, -100))
    masked = torch.where(mask_labels.bool(), torch.full_like(ids, MASK), ids)
    return {"masking.raw_mask_labels": raw, "masking.mask_labels": mask_labels,
            "masking.input_ids": masked, "masking.labels": labels}, spans


class SBOHead(nn.Module):
    """The seed's SBOHead (is_concatenate=True) in its own code order."""

    def __init__(self, c):
        super().__init__()
        H, V = c["hidden_size"], c["vocab_size"]
        I = c.get("sbo_dim_ffn", c["intermediate_size"])
        eps = c.get("sbo_layer_norm_eps", 1e-5)
        self.projector = nn.Linear(H, H * 3, bias=False)
        self.span_pos_emb = nn.Embedding(c.get("sbo_max_span_length", 10) * 3, H)
        self.head = nn.Sequential(
            nn.Linear(H * 3, I), nn.GELU(), nn.LayerNorm(I, eps=eps),
            nn.Linear(I, H, bias=False), nn.GELU(), nn.LayerNorm(H, eps=eps))
        self.classifier = nn.Linear(H, V, bias=False)
        self.bias = nn.Parameter(torch.zeros(V))
        self.classifier.bias = self.bias

    @staticmethod
    def find_consecutive_groups(mask_labels, target_value=1):
        all_groups = []
        for mask_label in mask_labels:
            groups, current = [], None
            for i, value in enumerate(mask_label):
                if value == target_value:
                    if current is None:
                        current = {"start": i, "end": i}
                    else:
                        current["end"] = i
                elif current is not None:
                    groups.append(current)
                    current = None
            if current is not None:
                groups.append(current)
            all_groups.append(groups)
        return all_groups

    def cal_span_emb(self, h, hidden_states, groups):
        for i, batch in enumerate(groups):
            for span in batch:
                start, end = span["start"], span["end"]
                assert start >= 1 and end + 1 < hidden_states.shape[1]
                idx = torch.arange(end - start + 1)
                context_s, context_e = hidden_states[i, start - 1, :], hidden_states[i, end + 1, :]
                for k, p_h in enumerate(self.span_pos_emb(idx)):
                    h[i, start + k, :] = torch.cat([context_s, p_h, context_e], dim=0)
        return h

    def forward(self, hidden_states, mask_labels):
        groups = self.find_consecutive_groups(mask_labels.tolist())
        h = self.projector(hidden_states)
        return self.classifier(self.head(self.cal_span_emb(h, hidden_states, groups))), groups


class SpanBertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c, pooler=False)
        self.cls = nn.Module()
        self.cls.predictions = R.LMHead(c)
        self.sbo_head = SBOHead(c)


def config(**kw):
    c = {"architectures": ["SpanBertForPreTraining"], "vocab_size": 120, "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 40,
         "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
         "pad_token_id": PAD, "unk_token_id": UNK, "cls_token_id": CLS, "sep_token_id": SEP,
         "mask_token_id": MASK, "model_type": "bert"}
    c.update(kw)
    return c


def masking_vectors(gen, c, S, lengths):
    """Rows [CLS] ... [SEP] (a pair: a [SEP] in the middle too) with a few
    [UNK]/[MASK]/special ids, kinds drawn 0/1/2, padding kind -1."""
    B = len(lengths)
    ids = torch.zeros(B, S, dtype=torch.long)
    kinds = torch.full((B, S), -1, dtype=torch.long)
    odd = [UNK, MASK] + c["masking"].get("special_token_ids", [])
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(6, c["vocab_size"], (n,), generator=gen)
        for t in torch.randint(1, n - 1, (2,), generator=gen).tolist():
            ids[b, t] = odd[t % len(odd)]
        ids[b, 0], ids[b, n - 1], ids[b, n // 2] = CLS, SEP, SEP
        pick = torch.randint(0, 10, (n,), generator=gen)
        kinds[b, :n] = torch.where(pick < 6, 0, torch.where(pick < 9, 1, 2))
    return ids, kinds, torch.tensor(lengths, dtype=torch.long)


def case(name, c, S, lengths, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    m = SpanBertForPreTraining(c)
    Z.hf_init(m, 0.2)
    m.cls.predictions.bias.data.normal_(0.0, 0.2)
    m = m.double()
    ids, kinds, lens = masking_vectors(gen, c, S, lengths)
    masking, spans = span_masking(c, ids, kinds, lens)
    mask = (torch.arange(S)[None, :] < lens[:, None]).long()
    x = {"input_ids": masking["masking.input_ids"], "attention_mask": mask,
         "token_type_ids": torch.zeros_like(ids), "labels": masking["masking.labels"],
         "mask_labels": masking["masking.mask_labels"], "masking.original_input_ids": ids,
         "masking.token_kinds": kinds, "masking.lengths": lens}
    E = m.bert.embeddings.word_embeddings.weight
    h, _, hidden, probs = m.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    mlm_logits = m.cls.predictions(h, E)
    sbo_logits, groups = m.sbo_head(h, x["mask_labels"])
    V = c["vocab_size"]
    mlm_loss = F.cross_entropy(mlm_logits.reshape(-1, V), x["labels"].reshape(-1))
    sbo_loss = F.cross_entropy(sbo_logits.reshape(-1, V), x["labels"].reshape(-1))
    loss = mlm_loss + sbo_loss
    loss.backward()
    out = {"mlm_logits": mlm_logits, "sbo_logits": sbo_logits, "mlm_loss": mlm_loss,
           "sbo_loss": sbo_loss, "loss": loss}
    out.update(masking)
    R.bert_outputs(out, h, None, hidden, probs)
    runs = [g["end"] - g["start"] + 1 for row in groups for g in row]
    print(name, "spans started", spans, "runs", runs, "masked", int(x["mask_labels"].sum()),
          "raw", int(masking["masking.raw_mask_labels"].sum()))
    Z.write_case(name, c, m, x, out,
                 tied={"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                       "cls.predictions.decoder.bias": "cls.predictions.bias",
                       "sbo_head.classifier.bias": "sbo_head.bias"})


if __name__ == "__main__":
    # sbo_* at their defaults (dim_ffn = intermediate_size, LN 1e-5, 30 span rows)
    case("spanbert_a", config(masking={"seed": 11, "masking_budget": 0.3}), 24, [24, 17, 9], 2)
    case("spanbert_b", config(vocab_size=100, hidden_size=24, num_attention_heads=3,
                              num_hidden_layers=1, intermediate_size=48, hidden_act="gelu_new",
                              sbo_dim_ffn=40, sbo_layer_norm_eps=1e-5, sbo_max_span_length=3,
                              masking={"seed": 7, "masking_budget": 0.4, "span_probability": 0.3,
                                       "max_span_length_cap": 6, "special_token_ids": [5]}),
         20, [20, 13], 3)
    # many rows and a large budget so the masking passes the boundary rules
    # (budget exactly 5, spans past the row end, words longer than the span):
    # changing any of them changes these masks
    case("spanbert_c", config(vocab_size=80, hidden_size=16, num_attention_heads=2,
                              num_hidden_layers=1, intermediate_size=32,
                              masking={"seed": 21, "masking_budget": 0.5,
                                       "span_probability": 0.3}),
         32, [32, 30, 25, 21, 18], 21)
