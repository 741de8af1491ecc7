#!/usr/bin/python3
"""tools/bench_finetune.py - the PyTorch side of bench/finetune_compare.sh.

    tools/bench_finetune.py train   --config C.json --inputs I.safetensors --labels L.txt
                                    [--steps K] [--batch-size B] [--lr X] [--seed S]
                                    [--threads N] [--blas-threads M]
    tools/bench_finetune.py predict --model DIR --inputs I.safetensors [--batch-size B]
                                    [--out LABELS.txt] [--threads N] [--blas-threads M]

The work `bertc finetune` and `bertc predict` do, in a plain PyTorch loop on
the models of tools/bert_ref.py (SPEC 6.1 in PyTorch, no transformers), on
inputs bertc already tokenized (`bertc encode`: input_ids, attention_mask,
token_type_ids, one row a text, padded to the longest), so tokenization is not
part of what is timed.

train: BertForSequenceClassification from C.json (num_labels = the distinct
lines of L.txt, one label a row of I.safetensors; HF init), training mode with
dropout where HF puts it (embeddings, attention probabilities, both residual
branches, the pooled output), cross-entropy, backward, gradient clipping at
1.0, AdamW (weight decay 0.01) with linear warmup over 10 % of the steps and
linear decay, as zoo/train/train.c. Each step takes B rows of a shuffled pass over
the rows (a new shuffle every pass) and trims them to the longest of the
batch, as bertc pads each batch to its longest. Timed: the K steps (batch
slicing included); tokens_per_s counts the real (unpadded) tokens, as bertc
finetune's "tokens/s".

predict: DIR's config.json and model.safetensors loaded with
load_state_dict(strict=True); eval mode, no_grad; batches of B rows in file
order, each trimmed to its longest; forward + softmax + argmax (a
TextClassificationPipeline without the tokenizer). --out writes the id2label
name of each row, one a line. Timed: the loop.

Both print one line: the loop's time, cores_used (CPU time over wall time of
the loop) and peak_rss_mib of the whole Python process (interpreter and
libtorch included). Threads as tools/bench_torch.py: --threads is
torch.set_num_threads, --blas-threads (default: the same) OPENBLAS_NUM_THREADS
and friends, set before torch loads."""
import argparse
import json
import math
import os
import resource
import sys
import time


def load_torch(blas_threads):
    global torch, F, R, st
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(blas_threads)
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bert_ref as R
    import st


def full_config(c):
    """HF BertConfig's defaults for the keys a short config leaves out."""
    for k, v in (("type_vocab_size", 2), ("hidden_act", "gelu"), ("layer_norm_eps", 1e-12),
                 ("initializer_range", 0.02), ("pad_token_id", 0),
                 ("hidden_dropout_prob", 0.1), ("attention_probs_dropout_prob", 0.1)):
        c.setdefault(k, v)
    return c


def inputs(path):
    t = st.load(path)
    return t["input_ids"], t["attention_mask"], t["token_type_ids"]


def trim(ids, mask, types, rows):
    """The rows, cut to the longest of them: (B, S) each."""
    m = mask[rows]
    S = int(m.sum(1).max())
    return ids[rows, :S], m[:, :S], types[rows, :S]


def seq_cls_logits(m, c, ids, mask, types, train):
    """BertForSequenceClassification's forward with HF's dropouts when train."""
    p, pa = c["hidden_dropout_prob"], c["attention_probs_dropout_prob"]
    pc = c.get("classifier_dropout") or p
    b = m.bert
    x = F.dropout(b.embeddings(ids, types), p, train)
    madd = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for layer in b.encoder.layer:
        sa = layer.attention.self
        q, k, v = sa.split(sa.query(x)), sa.split(sa.key(x)), sa.split(sa.value(x))
        probs = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + madd).softmax(-1)
        ctx = (F.dropout(probs, pa, train) @ v).permute(0, 2, 1, 3)
        ctx = ctx.reshape(ctx.shape[0], ctx.shape[1], -1)
        ao = layer.attention.output
        y = ao.LayerNorm(F.dropout(ao.dense(ctx), p, train) + x)
        o = layer.output
        x = o.LayerNorm(F.dropout(o.dense(layer.act(layer.intermediate.dense(y))), p, train) + y)
    pooled = torch.tanh(b.pooler.dense(x[:, 0]))
    return m.classifier(F.dropout(pooled, pc, train))


