#!/usr/bin/python3
"""tools/bench_pretrain_torch.py - the PyTorch side of bench/pretrain_compare.sh.

    tools/bench_pretrain_torch.py --config C.json --vocab V.txt --cache corpus.tokens
                                  [--max-len 128] [--batch-size 32] [--lr 1e-3]
                                  [--mlm-probability 0.15] [--warmup-steps 5]
                                  [--windows 5] [--window 10] [--seed 42]
                                  [--threads N] [--blas-threads M]

The step `bertc pretrain` runs for its default objective (mlm), in plain
PyTorch on the models of tools/bert_ref.py (no transformers), on the very
token stream bertc made: --cache is bertc's token cache of the corpus
(zoo/train/pretrain_corpus.c: a 72-byte header, then the WordPiece ids,
2 or 4 bytes each), read through a memory map.

One step, all of it timed:
  rows     B rows of max_len - 2 packed tokens each, [CLS] row [SEP]
           (group_texts: texts packed across documents, no padding), drawn
           from a shuffled pass over the training rows (the last 5 %, at most
           1000, held out as bertc does; a new shuffle each pass);
  masking  Hugging Face's DataCollatorForLanguageModeling.torch_mask_tokens,
           line for line, per batch on the CPU: the special-tokens mask from
           the ids' Python lists (get_special_tokens_mask with
           already_has_special_tokens), 15 % of the other positions picked,
           of them 80 % [MASK], 10 % a random id in [0, V), 10 % kept;
  model    BertForMaskedLM of tools/bert_ref.py in training mode, dropout
           where HF puts it, the LM head (dense, GELU, LayerNorm, the tied
           decoder and its bias) on the labelled positions only
           (tools/bench_torch.py mlm_train_loss(masked_head=True), as bertc
           runs it), cross-entropy;
  update   backward, clip_grad_norm_(1.0), torch.optim.AdamW (betas 0.9,
           0.999, eps 1e-8, weight decay 0.01 on the 2-D weights only: not on
           biases and LayerNorm, as the HF Trainer and bertc), linear warmup
           over 6 % of the steps then linear decay (LambdaLR), zero_grad.

Timing: --warmup-steps untimed steps, then --windows windows of --window
steps each; a window's tokens/s is the real tokens of its rows (B x max_len
here: packed rows have no padding) over its wall time, and tokens_per_s is
the median over the windows. all_tokens_per_s is the same count over every
step, the warm-up ones included (bertc's own figure counts every step).
cores_used is the process CPU time over the wall time of the windows;
peak_rss_mib is the whole Python process's (interpreter and libtorch
included).

Threads as tools/bench_torch.py: --threads is torch.set_num_threads,
--blas-threads (default: the same) sets OPENBLAS_NUM_THREADS (and the
OpenMP/MKL ones) before torch loads: Debian's PyTorch runs its matmuls in
OpenBLAS, whose pool torch.set_num_threads does not limit.

Needs Debian's python3-torch (run by /usr/bin/python3); when torch is
missing and this runs as root, it is installed with apt-get first."""
import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time

HEADER_BYTES = 72   # zoo/train/pretrain_corpus.c


def ensure_torch():
    """Debian's python3-torch, installed with apt-get when missing (as root);
    then this script again under /usr/bin/python3, which sees it."""
    if importlib.util.find_spec("torch"):   # found, not imported: the BLAS pool is set first
        return
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3") and \
            subprocess.call(["/usr/bin/python3", "-c", "import torch"],
                            stderr=subprocess.DEVNULL) == 0:
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    if os.geteuid() != 0 or subprocess.call(["sh", "-c", "command -v apt-get"],
                                            stdout=subprocess.DEVNULL) != 0:
        sys.exit("bench_pretrain_torch.py: no torch; install Debian's: "
                 "sudo apt-get install -y python3-torch, and run with /usr/bin/python3")
    print("bench_pretrain_torch.py: installing python3-torch with apt-get", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.call("apt-get update -qq && apt-get install -y -qq python3-torch >&2",
                       shell=True, env=env) != 0:
        sys.exit("bench_pretrain_torch.py: apt-get install python3-torch failed")
    os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)


