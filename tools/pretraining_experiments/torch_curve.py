#!/usr/bin/python3
"""torch_curve.py: the learning curve of `bertc pretrain`'s recipe in PyTorch.

    torch_curve.py --config C.json --vocab V.txt --cache corpus.tokens --steps N
                   [--eval-every K] [--max-len 128] [--batch-size 32] [--lr 1e-3]
                   [--seed 42] [--threads 1] [--no-dropout]

Is a slow-learning bertc pretraining run bertc's fault, or the recipe's? This
trains tools/bert_ref.py's BertForMaskedLM with the very step of
tools/bench_pretrain_torch.py (bertc's token cache, rows packed to max-len,
HF's masking collator, AdamW without decay on biases and LayerNorm, 6 %
warmup then linear decay, clipping at 1) for --steps steps, and prints the
held-out perplexity every --eval-every steps on the rows bertc holds out (the
last 5 % of the rows, at most 1,000), each masked with a fixed seed, in
bertc's log format: one JSON line an evaluation. Compare with the log.jsonl
of `bertc pretrain` with the same options."""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_pretrain_torch as BP  # noqa: E402


def held_out_loss(m, c, stream, rows, W, sp, V, p, seed):
    """The mean masked-LM cross-entropy over the held-out rows (no dropout)."""
    torch, BT = BP.torch, BP.BT
    m.eval()
    total, count = 0.0, 0
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    with torch.no_grad():
        for first in range(0, len(rows), 64):
            ids = BP.packed_rows(stream, rows[first:first + 64], W, sp["[CLS]"], sp["[SEP]"])
            ids, labels = BP.torch_mask_tokens(ids, sorted(sp.values()), sp["[MASK]"], V, p)
            c0 = dict(c, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
            n = int((labels != -100).sum())
            loss = BT.mlm_train_loss(m, c0, ids, torch.ones_like(ids), torch.zeros_like(ids),
                                     labels, masked_head=True)
            total += loss.item() * n
            count += n
    torch.random.set_rng_state(gen_state)
    m.train()
    return total / count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--eval-every", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--mlm-probability", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-dropout", action="store_true")
    ap.add_argument("--eval-model", metavar="DIR",
                    help="no training: the held-out perplexity of this model directory "
                         "(a bertc pretrain output) on this script's held-out masks")
    a = ap.parse_args()
    BP.ensure_torch()
    BP.load_torch(a.threads)
    torch, BT = BP.torch, BP.BT
    torch.set_num_threads(a.threads)
    with open(a.config) as f:
        c = BP.full_config(json.load(f))
    if a.no_dropout:
        c["hidden_dropout_prob"] = c["attention_probs_dropout_prob"] = 0.0
    sp, V = BP.special_ids(a.vocab)
    stream = BP.token_stream(a.cache)
    B, S, W = a.batch_size, a.max_len, a.max_len - 2
    n_rows = len(stream) // W
    held = min(n_rows // 20, 1000)
    n_train = n_rows - held
    torch.manual_seed(a.seed)
    m = BT.R.BertForMaskedLM(c).train()
    BT.Z.hf_init(m, c["initializer_range"])
    held_rows = list(range(n_train, n_rows))
    if a.eval_model:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        import st
        sd = {k: torch.as_tensor(v) for k, v in st.load(a.eval_model + "/model.safetensors").items()
              if not k.startswith("cls.predictions.decoder.")}   # the tied decoder: the embeddings
        m.load_state_dict(sd, strict=True)
        ev = held_out_loss(m, c, stream, held_rows, W, sp, V, a.mlm_probability, a.seed)
        print(json.dumps({"model": a.eval_model, "eval_loss": round(ev, 4),
                          "perplexity": round(math.exp(ev), 1)}))
        return
    opt, sched = BP.adamw(m, a.lr, a.steps)
    every = a.eval_every or max(a.steps // 10, 1)
    gen = torch.Generator().manual_seed(a.seed)
    order, pos = torch.randperm(n_train, generator=gen).tolist(), 0
    start, train_sum, train_n = time.time(), 0.0, 0
    for step in range(1, a.steps + 1):
        if pos + B > n_train:
            order, pos = torch.randperm(n_train, generator=gen).tolist(), 0
        ids = BP.packed_rows(stream, order[pos:pos + B], W, sp["[CLS]"], sp["[SEP]"])
        pos += B
        ids, labels = BP.torch_mask_tokens(ids, sorted(sp.values()), sp["[MASK]"], V,
                                           a.mlm_probability)
        loss = BT.mlm_train_loss(m, c, ids, torch.ones_like(ids), torch.zeros_like(ids),
                                 labels, masked_head=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        train_sum, train_n = train_sum + loss.item(), train_n + 1
        if step % every == 0 or step == a.steps:
            ev = held_out_loss(m, c, stream, held_rows, W, sp, V, a.mlm_probability, a.seed)
            print(json.dumps({"step": step, "train_loss": round(train_sum / train_n, 4),
                              "eval_loss": round(ev, 4), "perplexity": round(math.exp(ev), 1),
                              "seconds": round(time.time() - start, 1)}), flush=True)
            train_sum, train_n = 0.0, 0


if __name__ == "__main__":
    main()
