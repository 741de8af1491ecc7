#!/usr/bin/python3
"""tools/fixtures_heads.py - parity fixtures for the Hugging Face BERT heads
(tools/heads_ref.py) and for BertModel without its pooler.
Run: /usr/bin/python3 tools/fixtures_heads.py [case ...]  (no argument: all)"""
import sys

import torch

import heads_ref as HR
import zoo_common as Z
from fixtures_bert import config, inputs

LM_TIES = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
           "cls.predictions.decoder.bias": "cls.predictions.bias"}


def run_case(name, model_class, c, x, seed, tied=None):
    """Builds the head in float64 with seed, runs x, backpropagates the loss."""
    torch.manual_seed(seed)
    m = model_class(c)
    Z.hf_init(m, 0.2)
    m = m.double()
    out, loss = m(x)
    if loss is not None:
        loss.backward()
        out["loss"] = loss
    Z.write_case(name, c, m, x, out, tied=tied)


def tokcls_case(name, num_labels, S, lengths, seed, **kw):
    """labels: a class per real token, -100 on [CLS], [SEP] and padding."""
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForTokenClassification", num_labels=num_labels, **kw)
    x = inputs(gen, c, S, lengths)
    labels = torch.randint(0, num_labels, (len(lengths), S), generator=gen)
    for b, n in enumerate(lengths):
        labels[b, 0] = -100
        labels[b, n - 1:] = -100
    x["labels"] = labels
    run_case(name, HR.BertForTokenClassification, c, x, seed)


def qa_case(name, S, lengths, starts, ends, seed, **kw):
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForQuestionAnswering", num_labels=2, **kw)
    x = inputs(gen, c, S, lengths)
    x["start_positions"] = torch.tensor(starts)
    x["end_positions"] = torch.tensor(ends)
    run_case(name, HR.BertForQuestionAnswering, c, x, seed)


def nsp_case(name, S, lengths, labels, seed, **kw):
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForNextSentencePrediction", **kw)
    x = inputs(gen, c, S, lengths)
    x["labels"] = torch.tensor(labels)
    run_case(name, HR.BertForNextSentencePrediction, c, x, seed)


def pretraining_case(name, S, lengths, nsp_labels, seed, **kw):
    """Every third real token is masked and labelled, as fixtures_bert's MLM."""
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForPreTraining", **kw)
    x = inputs(gen, c, S, lengths)
    labels = torch.full_like(x["input_ids"], -100)
    for b, n in enumerate(lengths):
        for t in range(1, n - 1, 3):
            labels[b, t] = x["input_ids"][b, t]
            x["input_ids"][b, t] = 3           # [MASK]
    x["labels"] = labels
    x["next_sentence_label"] = torch.tensor(nsp_labels)
    run_case(name, HR.BertForPreTraining, c, x, seed, tied=LM_TIES)


def multiple_choice_case(name, S, lengths, labels, seed, **kw):
    """lengths[b][k]: the real tokens of choice k of question b (padded to S)."""
    gen = torch.Generator().manual_seed(seed)
    c = config("BertForMultipleChoice", **kw)
    B, C = len(lengths), len(lengths[0])
    flat = inputs(gen, c, S, [n for row in lengths for n in row])
    x = {k: v.reshape(B, C, S) for k, v in flat.items()}
    x["labels"] = torch.tensor(labels)
    run_case(name, HR.BertForMultipleChoice, c, x, seed)


def bert_model_no_pooler_case(name, S, lengths, seed):
    """add_pooling_layer false: no pooler.* in the weights, no pooler_output."""
    gen = torch.Generator().manual_seed(seed)
    c = config("BertModel", add_pooling_layer=False)
    run_case(name, HR.BertModelWithoutPooler, c, inputs(gen, c, S, lengths), seed)


CASES = {
    "bert_tokcls": lambda: tokcls_case("bert_tokcls", 5, 16, [16, 9, 12], 21),
    "bert_tokcls_b": lambda: tokcls_case("bert_tokcls_b", 3, 14, [7, 14], 22,
                                         hidden_act="gelu_new", classifier_dropout=0.25),
    # start 40 and end 99 lie past S = 16: clamped to S and ignored; -3 becomes 0
    "bert_qa": lambda: qa_case("bert_qa", 16, [16, 11, 8], [3, 40, -3], [7, 99, 5], 23),
    "bert_qa_b": lambda: qa_case("bert_qa_b", 12, [12, 6], [1, 2], [4, 2], 24,
                                 hidden_act="gelu_new", classifier_dropout=None),
    "bert_nsp": lambda: nsp_case("bert_nsp", 16, [16, 10, 13], [0, 1, 1], 25),
    "bert_pretraining": lambda: pretraining_case("bert_pretraining", 16, [16, 12], [1, 0], 26),
    "bert_multiple_choice": lambda: multiple_choice_case(
        "bert_multiple_choice", 12, [[12, 7, 9], [5, 12, 10]], [2, 0], 27),
    "bert_model_no_pooler": lambda: bert_model_no_pooler_case("bert_model_no_pooler", 16,
                                                              [16, 10], 28),
}

if __name__ == "__main__":
    for case in sys.argv[1:] or CASES:
        CASES[case]()
