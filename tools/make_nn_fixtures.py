#!/usr/bin/python3
"""tools/make_nn_fixtures.py - PyTorch reference values for the nn layer.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_nn_fixtures.py
Writes test/data/nn/{losses,modules,optim,state_dict}.safetensors. The tests
read these files; they never need Python. Every module case computes
f = sum(out * proj) with a fixed random projection `proj`, and stores the
gradients of f with respect to every input and parameter.
"""
import math
import os

import torch
import torch.nn.functional as F

import st

OUT = os.path.join(os.path.dirname(__file__), "..", "test", "data", "nn")
torch.manual_seed(1234)


def losses():
    t = {}
    logits = torch.randn(6, 5, requires_grad=True)
    target = torch.tensor([1, 4, -100, 0, -100, 3])
    loss = F.cross_entropy(logits, target, ignore_index=-100)
    loss.backward()
    t.update({"ce.logits": logits, "ce.target": target, "ce.loss": loss.reshape(1),
              "ce.grad": logits.grad})

    # p includes exact 0 and 1 where the label disagrees: PyTorch clamps the
    # log at -100, and its backward divides by max(p(1-p), 1e-12).
    p = torch.tensor([[0.2, 0.9, 0.0, 1.0, 0.5], [0.7, 0.05, 0.6, 0.0, 1.0]],
                     requires_grad=True)
    y = torch.tensor([[0.0, 1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0, 1.0]])
    for red in ("mean", "sum"):
        p.grad = None
        loss = F.binary_cross_entropy(p, y, reduction=red)
        loss.backward()
        t["bce.loss_" + red] = loss.reshape(1)
        t["bce.grad_" + red] = p.grad.clone()
    t["bce.p"] = p
    t["bce.y"] = y

    z = (torch.randn(3, 4) * 4).requires_grad_()
    yz = torch.randint(0, 2, (3, 4)).float()
    loss = F.binary_cross_entropy_with_logits(z, yz)
    loss.backward()
    t.update({"bcel.z": z, "bcel.y": yz, "bcel.loss": loss.reshape(1), "bcel.grad": z.grad})

    a = torch.randn(7, requires_grad=True)
    b = torch.randn(7)
    loss = F.mse_loss(a, b)
    loss.backward()
    t.update({"mse.a": a, "mse.t": b, "mse.loss": loss.reshape(1), "mse.grad": a.grad})
    st.save(os.path.join(OUT, "losses.safetensors"), t)


def project(t, prefix, out, inputs, params):
    """Store out, the projection, and grads of sum(out*proj) w.r.t. everything."""
    proj = torch.randn_like(out)
    (out * proj).sum().backward()
    t[prefix + "out"] = out
    t[prefix + "proj"] = proj
    for name, x in inputs.items():
        t[prefix + name] = x
        t[prefix + "grad." + name] = x.grad
    for name, p in params.items():
        t[prefix + name] = p
        t[prefix + "grad." + name] = p.grad


def split_heads(x, nh):
    B, S, H = x.shape
    return x.view(B, S, nh, H // nh).permute(0, 2, 1, 3)


def merge_heads(x):
    B, nh, S, d = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, S, nh * d)