def load_torch(blas_threads):
    """torch, numpy and tools/bench_torch.py (its models and MLM loss), the
    BLAS pool fixed first."""
    global torch, np, BT
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_torch as BT
    BT.load_torch(blas_threads)   # sets OPENBLAS_NUM_THREADS & co., then imports torch
    import numpy as np
    torch = BT.torch


def blas_lib():
    """The BLAS library torch's process mapped (its directory names the
    implementation: openblas-pthread, blis-pthread, blas = the slow reference)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "libblas.so" in path or "libopenblas" in path:
                path = os.path.realpath(path)
                return os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
    return "-"


def full_config(c):
    """HF BertConfig's defaults for the keys a short config leaves out."""
    for k, v in (("type_vocab_size", 2), ("hidden_act", "gelu"), ("layer_norm_eps", 1e-12),
                 ("initializer_range", 0.02), ("pad_token_id", 0),
                 ("max_position_embeddings", 512),
                 ("hidden_dropout_prob", 0.1), ("attention_probs_dropout_prob", 0.1)):
        c.setdefault(k, v)
    return c


def token_stream(path):
    """bertc's token cache: the stream of ids (a read-only memory map, 1-D)."""
    with open(path, "rb") as f:
        head = f.read(HEADER_BYTES)
    if len(head) != HEADER_BYTES or head[:8] != b"BERTCTOK":
        sys.exit("bench_pretrain_torch.py: %s is not a bertc token cache (BERTCTOK header); "
                 "make one with bertc pretrain --cache %s" % (path, path))
    width = int.from_bytes(head[12:16], "little")
    n_tokens = int.from_bytes(head[56:64], "little")
    dtype = {2: np.uint16, 4: np.uint32}[width]
    return np.memmap(path, dtype=dtype, mode="r", offset=HEADER_BYTES, shape=(n_tokens,))


