#!/usr/bin/python3
"""tools/fixtures_cgbert.py - parity fixtures for CGBertForSequenceClassification
(SPEC 6.3) and QACGBertForSequenceClassification (SPEC 6.4), written from the
SPEC with the original repository's module and parameter names
(frankaging/Quasi-Attention-ABSA, seed bugs fixed as SPEC 6.8 says).
The options where the seed, the paper and the original code differ are
config keys (default: the seed's): pooler_type, lambda_init (init only, tested
in C), and for QACGBERT context_dropout_prob (the original's last revision
drops out C_Q and C_K in training) and the paper's alpha, beta, gamma
(quasi_scale, lambda_q_scale, lambda_k_scale). The *_views and option cases
also hold the named intermediates (deep_context, context_q/k, q_hat/k_hat,
quasi_attention_scores, pooler_weights); the first four cases keep the outputs
they were written with, bit for bit.
Run: /usr/bin/python3 tools/fixtures_cgbert.py"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import st
import zoo_common as Z


class BERTLayerNorm(nn.Module):
    """TF-style LayerNorm with parameters gamma/beta, eps 1e-12."""

    def __init__(self, c):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(c["hidden_size"]))
        self.beta = nn.Parameter(torch.zeros(c["hidden_size"]))
        self.eps = c["layer_norm_eps"]

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return self.gamma * (x - u) / torch.sqrt(s + self.eps) + self.beta


class BERTEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], H)       # no padding_idx
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], H)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], H)
        self.LayerNorm = BERTLayerNorm(c)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])
        e = (self.word_embeddings(ids) + self.position_embeddings(pos)) \
            + self.token_type_embeddings(types)
        return self.LayerNorm(e)


def split(x, nh):
    B, S, H = x.shape
    return x.view(B, S, nh, H // nh).permute(0, 2, 1, 3)


def merge(x):
    x = x.permute(0, 2, 1, 3)
    return x.reshape(x.shape[0], x.shape[1], -1)


class ContextBERTSelfAttention(nn.Module):
    """quasi=False: CGBERT (6.3); quasi=True: QACGBERT (6.4)."""

    def __init__(self, c, quasi):
        super().__init__()
        H, nh = c["hidden_size"], c["num_attention_heads"]
        d = H // nh
        self.nh, self.quasi = nh, quasi
        self.Wq, self.Wk, self.Wv = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        cw = H if quasi else d
        self.Wcq, self.Wck = nn.Linear(cw, cw), nn.Linear(cw, cw)
        self.lambda_Qc = nn.Linear(d, 1, bias=quasi)
        self.lambda_Q = nn.Linear(d, 1, bias=quasi)
        self.lambda_Kc = nn.Linear(d, 1, bias=quasi)
        self.lambda_K = nn.Linear(d, 1, bias=quasi)
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])
        self.lambda_act = nn.Sigmoid()
        if quasi:
            self.quasi_act = nn.Sigmoid()
        # QACGBERT.py's last revision: self.dropout(C_Q), self.dropout(C_K) after the split
        self.context_dropout = c.get("context_dropout_prob", 0.0)
        self.alpha = c.get("quasi_scale", 1.0)
        self.beta = c.get("lambda_q_scale", 1.0)
        self.gamma = c.get("lambda_k_scale", 1.0)

    def forward(self, x, D, M):
        Q, K, V = split(self.Wq(x), self.nh), split(self.Wk(x), self.nh), split(self.Wv(x), self.nh)
        d = Q.shape[-1]
        out = {}
        if not self.quasi:
            Cs = split(D, self.nh)
            Qc, Kc = self.Wcq(Cs), self.Wck(Cs)
            lq = torch.sigmoid(self.lambda_Qc(Qc) + self.lambda_Q(Q))
            lk = torch.sigmoid(self.lambda_Kc(Kc) + self.lambda_K(K))
            Qh = (1 - lq) * Q + lq * Qc
            Kh = (1 - lk) * K + lk * Kc
            A = (Qh @ Kh.transpose(-1, -2) / math.sqrt(d) + M).softmax(-1)
            probs = A
            out.update(q_hat=Qh, k_hat=Kh)
        else:
            A = (Q @ K.transpose(-1, -2) / math.sqrt(d) + M).softmax(-1)
            Qc, Kc = split(self.Wcq(D), self.nh), split(self.Wck(D), self.nh)
            Qc = F.dropout(Qc, self.context_dropout, self.training)
            Kc = F.dropout(Kc, self.context_dropout, self.training)
            Qs = torch.sigmoid(Qc @ Kc.transpose(-1, -2) / math.sqrt(d) + M)
            if self.alpha != 1.0:
                Qs = self.alpha * Qs
            lq = torch.sigmoid(self.lambda_Qc(Qc) + self.lambda_Q(Q))
            lk = torch.sigmoid(self.lambda_Kc(Kc) + self.lambda_K(K))
            bq = lq if self.beta == 1.0 else self.beta * lq
            gk = lk if self.gamma == 1.0 else self.gamma * lk
            lam = 1 - (bq + gk)
            quasi = lam * Qs
            probs = A + quasi
            out.update(lambda_context=lam, new_attention_probs=probs, quasi_attention_prob=quasi,
                       quasi_attention_scores=Qs)
        out.update(attention_probs=A, lambda_q=lq, lambda_k=lk, deep_context=D,
                   context_q=Qc, context_k=Kc)
        return merge(probs @ V), out


class BERTSelfOutput(nn.Module):
    """dense, LayerNorm(residual); BERTOutput is the same on the FFN."""

    def __init__(self, n_in, c):
        super().__init__()
        self.dense = nn.Linear(n_in, c["hidden_size"])
        self.LayerNorm = BERTLayerNorm(c)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class BERTOutput(BERTSelfOutput):
    pass


class ContextBERTAttention(nn.Module):
    def __init__(self, c, quasi):
        super().__init__()
        self.self = ContextBERTSelfAttention(c, quasi)
        self.output = BERTSelfOutput(c["hidden_size"], c)


class BERTIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])


class ContextBERTLayer(nn.Module):
    def __init__(self, c, quasi):
        super().__init__()
        self.attention = ContextBERTAttention(c, quasi)
        self.intermediate = BERTIntermediate(c)
        self.output = BERTOutput(c["intermediate_size"], c)

    def forward(self, x, D, M):
        ctx, out = self.attention.self(x, D, M)
        y = self.attention.output(ctx, x)
        return self.output(Z.gelu(self.intermediate.dense(y)), y), out


class ContextBERTPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.attention_gate = nn.Sequential(nn.Linear(H, 32), nn.ReLU(),
                                            nn.Dropout(c["hidden_dropout_prob"]), nn.Linear(32, 1))
        self.dense = nn.Linear(H, H)
        self.activation = nn.Tanh()
        self.kind = c["pooler_type"]

    def forward(self, x, mask, out):
        if self.kind == "first_token":
            h = x[:, 0]
            a = torch.zeros(x.shape[:2], dtype=x.dtype)
            a[:, 0] = 1.0
        else:
            s = self.attention_gate(x).masked_fill(mask.unsqueeze(-1) == 0, -1e9)
            a = F.softmax(s, dim=1)
            h = (a.permute(0, 2, 1) @ x).squeeze(1)
        out["pooler_weights"] = a.reshape(x.shape[:2])
        return torch.tanh(self.dense(h))


class ContextBERTEncoder(nn.Module):
    def __init__(self, c, quasi):
        super().__init__()
        H, L = c["hidden_size"], c["num_hidden_layers"]
        self.layer = nn.ModuleList([ContextBERTLayer(c, quasi) for _ in range(L)])
        self.context_layer = nn.ModuleList([nn.Linear(2 * H, H) for _ in range(L)])


class ContextBertModel(nn.Module):
    def __init__(self, c, quasi):
        super().__init__()
        self.embeddings = BERTEmbeddings(c)
        self.encoder = ContextBERTEncoder(c, quasi)
        self.pooler = ContextBERTPooler(c)
        self.context_embeddings = nn.Embedding(c["context_vocab_size"], c["hidden_size"])

    def forward(self, ids, types, mask, context_ids, out):
        dtype = self.context_embeddings.weight.dtype
        M = (1.0 - mask[:, None, None, :].to(dtype)) * -10000.0
        x = self.embeddings(ids, types)
        c = self.context_embeddings(context_ids[:, 0])                  # [B, H]
        C0 = torch.stack(ids.shape[1] * [c], dim=1)                       # [B, S, H]
        out["hidden_states.0"] = x
        for l, (layer, ctx) in enumerate(zip(self.encoder.layer, self.encoder.context_layer)):
            D = ctx(torch.cat([C0, x], dim=-1)) + C0
            x, att = layer(x, D, M)
            out["hidden_states.%d" % (l + 1)] = x
            for k, v in att.items():
                out["layers.%d.%s" % (l, k)] = v
        return self.pooler(x, mask, out)


class CGBertForSequenceClassification(nn.Module):
    def __init__(self, c, quasi=False):
        super().__init__()
        self.bert = ContextBertModel(c, quasi)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])


class QACGBertForSequenceClassification(CGBertForSequenceClassification):
    def __init__(self, c):
        super().__init__(c, quasi=True)


def init(model, std):
    """Z.hf_init plus BERTLayerNorm's gamma ~ N(1, std), beta ~ N(0, std)."""
    Z.hf_init(model, std)
    for m in model.modules():
        if isinstance(m, BERTLayerNorm):
            m.gamma.data.normal_(1.0, std)
            m.beta.data.normal_(0.0, std)


