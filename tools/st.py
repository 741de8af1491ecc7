"""tools/st.py - a minimal safetensors writer/reader for the fixture scripts.

Debian's python3-torch has no `safetensors` package, so the fixture scripts
write the format themselves (SPEC section 5): u64 little-endian header length,
JSON header {name: {dtype, shape, data_offsets}}, then raw little-endian data.
"""
import json
import struct

import numpy as np
import torch

_DTYPES = {
    torch.float32: ("F32", "<f4"),
    torch.float64: ("F64", "<f8"),
    torch.float16: ("F16", "<f2"),
    torch.int64: ("I64", "<i8"),
    torch.int32: ("I32", "<i4"),
    torch.uint8: ("U8", "u1"),
    torch.bool: ("BOOL", "u1"),
}


def save(path, tensors, metadata=None):
    """tensors: dict name -> torch.Tensor (written in sorted name order)."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            dtype = "BF16"
            raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            dtype, np_dtype = _DTYPES[t.dtype]
            raw = t.numpy().astype(np_dtype).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def load(path):
    """Returns dict name -> torch.Tensor (F32/F64/I64/I32/U8/BOOL)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    rev = {v[0]: v[1] for v in _DTYPES.values()}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        arr = np.frombuffer(data[base + b:base + e], dtype=rev[info["dtype"]])
        out[name] = torch.from_numpy(arr.copy()).reshape(info["shape"])
    return out
