#!/usr/bin/python3
"""tools/fixtures_spanbert.py - parity fixtures for SpanBertForPreTraining
(SPEC 6.7) and its span masking (6.7.2). Run: /usr/bin/python3 tools/fixtures_spanbert.py

The model is HF BertModel (no pooler) + the HF MLM head (bert_ref.py) + an
SBO head:
  sbo_head "seed": the seed's SBOHead, copied from the seed with the SPEC's
    fixes (LN eps from the config, span_pos_emb rows = 3 * sbo_max_span_length);
  sbo_head "original": facebookresearch/SpanBERT's BertPairTargetPredictionHead
    (pretraining/fairseq/models/pair_bert.py) in its own batched form: every
    pair (x_{s-1}, x_{e+1}) scored at all max_targets positions, then the
    rows of the span's tokens taken; MLPWithLayerNorm with BertLayerNorm
    (gamma, beta), the decoder tied to the word embeddings. Its loss is the
    mean CE over the span tokens (the original divides the sum by npairs + 1).
The masking is an independent Python implementation on SplitMix64 (6.7.1) of
  masking.style "seed": the seed's SpanCollator;
  masking.style "original": the original's PairWithSpanMaskingScheme.mask +
    span_masking(replacement='span') (pretraining/fairseq/data/masking.py), with
    the two changes bertc documents: words are completed when the budget ends,
    and the random token comes from the row's block, not the corpus.
Its outputs are both the expected masking.* tensors and the model's input_ids /
labels / mask_labels, so each case also runs masking -> model. The sbo.*
intermediates (x_{s-1}, x_{e+1}, p, h0, h1, y, span logits, the spans and
i - s + 1) are expected outputs too.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import bert_ref as R
import zoo_common as Z

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
MAX_DRAWS = 1 << 20             # SPAN_MASKING_MAX_DRAWS in zoo/models/spanbert.h
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


def span_length_words(p, cap, rng):
    """The original's len_distrib: p(1-p)^(k-1) on [1, cap], renormalised, drawn
    as np.random.choice (first k whose cumulative probability exceeds U); sums
    left to right as zoo/models/span_masking.c."""
    z = 0.0
    for k in range(1, cap + 1):
        z += p * (1.0 - p) ** (k - 1)
    u, cum = rng.uniform(), 0.0
    for k in range(1, cap):
        cum += p * (1.0 - p) ** (k - 1) / z
        if u < cum:
            return k
    return cap


def original_block(tokens, kinds, c):
    """The block between [CLS] and [SEP]: positions and word starts."""
    at = [t for t, tok in enumerate(tokens) if tok not in (c["cls_token_id"], c["sep_token_id"])]
    return at, [kinds[t] != 1 for t in at]


def original_mask(tokens, kinds, c, rng):
    """PairWithSpanMaskingScheme.mask on one row, words completed."""
    m = c["masking"]
    at, starts = original_block(tokens, kinds, c)
    n = len(at)

    def word_start(j):
        while j > 0 and not starts[j]:
            j -= 1
        return j

    def word_end(j):
        r = j + 1
        while r < n and not starts[r]:
            r += 1
        return r

    mask_num = math.ceil(m.get("masking_budget", 0.15) * n)
    mask = set()
    while len(mask) < mask_num:
        span_len = span_length_words(m.get("span_probability", 0.2),
                                     m.get("max_span_length_cap", 10), rng)
        anchor = rng.randint(0, n - 1)
        if anchor in mask:
            continue
        right = word_end(anchor)
        mask.update(range(word_start(anchor), right))
        num_words = 1
        while num_words < span_len and right < n and len(mask) < mask_num:
            left, right = right, word_end(right)
            num_words += 1
            mask.update(range(left, right))
    raw = [0] * len(tokens)
    for j in mask:
        raw[at[j]] = 1
    return raw


def original_replace(tokens, kinds, raw, masked, c, rng, input_ids):
    """span_masking(replacement='span'): one U per merged span of the block."""
    at, _ = original_block(tokens, kinds, c)
    for j in range(len(at)):
        if not raw[at[j]] or (j > 0 and raw[at[j - 1]]):
            continue
        u = rng.uniform()
        k = j
        while k < len(at) and raw[at[k]]:
            t = at[k]
            if masked[t] and u >= 0.8:
                input_ids[t] = tokens[at[rng.randint(0, len(at) - 1)]] if u < 0.9 else tokens[t]
            k += 1


def special_ids(c):
    return {PAD, UNK, CLS, SEP, MASK, c["pad_token_id"]} | set(
        c["masking"].get("special_token_ids", []))


def span_masking_original(c, ids, kinds, lengths):
    rng = SplitMix64(c["masking"]["seed"])
    B, S = ids.shape
    special = special_ids(c)
    raw = torch.zeros(B, S, dtype=torch.long)
    mask_labels = torch.zeros(B, S, dtype=torch.long)
    labels = torch.full((B, S), -100, dtype=torch.long)
    masked_ids = ids.clone()
    for b in range(B):
        n = int(lengths[b])
        row, k = ids[b, :n].tolist(), kinds[b, :n].tolist()
        r = original_mask(row, k, c, rng)
        m = [int(r[t] and row[t] not in special) for t in range(n)]
        out = [MASK if m[t] else row[t] for t in range(n)]
        original_replace(row, k, r, m, c, rng, out)
        raw[b, :n] = torch.tensor(r)
        mask_labels[b, :n] = torch.tensor(m)
        masked_ids[b, :n] = torch.tensor(out)
        labels[b, :n] = torch.tensor([row[t] if m[t] else -100 for t in range(n)])
    return {"masking.raw_mask_labels": raw, "masking.mask_labels": mask_labels,
            "masking.input_ids": masked_ids, "masking.labels": labels}, -1


def span_masking(c, ids, kinds, lengths):
    """The padded batch, rows in order from one stream (SPEC 6.7.2)."""
    if c["masking"].get("style", "seed") == "original":
        return span_masking_original(c, ids, kinds, lengths)
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
        """The seed's loop; also records, per span token in order, x_{s-1},
        p_{i-s+1}, x_{e+1} and h0 (the named intermediates)."""
        self.named = {"x_left": [], "p": [], "x_right": [], "h0": []}
        for i, batch in enumerate(groups):
            for span in batch:
                start, end = span["start"], span["end"]
                assert start >= 1 and end + 1 < hidden_states.shape[1]
                idx = torch.arange(end - start + 1)
                context_s, context_e = hidden_states[i, start - 1, :], hidden_states[i, end + 1, :]
                for k, p_h in enumerate(self.span_pos_emb(idx)):
                    h[i, start + k, :] = torch.cat([context_s, p_h, context_e], dim=0)
                    for name, v in (("x_left", context_s), ("p", p_h), ("x_right", context_e),
                                    ("h0", h[i, start + k, :].clone())):
                        self.named[name].append(v)
        return h

    def forward(self, hidden_states, mask_labels):
        groups = self.find_consecutive_groups(mask_labels.tolist())
        h = self.projector(hidden_states)
        h = self.cal_span_emb(h, hidden_states, groups)
        h1 = self.head[2](self.head[1](self.head[0](h)))
        y = self.head[5](self.head[4](self.head[3](h1)))
        logits = self.classifier(y)
        at = span_tokens(groups)
        named = {k: torch.stack(v) for k, v in self.named.items()}
        named.update({"h1": h1[at], "y": y[at], "span_logits": logits[at]})
        return logits, groups, named


def span_tokens(groups):
    """(batch indices, positions) of every span token, in span order."""
    b = [i for i, row in enumerate(groups) for g in row for _ in range(g["start"], g["end"] + 1)]
    t = [k for row in groups for g in row for k in range(g["start"], g["end"] + 1)]
    return torch.tensor(b, dtype=torch.long), torch.tensor(t, dtype=torch.long)


class BertLayerNorm(nn.Module):
    """The original's TF-style LayerNorm, parameters gamma and beta."""

    def __init__(self, n, eps):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(n))
        self.beta = nn.Parameter(torch.zeros(n))
        self.eps = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return self.gamma * (x - u) / torch.sqrt(s + self.eps) + self.beta