def config(arch, pooler, **kw):
    c = {"architectures": [arch], "vocab_size": 120, "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 40,
         "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
         "pad_token_id": 0, "num_labels": 3, "context_vocab_size": 8, "pooler_type": pooler}
    c.update(kw)
    return c


# What the first four cases were written with (they stay bit for bit).
FIRST_OUTPUTS = ("attention_probs", "lambda_q", "lambda_k", "lambda_context",
                 "new_attention_probs", "quasi_attention_prob")


def first_outputs(out):
    keep = {}
    for k, v in out.items():
        if not k.startswith("layers.") or k.split(".")[2] in FIRST_OUTPUTS:
            if k != "pooler_weights":
                keep[k] = v
    return keep


def case(name, arch, pooler, S, lengths, seed, views=True, train=False, **kw):
    """views: write the named intermediates too. train: forward and backward in
    training mode (every dropout of the config applies), into expected_train."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    c = config(arch, pooler, **kw)
    m = globals()[arch](c)
    init(m, 0.2)
    m = m.double().eval()        # dropout off (the attention_gate Sequential holds one)
    if train:
        m.train()
    ids, mask = Z.padded_batch(gen, S, c["vocab_size"], lengths)
    types = torch.zeros_like(ids)
    for b, n in enumerate(lengths):
        types[b, n // 2:n] = 1       # the auxiliary sentence as segment B
    B = len(lengths)
    x = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
         "context_ids": torch.randint(0, c["context_vocab_size"], (B, 1), generator=gen),
         "labels": torch.randint(0, c["num_labels"], (B,), generator=gen)}
    out = {}
    pooled = m.bert(ids, types, mask, x["context_ids"], out)
    logits = m.classifier(pooled)
    loss = F.cross_entropy(logits, x["labels"])
    loss.backward()
    out.update(pooled_output=pooled, logits=logits, loss=loss)
    if not views:
        out = first_outputs(out)
    if train:
        write_train(name, m, out)
    else:
        Z.write_case(name, c, m, x, out)


def write_train(name, model, out):
    """expected_train.safetensors beside a case written in eval mode: the
    training-mode outputs and every parameter's gradient."""
    expected = {k: v.detach().float() for k, v in out.items()}
    for key, p in model.named_parameters():
        expected["grad." + key] = (p.grad if p.grad is not None
                                   else torch.zeros_like(p)).detach().float()
    path = os.path.join(Z.ZOO, name, "expected_train.safetensors")
    st.save(path, expected)
    print("wrote", path)


