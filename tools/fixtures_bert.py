#!/usr/bin/python3
"""tools/fixtures_bert.py - parity fixtures for BertModel,
BertForSequenceClassification (single-label, multi-label, regression) and
BertForMaskedLM. Run: /usr/bin/python3 tools/fixtures_bert.py"""
import torch
import torch.nn.functional as F

import bert_ref as R
import zoo_common as Z


def config(arch, **kw):
    c = {"architectures": [arch], "vocab_size": 120, "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 40,
         "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
         "pad_token_id": 0, "model_type": "bert"}
    c.update(kw)
    return c


def inputs(gen, c, S, lengths):
    ids, mask = Z.padded_batch(gen, S, c["vocab_size"], lengths)
    types = torch.zeros_like(ids)
    for b, n in enumerate(lengths):
        types[b, n // 2:n] = 1      # a sentence pair: segment B in the second half
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def seqcls_case(name, problem, num_labels, S, lengths, seed, act="gelu"):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForSequenceClassification", num_labels=num_labels, problem_type=problem,
               hidden_act=act)
    m = R.BertForSequenceClassification(c)
    Z.hf_init(m, 0.2)
    m = m.double()
    x = inputs(gen, c, S, lengths)
    B = len(lengths)
    if problem == "single_label_classification":
        x["labels"] = torch.randint(0, num_labels, (B,), generator=gen)
    elif problem == "multi_label_classification":
        x["labels"] = torch.randint(0, 2, (B, num_labels), generator=gen).float()
    else:
        x["labels"] = torch.randn(B, generator=gen)
    h, pooled, hidden, probs = m.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    logits = m.classifier(pooled)
    if problem == "single_label_classification":
        loss = F.cross_entropy(logits, x["labels"])
    elif problem == "multi_label_classification":
        loss = F.binary_cross_entropy_with_logits(logits, x["labels"].double())
    else:
        loss = F.mse_loss(logits.squeeze(), x["labels"].double().squeeze())
    loss.backward()
    out = {"logits": logits, "loss": loss}
    R.bert_outputs(out, h, pooled, hidden, probs)
    Z.write_case(name, c, m, x, out)


def bert_model_case(name, S, lengths, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    c = config("BertModel")
    m = R.BertModel(c)
    Z.hf_init(m, 0.2)
    m = m.double()
    x = inputs(gen, c, S, lengths)
    with torch.no_grad():
        h, pooled, hidden, probs = m(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    out = {}
    R.bert_outputs(out, h, pooled, hidden, probs)
    Z.write_case(name, c, m, x, out)


def mlm_case(name, S, lengths, seed, layers=2):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForMaskedLM", num_hidden_layers=layers)
    m = R.BertForMaskedLM(c)
    Z.hf_init(m, 0.2)
    m = m.double()
    x = inputs(gen, c, S, lengths)
    labels = torch.full_like(x["input_ids"], -100)
    for b, n in enumerate(lengths):
        for t in range(1, n - 1, 3):           # every third real token is masked
            labels[b, t] = x["input_ids"][b, t]
            x["input_ids"][b, t] = 3           # [MASK]
    x["labels"] = labels
    E = m.bert.embeddings.word_embeddings.weight
    h, _, hidden, probs = m.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    logits = m.cls.predictions(h, E)
    loss = F.cross_entropy(logits.reshape(-1, c["vocab_size"]), labels.reshape(-1))
    loss.backward()
    out = {"logits": logits, "loss": loss}
    R.bert_outputs(out, h, None, hidden, probs)
    Z.write_case(name, c, m, x, out,
                 tied={"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                       "cls.predictions.decoder.bias": "cls.predictions.bias"})


if __name__ == "__main__":
    seqcls_case("bert_seqcls_single", "single_label_classification", 3, 16, [16, 11, 7], 1)
    seqcls_case("bert_seqcls_single_b", "single_label_classification", 3, 20, [13, 20], 2,
                act="gelu_new")
    seqcls_case("bert_seqcls_multi", "multi_label_classification", 4, 16, [9, 16], 3)
    seqcls_case("bert_seqcls_regression", "regression", 1, 17, [17, 5, 12], 4)
    bert_model_case("bert_model", 16, [16, 10], 5)
    mlm_case("bert_mlm", 16, [16, 12], 6)
    mlm_case("bert_mlm_b", 18, [9, 18], 7, layers=1)
