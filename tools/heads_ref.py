"""tools/heads_ref.py - the Hugging Face BERT heads in PyTorch, written from
the semantics of transformers' modeling_bert.py (current version) on top of
bert_ref.BertModel. Module and parameter names are the state_dict keys of
the originals. Each forward returns (outputs, loss); outputs holds the
head's own outputs under HF's names and loss is None without labels.

  BertModelWithoutPooler       embeddings, encoder (add_pooling_layer=False)
  BertForTokenClassification   bert (no pooler), dropout, classifier (L, H)
  BertForQuestionAnswering     bert (no pooler), qa_outputs (2, H)
  BertForNextSentencePrediction bert, cls.seq_relationship (2, H)
  BertForPreTraining           bert, cls.predictions (tied), cls.seq_relationship
  BertForMultipleChoice        bert, dropout, classifier (1, H), inputs (B, C, S)
Dropout is the identity here (the fixtures are eval-mode forwards).
"""
import torch.nn as nn
import torch.nn.functional as F

import bert_ref as R


class BertModelWithoutPooler(R.BertModel):
    """HF's BertModel(add_pooling_layer=False): no pooler.*, no pooler_output."""

    def __init__(self, c):
        super().__init__(c, pooler=False)

    def forward(self, x):
        h, _, hidden, probs = super().forward(x["input_ids"], x["attention_mask"],
                                              x["token_type_ids"])
        out = {}
        R.bert_outputs(out, h, None, hidden, probs)
        return out, None


class BertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c, pooler=False)
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])

    def forward(self, x):
        h, _, hidden, probs = self.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
        logits = self.classifier(h)
        loss = None
        if "labels" in x:   # every position, -100 ignored; attention_mask plays no part
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x["labels"].reshape(-1),
                                   ignore_index=-100)
        out = {"logits": logits}
        R.bert_outputs(out, h, None, hidden, probs)
        return out, loss


class BertForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c, pooler=False)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, x):
        h, _, hidden, probs = self.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
        start, end = self.qa_outputs(h).split(1, dim=-1)
        start, end = start.squeeze(-1), end.squeeze(-1)
        loss = None
        if "start_positions" in x and "end_positions" in x:
            S = start.shape[1]          # out-of-range positions become S, which is ignored
            s = x["start_positions"].clamp(0, S)
            e = x["end_positions"].clamp(0, S)
            loss = (F.cross_entropy(start, s, ignore_index=S)
                    + F.cross_entropy(end, e, ignore_index=S)) / 2
        out = {"start_logits": start, "end_logits": end}
        R.bert_outputs(out, h, None, hidden, probs)
        return out, loss


class NSPHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)


class BertForNextSentencePrediction(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c)
        self.cls = NSPHead(c)

    def forward(self, x):
        h, pooled, hidden, probs = self.bert(x["input_ids"], x["attention_mask"],
                                             x["token_type_ids"])
        logits = self.cls.seq_relationship(pooled)
        loss = F.cross_entropy(logits, x["labels"]) if "labels" in x else None
        out = {"logits": logits}
        R.bert_outputs(out, h, pooled, hidden, probs)
        return out, loss


class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c)
        self.cls = NSPHead(c)
        self.cls.predictions = R.LMHead(c)
        self.V = c["vocab_size"]

    def forward(self, x):
        h, pooled, hidden, probs = self.bert(x["input_ids"], x["attention_mask"],
                                             x["token_type_ids"])
        words = self.cls.predictions(h, self.bert.embeddings.word_embeddings.weight)
        nsp = self.cls.seq_relationship(pooled)
        loss = None
        if "labels" in x and "next_sentence_label" in x:
            loss = (F.cross_entropy(words.reshape(-1, self.V), x["labels"].reshape(-1))
                    + F.cross_entropy(nsp, x["next_sentence_label"]))
        out = {"prediction_logits": words, "seq_relationship_logits": nsp}
        R.bert_outputs(out, h, pooled, hidden, probs)
        return out, loss


class BertForMultipleChoice(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = R.BertModel(c)
        self.classifier = nn.Linear(c["hidden_size"], 1)

    def forward(self, x):
        C, S = x["input_ids"].shape[1], x["input_ids"].shape[2]
        flat = [x[k].reshape(-1, S) for k in ("input_ids", "attention_mask", "token_type_ids")]
        h, pooled, hidden, probs = self.bert(*flat)
        logits = self.classifier(pooled).reshape(-1, C)
        loss = F.cross_entropy(logits, x["labels"]) if "labels" in x else None
        out = {"logits": logits}
        R.bert_outputs(out, h, pooled, hidden, probs)
        return out, loss