def modules():
    t = {}
    # LayerNorm (eps 1e-5) with affine parameters
    ln = torch.nn.LayerNorm(8, eps=1e-5)
    with torch.no_grad():
        ln.weight.normal_(1.0, 0.3)
        ln.bias.normal_(0.0, 0.3)
    x = (torch.randn(2, 3, 8) * 3 + 1).requires_grad_()
    project(t, "ln.", ln(x), {"x": x}, {"weight": ln.weight, "bias": ln.bias})

    # Linear
    lin = torch.nn.Linear(5, 4)
    x = torch.randn(2, 3, 5, requires_grad=True)
    project(t, "linear.", lin(x), {"x": x}, {"weight": lin.weight, "bias": lin.bias})

    # Embedding with padding_idx 0: the padding row gets no gradient
    emb = torch.nn.Embedding(6, 3, padding_idx=0)
    ids = torch.tensor([[1, 0, 5, 1], [0, 2, 2, 3]])
    project(t, "emb.", emb(ids), {}, {"weight": emb.weight})
    t["emb.ids"] = ids

    # Conv1d, k = 3, padding 1
    conv = torch.nn.Conv1d(4, 5, 3, padding=1)
    x = torch.randn(2, 4, 7, requires_grad=True)
    project(t, "conv.", conv(x), {"x": x}, {"weight": conv.weight, "bias": conv.bias})

    # BERT self-attention (HF BertSelfAttention, eval): additive finfo.min mask
    H, nh = 8, 2
    q, k, v = (torch.nn.Linear(H, H) for _ in range(3))
    for m in (q, k, v):
        with torch.no_grad():
            m.bias.normal_(0, 0.1)
    x = torch.randn(2, 5, H, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    add = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    Q, K, V = split_heads(q(x), nh), split_heads(k(x), nh), split_heads(v(x), nh)
    scores = Q @ K.transpose(-1, -2) / math.sqrt(H // nh) + add
    probs = scores.softmax(-1)
    ctx = merge_heads(probs @ V)
    params = {}
    for name, m in (("query", q), ("key", k), ("value", v)):
        params[name + ".weight"] = m.weight
        params[name + ".bias"] = m.bias
    probs.retain_grad()
    project(t, "bert_attn.", ctx, {"x": x}, params)
    t["bert_attn.mask"] = mask
    t["bert_attn.probs"] = probs

    # OpenNMT attention (BertSum): query pre-scaled, masked_fill(-1e18)
    lk, lv, lq, fl = (torch.nn.Linear(H, H) for _ in range(4))
    x = torch.randn(2, 4, H, requires_grad=True)
    pad = torch.tensor([[0, 0, 0, 1], [0, 0, 1, 1]]).bool()
    Kh, Vh = split_heads(lk(x), nh), split_heads(lv(x), nh)
    Qh = split_heads(lq(x), nh) / math.sqrt(H // nh)
    sc = (Qh @ Kh.transpose(2, 3)).masked_fill(pad[:, None, None, :], -1e18)
    out = fl(merge_heads(sc.softmax(-1) @ Vh))
    params = {}
    for name, m in (("linear_keys", lk), ("linear_values", lv), ("linear_query", lq),
                    ("final_linear", fl)):
        params[name + ".weight"] = m.weight
        params[name + ".bias"] = m.bias
    project(t, "onmt_attn.", out, {"x": x}, params)
    t["onmt_attn.pad"] = pad.long()
    st.save(os.path.join(OUT, "modules.safetensors"), t)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def optim():
    """10 steps of each optimizer on the same model and batch."""
    torch.manual_seed(99)
    base = Mlp()
    x = torch.randn(5, 4)
    y = torch.tensor([0, 2, 1, 2, 0])
    t = {"x": x, "y": y}
    for name, p in base.state_dict().items():
        t["init." + name] = p.clone()
    cases = {
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.01),
        "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=0.1),
        "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
        "sgd_nesterov": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
        # AdamW + global-norm clipping at 0.5 + linear warmup(3)/decay(10)
        "adamw_clip_linear": lambda ps: torch.optim.AdamW(ps, lr=3e-2),
    }
    for case, make in cases.items():
        model = Mlp()
        model.load_state_dict(base.state_dict())
        opt = make(model.parameters())
        sched = None
        if case == "adamw_clip_linear":
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda s: s / 3 if s < 3 else max(0.0, (10 - s) / 7))
        losses = []
        for _ in range(10):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if case == "adamw_clip_linear":
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            if sched:
                sched.step()
            losses.append(loss.item())
        t[case + ".losses"] = torch.tensor(losses)
        for name, p in model.state_dict().items():
            t[case + "." + name] = p.clone()
    st.save(os.path.join(OUT, "optim.safetensors"), t)
    # A plain PyTorch state_dict, to load by name.
    st.save(os.path.join(OUT, "state_dict.safetensors"), base.state_dict(),
            metadata={"format": "pt"})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    losses()
    modules()
    optim()
    print("wrote", sorted(os.listdir(OUT)))
