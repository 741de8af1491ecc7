#!/usr/bin/python3
"""tools/fixtures_bertsum.py - parity fixtures for the BertSumExt Summarizer
(SPEC 6.5, encoder = 'transformer'), written from the SPEC and nlpyang/BertSum
(model_builder.py, encoder.py, neural.py) with the 6.8 fixes.
Run: /usr/bin/python3 tools/fixtures_bertsum.py

Besides the scores and the loss, each case stores the inter-sentence
Transformer's intermediates: inter_hidden_states.{i} (B, N, H), i = 0 the
input h^0 and i = l + 1 the output of layer l, and inter.{l}.attention_probs
(B, heads, N, N), the softmax of layer l before its dropout.

The originals as options (config keys; docs/models/bertsum.md):
  bertsum_classifier  "encoder": "classifier" - encoder.py's Classifier, the
                      paper's simple classifier sigmoid(W_o T_i + b_o) * mask
  bertsum_post        "inter_norm": "post" - the paper's section 2.2
                      equations: h~ = LN(h + MHAtt(h)), h = LN(h~ + FFN(h~)),
                      Y = sigmoid(W_o h^L + b_o) (no final LayerNorm)
  bertsum_pe_scaled   "pe_scale": "sqrt_hidden" - the seed's
                      PositionalEncoding.forward, h0 = T * sqrt(H) + pe (the
                      original encoder adds pe[:, :N] to T unscaled)"""
import math

import torch
import torch.nn as nn

import bert_ref as R
import zoo_common as Z


class PositionalEncoding(nn.Module):
    """The sinusoid table, built in float32 exactly as BertSum does; the
    encoder adds pe[:, :N] itself (no sqrt(dim) scaling, SPEC 6.8)."""

    def __init__(self, dropout, dim, max_len):
        super().__init__()
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float)
                             * -(math.log(10000.0) / dim))
        pe[:, 0::2] = torch.sin(position.float() * div_term)
        pe[:, 1::2] = torch.cos(position.float() * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.dropout = nn.Dropout(p=dropout)


class MultiHeadedAttention(nn.Module):
    """OpenNMT attention: query scaled before the product, padded keys
    replaced by -1e18."""

    def __init__(self, heads, d_model, dropout):
        super().__init__()
        self.heads, self.d = heads, d_model // heads
        self.linear_keys = nn.Linear(d_model, d_model)
        self.linear_values = nn.Linear(d_model, d_model)
        self.linear_query = nn.Linear(d_model, d_model)
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)
        self.final_linear = nn.Linear(d_model, d_model)

    def forward(self, key, value, query, pad):
        B = key.shape[0]

        def shape(x):
            return x.view(B, -1, self.heads, self.d).transpose(1, 2)

        k, v = shape(self.linear_keys(key)), shape(self.linear_values(value))
        q = shape(self.linear_query(query)) / math.sqrt(self.d)
        scores = torch.matmul(q, k.transpose(2, 3))
        scores = scores.masked_fill(pad[:, None, None, :], -1e18)
        self.probs = self.softmax(scores)                 # (B, heads, N, N), kept
        ctx = torch.matmul(self.probs, v).transpose(1, 2).reshape(B, -1, self.heads * self.d)
        return self.final_linear(ctx)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout_1 = nn.Dropout(dropout)
        self.dropout_2 = nn.Dropout(dropout)

    def forward(self, x, post=False):
        if post:                                          # the paper: LN(x + FFN(x))
            return self.layer_norm(self.w_2(Z.gelu_tanh(self.w_1(x))) + x)
        return self.w_2(Z.gelu_tanh(self.w_1(self.layer_norm(x)))) + x


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, heads, d_ff, dropout):
        super().__init__()
        self.self_attn = MultiHeadedAttention(heads, d_model, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, i, x, pad, post=False):
        if post:                                          # the paper's h~ = LN(h + MHAtt(h))
            h = self.layer_norm(self.self_attn(x, x, x, pad) + x)
            return self.feed_forward(h, post=True)
        x_norm = self.layer_norm(x) if i != 0 else x      # layer 0: no pre-norm
        return self.feed_forward(self.self_attn(x_norm, x_norm, x_norm, pad) + x)


class TransformerInterEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, p = c["hidden_size"], c["hidden_dropout_prob"]
        self.post = c.get("inter_norm", "pre") == "post"
        self.scale = math.sqrt(H) if c.get("pe_scale", "none") == "sqrt_hidden" else None
        self.pos_emb = PositionalEncoding(p, H, c["pe_max_len"])
        self.transformer_inter = nn.ModuleList(
            [TransformerEncoderLayer(H, c["heads"], c["ff_size"], p)
             for _ in range(c["inter_layers"])])
        self.dropout = nn.Dropout(p)
        self.layer_norm = nn.LayerNorm(H, eps=1e-6)
        self.wo = nn.Linear(H, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, sents_vec, mask_cls):
        mask = mask_cls[:, :, None].to(sents_vec.dtype)
        x = sents_vec * mask
        if self.scale is not None:                        # PositionalEncoding.forward
            x = x * self.scale
        x = x + self.pos_emb.pe[:, :sents_vec.shape[1]]
        self.intermediates = {"inter_hidden_states.0": x}
        for i, layer in enumerate(self.transformer_inter):
            x = layer(i, x, mask_cls == 0, self.post)
            self.intermediates["inter.%d.attention_probs" % i] = layer.self_attn.probs
            self.intermediates["inter_hidden_states.%d" % (i + 1)] = x
        scores = self.sigmoid(self.wo(x if self.post else self.layer_norm(x)))
        return scores.squeeze(-1) * mask_cls.to(x.dtype)


