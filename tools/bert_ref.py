"""tools/bert_ref.py - SPEC section 6.1 in PyTorch, written from the SPEC.

BertModel (HF flavour, 6.1.1, and the pytorch_pretrained_bert 0.6.2 flavour,
6.1.2), BertForSequenceClassification (6.2) and BertForMaskedLM. The module
and parameter names are exactly the state_dict keys of the originals.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import act


class BertEmbeddings(nn.Module):
    def __init__(self, c, ppb=False):
        super().__init__()
        pad = 0 if ppb else c["pad_token_id"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=pad)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.ppb = ppb

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])
        w, p, t = (self.word_embeddings(ids), self.position_embeddings(pos),
                   self.token_type_embeddings(types))
        # the order of the sum differs between the flavours (SPEC 6.1.1 / 6.1.2)
        return self.LayerNorm((w + p) + t if self.ppb else (w + t) + p)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.nh = c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)

    def split(self, x):
        B, S, H = x.shape
        return x.view(B, S, self.nh, H // self.nh).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + mask
        probs = scores.softmax(-1)
        ctx = (probs @ v).permute(0, 2, 1, 3)
        return ctx.reshape(ctx.shape[0], ctx.shape[1], -1), probs


class Dense(nn.Module):
    """attention.output / output: dense + LayerNorm(residual)."""

    def __init__(self, n_in, c):
        super().__init__()
        self.dense = nn.Linear(n_in, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = Dense(c["hidden_size"], c)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = Dense(c["intermediate_size"], c)
        self.act = act(c["hidden_act"])

    def forward(self, x, mask):
        ctx, probs = self.attention.self(x, mask)
        y = self.attention.output(ctx, x)
        return self.output(self.act(self.intermediate.dense(y)), y), probs


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])


class BertModel(nn.Module):
    def __init__(self, c, ppb=False, pooler=True):
        super().__init__()
        self.embeddings = BertEmbeddings(c, ppb)
        self.encoder = BertEncoder(c)
        if pooler:
            self.pooler = BertPooler(c)
        self.ppb = ppb

    def forward(self, ids, mask, types):
        dtype = self.embeddings.LayerNorm.weight.dtype
        fill = -10000.0 if self.ppb else torch.finfo(dtype).min
        m = (1.0 - mask[:, None, None, :].to(dtype)) * fill
        x = self.embeddings(ids, types)
        hidden, probs = [x], []
        for layer in self.encoder.layer:
            x, p = layer(x, m)
            hidden.append(x)
            probs.append(p)
        pooled = torch.tanh(self.pooler.dense(x[:, 0])) if hasattr(self, "pooler") else None
        return x, pooled, hidden, probs


def bert_outputs(out, x, pooled, hidden, probs):
    out["last_hidden_state"] = x
    if pooled is not None:
        out["pooler_output"] = pooled
    for i, h in enumerate(hidden):
        out["hidden_states.%d" % i] = h
    for i, p in enumerate(probs):
        out["layers.%d.attention_probs" % i] = p


class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])


class LMHead(nn.Module):
    """cls.predictions: transform.dense, transform.LayerNorm, bias; decoder tied."""

    def __init__(self, c):
        super().__init__()
        self.transform = nn.Module()
        self.transform.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.transform.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.act = act(c["hidden_act"])

    def forward(self, x, E):
        t = self.transform.LayerNorm(self.act(self.transform.dense(x)))
        return t @ E.t() + self.bias


class BertForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c, pooler=False)
        self.cls = nn.Module()
        self.cls.predictions = LMHead(c)
