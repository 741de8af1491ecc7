#!/usr/bin/python3
"""tools/bench_torch.py - bench/forward.c and bench/train.c in PyTorch.

    tools/bench_torch.py forward --config C.json [--batch B] [--seq S] [--threads N]
                                 [--blas-threads N] [--iters K] [--layers L --hidden H]
    tools/bench_torch.py train   --config C.json [...same...] [--steps K]
                                 [--lm-head all|masked] [--autocast bf16]

The same work as the C benches, on the models of tools/bert_ref.py (SPEC 6.1
written in PyTorch, no transformers): random weights (HF init), random ids in
[1000, V), no padding. forward: eval mode, no_grad, one BertModel forward
(hidden states and attention maps kept, as bertc keeps them). train: one
BertForMaskedLM step in training mode with dropout where HF puts it, CE over
the 15% labelled positions, backward, AdamW, zero_grad. --lm-head all (the
default, as HF) runs the LM head on every position and drops the unlabelled
ones in the loss; --lm-head masked runs it on the labelled rows only, as
bertc does, so the ratio compares the same work. --autocast bf16 runs the
step's forward under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's
mixed precision (bf16 matmuls, float32 master weights and AdamW), the
counterpart of bench/train --bf16. One warm-up, then K
timed iterations; prints one line in the C benches' format, peak RSS of the
whole Python process included (the interpreter and libtorch are part of what
a PyTorch user pays).

Threads: --threads sets torch.set_num_threads (PyTorch's own intra-op pool),
--blas-threads (default: the same) sets OPENBLAS_NUM_THREADS, OMP_NUM_THREADS
and MKL_NUM_THREADS before torch is loaded. Debian's PyTorch runs its
matmuls in OpenBLAS, whose thread pool torch.set_num_threads does not touch:
without the variable a "1-thread" PyTorch run multiplies on every core.
cores_used (process CPU time over wall time of the timed part) shows what a
run really used; blas_core is openblas_get_corename() of the OpenBLAS torch
loaded (OPENBLAS_CORETYPE, read when it loads, can raise it: bench/compare.sh
sets it as build/bench/gemm does). --info prints torch.__config__'s
parallel info and the BLAS core, and exits."""
import argparse
import ctypes
import json
import math
import os
import resource
import sys
import time


def load_torch(blas_threads):
    """Imports torch (and the reference models) after fixing the BLAS pool."""
    global torch, F, R, Z
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(blas_threads)
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bert_ref as R
    import zoo_common as Z