class MLPWithLayerNorm(nn.Module):
    def __init__(self, c, input_size):
        super().__init__()
        H, eps = c["hidden_size"], c["layer_norm_eps"]
        self.linear1 = nn.Linear(input_size, H)
        self.layer_norm1 = BertLayerNorm(H, eps)
        self.linear2 = nn.Linear(H, H)
        self.layer_norm2 = BertLayerNorm(H, eps)
        self.act = Z.act(c["hidden_act"])

    def forward(self, hidden):
        h1 = self.layer_norm1(self.act(self.linear1(hidden)))
        return h1, self.layer_norm2(self.act(self.linear2(h1)))


class PairTargetHead(nn.Module):
    """BertPairTargetPredictionHead: pairs (bs, num_pairs, 2) of boundary
    positions -> scores (bs * num_pairs, max_targets, V); decoder = E."""

    def __init__(self, c):
        super().__init__()
        H, P = c["hidden_size"], c.get("sbo_position_embedding_size", 200)
        self.max_targets = c.get("sbo_max_targets", 15)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.position_embeddings = nn.Embedding(self.max_targets, P)
        self.mlp_layer_norm = MLPWithLayerNorm(c, 2 * H + P)

    def forward(self, hidden_states, pairs, E):
        bs, num_pairs, _ = pairs.size()
        _, _, dim = hidden_states.size()
        left, right = pairs[:, :, 0], pairs[:, :, 1]
        left_hidden = torch.gather(hidden_states, 1, left.unsqueeze(2).repeat(1, 1, dim))
        left_hidden = left_hidden.contiguous().view(bs * num_pairs, dim).unsqueeze(1).repeat(
            1, self.max_targets, 1)
        right_hidden = torch.gather(hidden_states, 1, right.unsqueeze(2).repeat(1, 1, dim))
        right_hidden = right_hidden.contiguous().view(bs * num_pairs, dim).unsqueeze(1).repeat(
            1, self.max_targets, 1)
        pos = self.position_embeddings.weight.unsqueeze(0).repeat(bs * num_pairs, 1, 1)
        h0 = torch.cat((left_hidden, right_hidden, pos), -1)
        h1, y = self.mlp_layer_norm(h0)
        scores = y @ E.t() + self.bias
        return scores, {"x_left": left_hidden, "x_right": right_hidden, "p": pos, "h0": h0,
                        "h1": h1, "y": y, "span_logits": scores}


