"""tools/zoo_common.py - shared pieces of the zoo fixture generators.

Each model's generator builds the model in PyTorch from SPEC section 6, then
writes one directory per case under test/data/zoo/<case>/:
  config.json           the HF-style config (architectures[0] picks the model)
  weights.safetensors   the state_dict (tied aliases under every name)
  inputs.safetensors    the inputs of SPEC section 6 (I64, labels F32 where float)
  expected.safetensors  every output of section 6, the loss, and grad.<key> for
                        every parameter key, computed in float64 (stored F32)
The C test (test/test_zoo_parity.c) runs `bertc run --grad` on each directory
and compares every tensor of expected.safetensors.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import st

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "data", "zoo")


def gelu(x):
    return F.gelu(x)  # erf form


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def act(name):
    return {"gelu": gelu, "gelu_new": gelu_tanh, "relu": F.relu}[name]


def hf_init(module, std):
    """HF init: Linear/Embedding N(0, std), biases 0, LayerNorm 1/0, padding row 0.
    The fixtures use a larger std than 0.02 so that gradients are not tiny."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            m.weight.data.normal_(0.0, std)
            if m.bias is not None:
                m.bias.data.normal_(0.0, std)
        elif isinstance(m, nn.Embedding):
            m.weight.data.normal_(0.0, std)
            if m.padding_idx is not None:
                m.weight.data[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            m.weight.data.normal_(1.0, std)
            m.bias.data.normal_(0.0, std)


def write_case(name, config, model, inputs, outputs, tied=None):
    """model: an nn.Module already run in float64 whose .grad fields hold the
    gradients of outputs['loss']. tied: {alias: owner} extra state_dict names."""
    d = os.path.join(ZOO, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    weights = {k: v.detach().float() for k, v in model.state_dict().items()}
    expected = {k: (v.detach().float() if v.dtype.is_floating_point else v.detach().long())
                for k, v in outputs.items()}
    params = dict(model.named_parameters()) if "loss" in outputs else {}
    for key in weights:
        p = params.get(key)
        if p is not None:
            expected["grad." + key] = (p.grad if p.grad is not None
                                       else torch.zeros_like(p)).detach().float()
    for alias, owner in (tied or {}).items():
        weights[alias] = weights[owner]
        if params:
            expected["grad." + alias] = expected["grad." + owner]
    st.save(os.path.join(d, "weights.safetensors"), weights, metadata={"format": "pt"})
    st.save(os.path.join(d, "inputs.safetensors"), inputs)
    # PyTorch's parameter count (tied tensors once, buffers not at all): the
    # harness checks that `bertc summary` reports the same total.
    count = sum(p.numel() for p in model.parameters())
    st.save(os.path.join(d, "expected.safetensors"), expected,
            metadata={"param_count": str(count)})
    print("wrote", d, sum(v.numel() for v in weights.values()), "parameters")


def padded_batch(gen, S, vocab, lengths, first=1, sep=2):
    """input_ids [CLS] w... [SEP] then 0 (padding) for each length, and the mask."""
    B = len(lengths)
    ids = torch.zeros(B, S, dtype=torch.long)
    mask = torch.zeros(B, S, dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(5, vocab, (n,), generator=gen)
        ids[b, 0] = first
        ids[b, n - 1] = sep
        mask[b, :n] = 1
    return ids, mask