if __name__ == "__main__":
    A, Q = "CGBertForSequenceClassification", "QACGBertForSequenceClassification"
    case("cgbert_gate", A, "attention_gate", 16, [16, 11, 7], 11, views=False)
    case("cgbert_first", A, "first_token", 18, [10, 18], 12, views=False, num_attention_heads=2)
    case("qacgbert_gate", Q, "attention_gate", 17, [9, 17, 13], 13, views=False)
    case("qacgbert_first", Q, "first_token", 20, [20, 6], 14, views=False, num_attention_heads=2,
         num_hidden_layers=1)
    # the named intermediates, seed defaults
    case("cgbert_views", A, "attention_gate", 12, [12, 7], 15)
    case("qacgbert_views", Q, "attention_gate", 13, [9, 13], 16)
    # the original code's choices: first-token pooler, gates drawn with std 0.01
    case("cgbert_original", A, "first_token", 11, [11, 6, 9], 17, lambda_init="original")
    # the paper's alpha, beta, gamma; the original's context dropout (eval: none)
    paper = dict(quasi_scale=0.5, lambda_q_scale=0.75, lambda_k_scale=1.25,
                 context_dropout_prob=0.1, lambda_init="original")
    case("qacgbert_paper", Q, "first_token", 10, [10, 4], 18, **paper)
    # training mode with dropout only on C_Q, C_K, p = 1: C_Q = C_K = 0, so the
    # quasi scores are alpha/2 at real keys and Wcq, Wck get no gradient
    ctx = dict(context_dropout_prob=1.0, hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0)
    case("qacgbert_context_dropout", Q, "attention_gate", 9, [9, 5], 19, **ctx)
    case("qacgbert_context_dropout", Q, "attention_gate", 9, [9, 5], 19, train=True, **ctx)