def original_sbo(head, h, mask_labels, E):
    """The pairs of each row (padded with pairs (0, 0) as collate_2d pads),
    the head, and the rows of (pair, offset) for every span token in order."""
    groups = SBOHead.find_consecutive_groups(mask_labels.tolist())
    n = max(1, max(len(row) for row in groups))
    pairs = torch.zeros(len(groups), n, 2, dtype=torch.long)
    for b, row in enumerate(groups):
        for k, g in enumerate(row):
            assert g["start"] >= 1 and g["end"] + 1 < h.shape[1]
            assert g["end"] - g["start"] < head.max_targets
            pairs[b, k] = torch.tensor([g["start"] - 1, g["end"] + 1])
    _, named = head(h, pairs, E)
    rows = [b * n + k for b, row in enumerate(groups) for k, g in enumerate(row)
            for _ in range(g["start"], g["end"] + 1)]
    offs = [i - g["start"] for row in groups for g in row for i in range(g["start"], g["end"] + 1)]
    rows, offs = torch.tensor(rows, dtype=torch.long), torch.tensor(offs, dtype=torch.long)
    return {k: v[rows, offs] for k, v in named.items()}, groups


class SpanBertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c, pooler=False)
        self.cls = nn.Module()
        self.cls.predictions = R.LMHead(c)
        self.original = c.get("sbo_head", "seed") == "original"
        self.sbo_head = PairTargetHead(c) if self.original else SBOHead(c)


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


def sbo_spans(groups, S):
    """sbo.span_row/start/end, span_index, token_position, position (i - s + 1)."""
    spans = [(b, g["start"], g["end"]) for b, row in enumerate(groups) for g in row]
    per_token = [(k, i, i - s + 1) for k, (b, s, e) in enumerate(spans) for i in range(s, e + 1)]
    col = lambda rows, j: torch.tensor([r[j] for r in rows], dtype=torch.long)
    return {"sbo.span_row": col(spans, 0), "sbo.span_start": col(spans, 1),
            "sbo.span_end": col(spans, 2), "sbo.span_index": col(per_token, 0),
            "sbo.token_position": col(per_token, 1), "sbo.position": col(per_token, 2)}


def init_original_head(m):
    for ln in (m.sbo_head.mlp_layer_norm.layer_norm1, m.sbo_head.mlp_layer_norm.layer_norm2):
        ln.gamma.data.normal_(1.0, 0.2)
        ln.beta.data.normal_(0.0, 0.2)
    m.sbo_head.bias.data.normal_(0.0, 0.2)