def special_ids(vocab):
    """The ids of [PAD] [UNK] [CLS] [SEP] [MASK] in vocab.txt."""
    with open(vocab, encoding="utf-8") as f:
        ids = {line.rstrip("\n"): i for i, line in enumerate(f)}
    try:
        return {t: ids[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}, len(ids)
    except KeyError as e:
        sys.exit("bench_pretrain_torch.py: %s has no %s token" % (vocab, e))


def packed_rows(stream, order, W, cls, sep):
    """(B, W + 2) int64: rows order[] of the stream cut into W tokens, each
    [CLS] row [SEP] (HF's group_texts, then the tokenizer's special tokens)."""
    body = np.stack([stream[r * W:(r + 1) * W] for r in order]).astype(np.int64)
    ids = torch.from_numpy(body)
    B = ids.shape[0]
    return torch.cat([torch.full((B, 1), cls), ids, torch.full((B, 1), sep)], 1)


def torch_mask_tokens(inputs, all_special_ids, mask_id, V, p):
    """DataCollatorForLanguageModeling.torch_mask_tokens (transformers 4.x),
    line for line: returns (inputs masked in place, labels)."""
    labels = inputs.clone()
    probability_matrix = torch.full(labels.shape, p)
    # tokenizer.get_special_tokens_mask(val, already_has_special_tokens=True)
    special_tokens_mask = [[1 if token in all_special_ids else 0 for token in val]
                           for val in labels.tolist()]
    special_tokens_mask = torch.tensor(special_tokens_mask, dtype=torch.bool)
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = torch.bernoulli(probability_matrix).bool()
    labels[~masked_indices] = -100
    indices_replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked_indices
    inputs[indices_replaced] = mask_id
    indices_random = (torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked_indices
                      & ~indices_replaced)
    random_words = torch.randint(V, labels.shape, dtype=torch.long)
    inputs[indices_random] = random_words[indices_random]
    return inputs, labels


def adamw(m, lr, total_steps):
    """AdamW with decay on the 2-D weights only, and bertc's default schedule:
    linear warmup over 6 % of the steps, then linear decay to 0."""
    params = [p for p in m.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.01},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    warm = int(0.06 * total_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: s / max(warm, 1) if s < warm
        else max(0.0, (total_steps - s) / max(total_steps - warm, 1)))
    return opt, sched


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--cache", required=True, help="bertc's token cache of the corpus")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--mlm-probability", type=float, default=0.15)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--window", type=int, default=10, help="steps a timed window")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int, default=0)
    a = ap.parse_args()
    ensure_torch()
    load_torch(a.blas_threads or a.threads)
    torch.set_num_threads(a.threads)
    blas = blas_lib()
    if "openblas" not in blas:
        print("bench_pretrain_torch.py: warning: torch's BLAS is %s, not OpenBLAS (Debian's "
              "libblas.so.3 alternative; sh bench/install_refs.sh installs OpenBLAS)" % blas,
              file=sys.stderr)
    with open(a.config) as f:
        c = full_config(json.load(f))
    specials, V = special_ids(a.vocab)
    if V != c["vocab_size"]:
        sys.exit("bench_pretrain_torch.py: %s has %d tokens, %s vocab_size %d"
                 % (a.vocab, V, a.config, c["vocab_size"]))
    stream = token_stream(a.cache)
    B, S, W = a.batch_size, a.max_len, a.max_len - 2
    n_rows = len(stream) // W
    held = min(n_rows // 20, 1000) if n_rows >= 2 else 0
    n_train = n_rows - held
    if n_train < 1:
        sys.exit("bench_pretrain_torch.py: %s holds %d tokens: no training row of %d"
                 % (a.cache, len(stream), S))
    torch.manual_seed(a.seed)
    m = BT.R.BertForMaskedLM(c).train()
    BT.Z.hf_init(m, c["initializer_range"])
    total = a.warmup_steps + a.windows * a.window
    opt, sched = adamw(m, a.lr, total)
    all_special_ids = sorted(specials.values())   # HF's tokenizer.all_special_ids (a list)
    gen = torch.Generator().manual_seed(a.seed)
    order, pos = torch.randperm(n_train, generator=gen).tolist(), 0
    rates, window_tokens, tokens_all, masked_all = [], 0, 0, 0
    start = wall0 = t0 = time.perf_counter()
    cpu0 = time.process_time()
    for step in range(total):
        if step == a.warmup_steps:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            t0, window_tokens = wall0, 0
        if pos + B > n_train:
            order, pos = torch.randperm(n_train, generator=gen).tolist(), 0
        ids = packed_rows(stream, order[pos:pos + B], W, specials["[CLS]"], specials["[SEP]"])
        pos += B
        ids, labels = torch_mask_tokens(ids, all_special_ids, specials["[MASK]"], V,
                                        a.mlm_probability)
        mask = torch.ones_like(ids)      # packed rows: no padding
        types = torch.zeros_like(ids)
        loss = BT.mlm_train_loss(m, c, ids, mask, types, labels, masked_head=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        n_tok = int(mask.sum())
        tokens_all += n_tok
        masked_all += int((labels != -100).sum())
        window_tokens += n_tok
        if step >= a.warmup_steps and (step + 1 - a.warmup_steps) % a.window == 0:
            t1 = time.perf_counter()
            rates.append(window_tokens / (t1 - t0))
            t0, window_tokens = t1, 0
    end = time.perf_counter()
    cores = (time.process_time() - cpu0) / (end - wall0) if end > wall0 else 0.0
    rates_sorted = sorted(rates)
    n = len(rates_sorted)
    med = (rates_sorted[n // 2] if n % 2 else
           0.5 * (rates_sorted[n // 2 - 1] + rates_sorted[n // 2])) if n else 0.0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("pretrain BertForMaskedLM L=%d H=%d V=%d B=%d S=%d threads=%d blas_threads=%s "
          "tokens_per_s %.0f windows %dx%d window_tokens_per_s %s all_tokens_per_s %.0f "
          "ms_per_step %.1f masked_per_step %.1f loss %.4f peak_rss_mib %.1f cores_used %.2f "
          "blas_lib %s blas_core %s torch %s"
          % (c["num_hidden_layers"], c["hidden_size"], V, B, S, torch.get_num_threads(),
             os.environ["OPENBLAS_NUM_THREADS"], med, a.windows, a.window,
             ",".join("%.0f" % r for r in rates), tokens_all / (end - start),
             B * S / med * 1e3 if med else 0.0, masked_all / total, loss.item(), rss, cores,
             blas, BT.blas_core(), torch.__version__))


if __name__ == "__main__":
    main()