class Classifier(nn.Module):
    """encoder.py's Classifier (args.encoder == 'classifier')."""

    def __init__(self, c):
        super().__init__()
        self.linear1 = nn.Linear(c["hidden_size"], 1)
        self.sigmoid = nn.Sigmoid()
        self.intermediates = {}

    def forward(self, x, mask_cls):
        return self.sigmoid(self.linear1(x).squeeze(-1)) * mask_cls.to(x.dtype)


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = R.BertModel(c, ppb=True)


class Summarizer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = Bert(c)
        classifier = c.get("encoder", "transformer") == "classifier"
        self.encoder = Classifier(c) if classifier else TransformerInterEncoder(c)

    def forward(self, src, segs, clss, mask, mask_cls):
        top_vec = self.bert.model(src, mask, segs)[0]
        sents_vec = top_vec[torch.arange(top_vec.size(0)).unsqueeze(1), clss]
        sents_vec = sents_vec * mask_cls[:, :, None].to(top_vec.dtype)
        return top_vec, sents_vec, self.encoder(sents_vec, mask_cls)


def config(**kw):
    c = {"architectures": ["Summarizer"], "vocab_size": 120, "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64,
         "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
         "pad_token_id": 0, "ff_size": 64, "heads": 4, "inter_layers": 2,
         "inter_layer_norm_eps": 1e-6, "pe_max_len": 64}
    c.update(kw)
    return c


def documents(gen, c, S, docs, N):
    """docs: per document, the lengths of its sentences ([CLS] w.. [SEP]).
    Returns src, segs (interval segments), clss, mask, mask_cls as BertSum's
    data loader builds them: padding 0 everywhere, clss padded with 0."""
    B = len(docs)
    src = torch.zeros(B, S, dtype=torch.long)
    segs = torch.zeros(B, S, dtype=torch.long)
    clss = torch.zeros(B, N, dtype=torch.long)
    mask_cls = torch.zeros(B, N, dtype=torch.long)
    for b, lengths in enumerate(docs):
        t = 0
        for n, length in enumerate(lengths):
            src[b, t:t + length] = torch.randint(5, c["vocab_size"], (length,), generator=gen)
            src[b, t], src[b, t + length - 1] = 1, 2
            segs[b, t:t + length] = n % 2
            clss[b, n], mask_cls[b, n] = t, 1
            t += length
        assert t <= S
    return {"src": src, "segs": segs, "clss": clss, "mask": (src != 0).long(),
            "mask_cls": mask_cls}


def case(name, S, docs, N, seed, **kw):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    c = config(**kw)
    m = Summarizer(c)
    Z.hf_init(m, 0.2)
    m = m.double()            # the pe buffer too: its float32 values, exactly
    x = documents(gen, c, S, docs, N)
    labels = torch.randint(0, 2, (len(docs), N), generator=gen) * x["mask_cls"]
    b_pad = next(b for b, d in enumerate(docs) if len(d) < N)
    labels[b_pad, N - 1] = 1  # a label on a padded sentence: the loss mask must drop it
    x["labels"] = labels
    top_vec, sents_vec, sent_scores = m(x["src"], x["segs"], x["clss"], x["mask"],
                                        x["mask_cls"])
    bce = nn.BCELoss(reduction="none")(sent_scores, labels.double())
    loss = (bce * x["mask_cls"].double()).sum()
    loss.backward()
    out = {"top_vec": top_vec, "sents_vec": sents_vec, "sent_scores": sent_scores,
           "loss": loss}
    out.update(m.encoder.intermediates)
    Z.write_case(name, c, m, x, out)


if __name__ == "__main__":
    # inter_layers 2, heads 4: layer 1 has the pre-norm, layer 0 not
    case("bertsum_a", 24, [[5, 6, 4, 7], [6, 5], [4, 4, 5]], 4, 11)
    # inter_layers 1, heads 2, one BERT layer, H 16
    case("bertsum_b", 20, [[4, 5], [8, 6, 6]], 3, 12, hidden_size=16,
         num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, heads=2,
         ff_size=24, inter_layers=1, vocab_size=90)
    # inter_layers 3, heads 2, a one-sentence document
    case("bertsum_c", 18, [[18], [3, 4, 5, 3], [5, 6]], 5, 13, heads=2, ff_size=48,
         inter_layers=3, vocab_size=150, pe_max_len=32)
    # the original's Classifier: no positional encoding, no LayerNorm
    case("bertsum_classifier", 20, [[5, 6, 4], [7, 6]], 3, 14, encoder="classifier")
    # the paper's post-norm equations, 2 layers (both use their layer_norm)
    case("bertsum_post", 22, [[5, 6, 4, 7], [6, 5]], 4, 15, inter_norm="post")
    # the seed's PositionalEncoding.forward: sentence vectors times sqrt(H)
    case("bertsum_pe_scaled", 20, [[6, 5, 4], [8, 7]], 3, 16, pe_scale="sqrt_hidden")