def config(a):
    with open(a.config) as f:
        c = json.load(f)
    if a.layers:
        c["num_hidden_layers"] = a.layers
    if a.hidden:  # heads H/64, intermediate 4H, as bench/bench_util.h
        c["hidden_size"] = a.hidden
        c["num_attention_heads"] = max(a.hidden // 64, 1)
        c["intermediate_size"] = 4 * a.hidden
    return c


def batch(c, B, S, gen):
    ids = torch.randint(1000, c["vocab_size"], (B, S), generator=gen)
    labels = torch.where(torch.rand(B, S, generator=gen) < 0.15, ids, torch.full_like(ids, -100))
    labels[:, 0] = -100
    return ids, torch.ones(B, S, dtype=torch.long), torch.zeros(B, S, dtype=torch.long), labels


def blas_core():
    """The core of the OpenBLAS torch loaded ("-" if torch's BLAS is not OpenBLAS)."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "-"


def lm_head(pred, x, E):
    """bert_ref.py's LMHead.forward; the LayerNorm's input cast to float32
    (a no-op without autocast): torch 1.13's CPU autocast leaves layer_norm
    uncast, and a bf16 GELU output with float32 weights fails."""
    t = pred.transform.LayerNorm(pred.act(pred.transform.dense(x)).float())
    return t @ E.t() + pred.bias


def mlm_train_loss(m, c, ids, mask, types, labels, masked_head=False):
    """BertForMaskedLM of bert_ref.py with HF's dropouts (p = the config's).
    masked_head: the LM head on the labelled rows only (bertc's way)."""
    p, pa = c["hidden_dropout_prob"], c["attention_probs_dropout_prob"]
    b = m.bert
    x = F.dropout(b.embeddings(ids, types), p, True)
    madd = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for layer in b.encoder.layer:
        sa = layer.attention.self
        q, k, v = sa.split(sa.query(x)), sa.split(sa.key(x)), sa.split(sa.value(x))
        probs = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + madd).softmax(-1)
        ctx = (F.dropout(probs, pa, True) @ v).permute(0, 2, 1, 3)
        ctx = ctx.reshape(ctx.shape[0], ctx.shape[1], -1)
        ao = layer.attention.output
        y = ao.LayerNorm(F.dropout(ao.dense(ctx), p, True) + x)
        o = layer.output
        x = o.LayerNorm(F.dropout(o.dense(layer.act(layer.intermediate.dense(y))), p, True) + y)
    if masked_head:
        keep = labels.view(-1) != -100
        rows = x.reshape(-1, x.shape[-1])[keep]
        logits = lm_head(m.cls.predictions, rows, b.embeddings.word_embeddings.weight)
        return F.cross_entropy(logits.float(), labels.view(-1)[keep])
    logits = lm_head(m.cls.predictions, x, b.embeddings.word_embeddings.weight)
    return F.cross_entropy(logits.float().view(-1, c["vocab_size"]), labels.view(-1),
                           ignore_index=-100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["forward", "train", "info"])
    ap.add_argument("--config")
    ap.add_argument("--lm-head", choices=["all", "masked"], default="all")
    ap.add_argument("--autocast", choices=["off", "bf16"], default="off")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--blas-threads", type=int, default=0)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=0)
    a = ap.parse_args()
    load_torch(a.blas_threads or a.threads or os.cpu_count())
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.mode == "info":
        print("torch %s, BLAS core %s (OPENBLAS_CORETYPE=%s)"
              % (torch.__version__, blas_core(), os.environ.get("OPENBLAS_CORETYPE", "unset")))
        print(torch.__config__.parallel_info().rstrip())
        return
    if not a.config:
        ap.error("--config is required")
    c = config(a)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    B, S = a.batch or (1 if a.mode == "forward" else 8), a.seq
    times = []
    cpu0 = wall0 = 0.0
    if a.mode == "forward":
        m = R.BertModel(c).eval()
        Z.hf_init(m, c["initializer_range"])
        ids, mask, types, _ = batch(c, B, S, gen)
        with torch.no_grad():
            for it in range(a.iters + 1):
                if it == 1:
                    cpu0, wall0 = time.process_time(), time.perf_counter()
                t0 = time.perf_counter()
                m(ids, mask, types)
                if it:
                    times.append((time.perf_counter() - t0) * 1e3)
        extra = ""
    else:
        m = R.BertForMaskedLM(c).train()
        Z.hf_init(m, c["initializer_range"])
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
        steps = a.steps or a.iters
        for it in range(steps + 1):
            if it == 1:
                cpu0, wall0 = time.process_time(), time.perf_counter()
            ids, mask, types, labels = batch(c, B, S, gen)
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
                loss = mlm_train_loss(m, c, ids, mask, types, labels, a.lm_head == "masked")
            loss.backward()
            opt.step()
            opt.zero_grad()
            if it:
                times.append((time.perf_counter() - t0) * 1e3)
        med = sorted(times)[len(times) // 2]
        extra = " tokens_per_s %.0f loss %.4f lm_head %s autocast %s" % (
            B * S / (med * 1e-3), loss.item(), a.lm_head, a.autocast)
    cores = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    times.sort()
    n = len(times)
    med = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    name = "BertModel" if a.mode == "forward" else "BertForMaskedLM"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("%s %s B=%d S=%d threads=%d blas_threads=%s median_ms %.2f%s min_ms %.2f "
          "peak_rss_mib %.1f cores_used %.2f blas_core %s torch %s"
          % (a.mode, name, B, S, torch.get_num_threads(), os.environ["OPENBLAS_NUM_THREADS"],
             med, extra, times[0], rss, cores, blas_core(), torch.__version__))


if __name__ == "__main__":
    main()
