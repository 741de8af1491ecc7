#!/usr/bin/python3
"""tools/fixtures_qaconv.py - parity fixtures for QAConvModelV2 and its trainer
loss (SPEC 6.6), written from the seed (../shared/seeds/qaconv.txt) with the
SPEC's fixes: `token_type_ids is None` (not `not token_type_ids`), token types
derived from the FIRST [SEP]. Run: /usr/bin/python3 tools/fixtures_qaconv.py

Cases (padding in every batch, float64 reference):
  qaconv_given    token_type_ids given, L=2, Q=8, F=16, 6 question types;
                  an end position past S (ignored) and a negative start (-> 0)
  qaconv_derived  token_type_ids derived from [SEP], L=1, Q=4 (one question is
                  longer than Q), F=8, 4 question types, T=4, divisor 3;
                  a start position past S (ignored)
  qaconv_logits   "query_loss_input": "logits" - MT-DNN's task loss (the seed's
                  reference): the question-type CE reads the logits, not the
                  softmax probabilities the seed's cal_query_loss gives it

Every case also stores the intermediates a learner draws: query_vector (B, H),
the seed's embedded_query after query_layer, and conv_output1/3/5
(B, conv_filters, S), the ReLU'd feature maps of the three Conv1d.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import bert_ref as R
import zoo_common as Z

SEP = 2


class QAConvModelV2(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, Q, Fn = c["hidden_size"], c["query_len"], c["conv_filters"]
        self.c = c
        self.backbone = R.BertModel(c)
        self.query_layer = nn.Linear(Q * H, H, bias=True)
        self.query_calssify_layer = nn.Linear(H, c["num_question_types"], bias=True)
        self.key_layer = nn.Linear(H, H, bias=True)
        self.value_layer = nn.Linear(H, H, bias=True)
        self.conv1d_layer1 = nn.Conv1d(H, Fn, kernel_size=1)
        self.conv1d_layer3 = nn.Conv1d(H, Fn, kernel_size=3, padding=1)
        self.conv1d_layer5 = nn.Conv1d(H, Fn, kernel_size=5, padding=2)
        self.drop_out = nn.Dropout(0.3)
        self.classify_layer = nn.Linear(Fn * 3, 2, bias=True)

    def make_token_type_ids(self, input_ids):
        """0 before the first [SEP] of each row, 1 from it on (the seed's loop)."""
        tt = torch.zeros_like(input_ids)
        for b, row in enumerate(input_ids):
            sep = int((row == self.c["sep_token_id"]).nonzero()[0, 0])
            tt[b, sep:] = 1
        return tt

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        types = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        seq, _, _, _ = self.backbone(input_ids, attention_mask, types)
        if token_type_ids is None:
            token_type_ids = self.make_token_type_ids(input_ids)
        B, H, Q = seq.shape[0], seq.shape[2], self.c["query_len"]
        q = seq * (token_type_ids.unsqueeze(-1) == 0)
        q = F.relu(q)                                   # the seed's Dropout(0.1): eval
        q = q[:, :Q, :].reshape(B, 1, -1)
        q = self.query_layer(q)                         # (B, 1, H)
        query_scores = self.query_calssify_layer(q.squeeze(1))
        query_logits = F.softmax(query_scores, -1)
        k = self.key_layer(seq * (token_type_ids.unsqueeze(-1) == 1))
        rate = torch.matmul(k, q.transpose(1, 2))
        rate = rate / math.sqrt(H)
        rate = rate / self.c["attention_temperature"]
        rate = F.softmax(rate, 1)                       # (B, S, 1), over every position
        v = self.value_layer(seq) * rate
        x = v.transpose(1, 2)
        c1 = F.relu(self.conv1d_layer1(x))
        c3 = F.relu(self.conv1d_layer3(x))
        c5 = F.relu(self.conv1d_layer5(x))
        z = self.classify_layer(self.drop_out(torch.cat((c1, c3, c5), dim=1).transpose(1, 2)))
        start, end = z.split(1, dim=-1)
        return {"start_logits": start.squeeze(-1), "end_logits": end.squeeze(-1),
                "query_logits": query_logits, "attention_rate": rate,
                "last_hidden_state": seq, "used_token_type_ids": token_type_ids,
                "query_vector": q.squeeze(1), "conv_output1": c1, "conv_output3": c3,
                "conv_output5": c5, "query_scores": query_scores}


def trainer_loss(c, out, start_positions, end_positions, question_type):
    """train_mrc.py: HF's clamp/ignore QA loss plus CE on the question-type
    PROBABILITIES divided by query_loss_divisor (kept as the seed trains)."""
    S = out["start_logits"].shape[1]
    ce = nn.CrossEntropyLoss(ignore_index=S)
    qa = (ce(out["start_logits"], start_positions.clamp(0, S)) +
          ce(out["end_logits"], end_positions.clamp(0, S))) / 2
    logits = c.get("query_loss_input", "probabilities") == "logits"
    scores = out.pop("query_scores")  # not an output of bertc: the CE's input when logits
    query = nn.CrossEntropyLoss()(scores if logits else out["query_logits"],
                                  question_type) / c["query_loss_divisor"]
    out["qa_loss"], out["query_loss"], out["loss"] = qa, query, qa + query


def config(**kw):
    c = {"architectures": ["QAConvModelV2"], "vocab_size": 120, "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 40,
         "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
         "pad_token_id": 0, "model_type": "bert", "sep_token_id": SEP,
         "query_len": 8, "conv_filters": 16, "num_question_types": 6,
         "attention_temperature": 10.0, "query_loss_divisor": 5.0}
    c.update(kw)
    return c


def qa_batch(gen, c, S, rows):
    """rows: (question length, context length) each; [CLS] q [SEP] ctx [SEP] pad.
    Word ids avoid [SEP]; HF pair token types (question and its [SEP] 0)."""
    B = len(rows)
    ids = torch.zeros(B, S, dtype=torch.long)
    mask = torch.zeros(B, S, dtype=torch.long)
    types = torch.zeros(B, S, dtype=torch.long)
    for b, (nq, nc) in enumerate(rows):
        n = nq + nc + 3
        assert n <= S
        ids[b, :n] = torch.randint(5, c["vocab_size"], (n,), generator=gen)
        ids[b, 0], ids[b, nq + 1], ids[b, n - 1] = 1, SEP, SEP
        mask[b, :n] = 1
        types[b, nq + 2:n] = 1
    return ids, mask, types


def case(name, c, S, rows, start, end, qtype, seed, give_types):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    m = QAConvModelV2(c)
    Z.hf_init(m, 0.2)
    m = m.double().eval()
    ids, mask, types = qa_batch(gen, c, S, rows)
    x = {"input_ids": ids, "attention_mask": mask}
    if give_types:
        x["token_type_ids"] = types
    x["start_positions"] = torch.tensor(start)
    x["end_positions"] = torch.tensor(end)
    x["question_type"] = torch.tensor(qtype)
    out = m(ids, mask, x.get("token_type_ids"))
    trainer_loss(c, out, x["start_positions"], x["end_positions"], x["question_type"])
    out["loss"].backward()
    Z.write_case(name, c, m, x, out)


if __name__ == "__main__":
    case("qaconv_given", config(), 16, [(5, 8), (7, 4), (3, 2)],
         start=[6, -3, 8], end=[9, 12, 40], qtype=[0, 5, 3], seed=11, give_types=True)
    case("qaconv_derived",
         config(num_hidden_layers=1, query_len=4, conv_filters=8, num_question_types=4,
                attention_temperature=4.0, query_loss_divisor=3.0),
         18, [(6, 9), (2, 5)],
         start=[9, 18], end=[12, 9], qtype=[1, 3], seed=12, give_types=False)
    case("qaconv_logits", config(num_hidden_layers=1, query_loss_input="logits"), 16,
         [(5, 7), (4, 6)], start=[8, 10], end=[11, 12], qtype=[2, 4], seed=13,
         give_types=True)