def case(name, c, S, lengths, seed, named=True):
    """named: also expect the sbo.* intermediates (False keeps spanbert_a..c
    as they were written before those outputs existed)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    m = SpanBertForPreTraining(c)
    Z.hf_init(m, 0.2)
    m.cls.predictions.bias.data.normal_(0.0, 0.2)
    if m.original:
        init_original_head(m)
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
    V = c["vocab_size"]
    mlm_loss = F.cross_entropy(mlm_logits.reshape(-1, V), x["labels"].reshape(-1))
    out = {"mlm_logits": mlm_logits, "mlm_loss": mlm_loss}
    if m.original:
        sbo, groups = original_sbo(m.sbo_head, h, x["mask_labels"], E)
        target = x["labels"][span_tokens(groups)]
        sbo_loss = F.cross_entropy(sbo["span_logits"], target)
    else:
        sbo_logits, groups, sbo = m.sbo_head(h, x["mask_labels"])
        sbo_loss = F.cross_entropy(sbo_logits.reshape(-1, V), x["labels"].reshape(-1))
        out["sbo_logits"] = sbo_logits
    loss = mlm_loss + sbo_loss
    loss.backward()
    out.update({"sbo_loss": sbo_loss, "loss": loss})
    if named:
        out.update({"sbo." + k: v for k, v in sbo.items()})
        out.update(sbo_spans(groups, S))
    out.update(masking)
    R.bert_outputs(out, h, None, hidden, probs)
    runs = [g["end"] - g["start"] + 1 for row in groups for g in row]
    print(name, "spans started", spans, "runs", runs, "masked", int(x["mask_labels"].sum()),
          "raw", int(masking["masking.raw_mask_labels"].sum()))
    tied = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
            "cls.predictions.decoder.bias": "cls.predictions.bias"}
    if m.original:
        tied["sbo_head.decoder.weight"] = "bert.embeddings.word_embeddings.weight"
    else:
        tied["sbo_head.classifier.bias"] = "sbo_head.bias"
    Z.write_case(name, c, m, x, out, tied=tied)


if __name__ == "__main__":
    # sbo_* at their defaults (dim_ffn = intermediate_size, LN 1e-5, 30 span rows)
    case("spanbert_a", config(masking={"seed": 11, "masking_budget": 0.3}), 24, [24, 17, 9], 2,
         named=False)
    case("spanbert_b", config(vocab_size=100, hidden_size=24, num_attention_heads=3,
                              num_hidden_layers=1, intermediate_size=48, hidden_act="gelu_new",
                              sbo_dim_ffn=40, sbo_layer_norm_eps=1e-5, sbo_max_span_length=3,
                              masking={"seed": 7, "masking_budget": 0.4, "span_probability": 0.3,
                                       "max_span_length_cap": 6, "special_token_ids": [5]}),
         20, [20, 13], 3, named=False)
    # many rows and a large budget so the masking passes the boundary rules
    # (budget exactly 5, spans past the row end, words longer than the span):
    # changing any of them changes these masks
    case("spanbert_c", config(vocab_size=80, hidden_size=16, num_attention_heads=2,
                              num_hidden_layers=1, intermediate_size=32,
                              masking={"seed": 21, "masking_budget": 0.5,
                                       "span_probability": 0.3}),
         32, [32, 30, 25, 21, 18], 21, named=False)
    # the seed's head with its named intermediates (h0 in the seed's order)
    case("spanbert_named", config(vocab_size=90, hidden_size=16, num_attention_heads=2,
                                  num_hidden_layers=1, intermediate_size=24, sbo_dim_ffn=20,
                                  masking={"seed": 5, "masking_budget": 0.3}),
         24, [24, 19], 5)
    # the original code's head (gelu_new, so hidden_act reaches its MLP) on
    # the paper's masking: words, ceil budget, 80/10/10 per span
    case("spanbert_original", config(vocab_size=90, hidden_size=16, num_attention_heads=2,
                                     num_hidden_layers=1, intermediate_size=24,
                                     hidden_act="gelu_new", sbo_head="original",
                                     sbo_max_targets=8, sbo_position_embedding_size=12,
                                     masking={"seed": 3, "masking_budget": 0.3,
                                              "style": "original"}),
         30, [30, 26, 17], 8)
    # the original head with the seed's masking and relu; the last row's
    # spans are short, the table has exactly the longest span's rows
    case("spanbert_original_b", config(vocab_size=70, hidden_size=12, num_attention_heads=2,
                                       num_hidden_layers=1, intermediate_size=16,
                                       hidden_act="relu", sbo_head="original",
                                       sbo_max_targets=3, sbo_position_embedding_size=8,
                                       masking={"seed": 9, "masking_budget": 0.25}),
         20, [20, 14], 4)