def hf_init(m, std):
    for mod in m.modules():
        if isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)):
            mod.weight.data.normal_(0.0, std)
        if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
            mod.bias.data.zero_()
        if isinstance(mod, torch.nn.LayerNorm):
            mod.weight.data.fill_(1.0)
            mod.bias.data.zero_()


def train(a):
    with open(a.config) as f:
        c = full_config(json.load(f))
    names = [l.rstrip("\n") for l in open(a.labels)]
    label_set = sorted(set(names))
    c["num_labels"] = len(label_set)
    ids, mask, types = inputs(a.inputs)
    if ids.shape[0] != len(names):
        sys.exit("bench_finetune.py: %s has %d rows, %s %d labels"
                 % (a.inputs, ids.shape[0], a.labels, len(names)))
    y = torch.tensor([label_set.index(n) for n in names])
    torch.manual_seed(a.seed)
    m = R.BertForSequenceClassification(c).train()
    hf_init(m, c["initializer_range"])
    opt = torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.01)
    warm = max(1, int(0.1 * a.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (a.steps - s) / (a.steps - warm)))
    gen = torch.Generator().manual_seed(a.seed)
    order, pos, tokens = torch.randperm(len(names), generator=gen), 0, 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(a.steps):
        if pos + a.batch_size > len(order):
            order, pos = torch.randperm(len(names), generator=gen), 0
        rows = order[pos:pos + a.batch_size]
        pos += a.batch_size
        bi, bm, bt = trim(ids, mask, types, rows)
        tokens += int(bm.sum())
        loss = F.cross_entropy(seq_cls_logits(m, c, bi, bm, bt, True), y[rows])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
    wall = time.perf_counter() - wall0
    cores = (time.process_time() - cpu0) / wall
    print("train steps %d B=%d loop_s %.3f ms_per_step %.2f tokens_per_s %.0f loss %.4f "
          "cores_used %.2f peak_rss_mib %.1f threads %d blas_threads %s"
          % (a.steps, a.batch_size, wall, wall * 1e3 / a.steps, tokens / wall, loss.item(),
             cores, rss_mib(), torch.get_num_threads(), os.environ["OPENBLAS_NUM_THREADS"]))


def predict(a):
    with open(os.path.join(a.model, "config.json")) as f:
        c = full_config(json.load(f))
    m = R.BertForSequenceClassification(c).eval()
    m.load_state_dict(st.load(os.path.join(a.model, "model.safetensors")), strict=True)
    id2label = c.get("id2label", {})
    ids, mask, types = inputs(a.inputs)
    n = ids.shape[0]
    pred = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with torch.no_grad():
        for i in range(0, n, a.batch_size):
            bi, bm, bt = trim(ids, mask, types, torch.arange(i, min(i + a.batch_size, n)))
            probs = seq_cls_logits(m, c, bi, bm, bt, False).softmax(-1)
            pred += probs.argmax(-1).tolist()
    wall = time.perf_counter() - wall0
    cores = (time.process_time() - cpu0) / wall
    if a.out:
        with open(a.out, "w") as f:
            for k in pred:
                f.write(id2label.get(str(k), "LABEL_%d" % k) + "\n")
    print("predict texts %d B=%d loop_s %.3f texts_per_s %.1f cores_used %.2f "
          "peak_rss_mib %.1f threads %d blas_threads %s"
          % (n, a.batch_size, wall, n / wall, cores, rss_mib(), torch.get_num_threads(),
             os.environ["OPENBLAS_NUM_THREADS"]))


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "predict"])
    ap.add_argument("--config")
    ap.add_argument("--model")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--labels")
    ap.add_argument("--out")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int, default=0)
    a = ap.parse_args()
    if a.mode == "train" and not (a.config and a.labels):
        ap.error("train needs --config and --labels")
    if a.mode == "predict" and not a.model:
        ap.error("predict needs --model")
    load_torch(a.blas_threads or a.threads)
    torch.set_num_threads(a.threads)
    train(a) if a.mode == "train" else predict(a)


if __name__ == "__main__":
    main()
