#!/usr/bin/env python3
"""Generate the hostile files beyond the safetensors format itself.

Plain Python 3 (struct + json), no torch. Run from the repository root:

    python3 tools/make_bad_files.py

Each file must be rejected by bertc with a message containing the substring
listed here; test/test_hostile.c holds the same tables and checks them both
through the library and through the `bertc` command (exit status 1, no
signal). The model files are made against test/data/zoo/bert_seqcls_single/
(BertForSequenceClassification, vocab 120, H 32, 2 layers, 3 labels,
max_position_embeddings 40), whose weights and inputs they start from.

test/data/bad/config/*.json    config.json files      (bertc summary --config)
test/data/bad/vocab/*.txt      vocabulary files       (bertc tokenize --vocab)
test/data/bad/weights/*.safetensors  weights          (bertc run --weights)
test/data/bad/inputs/*.safetensors   inputs           (bertc run --inputs)

Non-finite weights are an error naming the tensor and the first bad element:
a NaN or an infinity in a weight file can only make every output NaN, and
training from it would spread it through every weight (SPEC §5 leaves it
open; refusing is the safer choice). A weights file as bertc writes it, with
"bertc.crc32" in __metadata__, whose data then lost a bit is refused before
any weight is read.
"""

import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BAD = os.path.join(ROOT, "test", "data", "bad")
ZOO = os.path.join(ROOT, "test", "data", "zoo", "bert_seqcls_single")

BASE = ('{"architectures": ["BertForSequenceClassification"], "vocab_size": 120, '
        '"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, '
        '"intermediate_size": 37, "max_position_embeddings": 40%s}')


def config(extra):
    return (BASE % extra).encode()


# (name, bytes, substring of the message)
CONFIGS = [
    ("empty", b"", "expected a JSON value"),
    ("deep_nesting", config(', "x": ' + "[" * 100000), "nesting deeper than 64"),
    ("nan_literal", config(', "hidden_dropout_prob": NaN'), "expected a JSON value"),
    ("infinity", config(', "layer_norm_eps": Infinity'), "expected a JSON value"),
    ("number_overflow", config(', "layer_norm_eps": 1e999'), "out of the range of a double"),
    ("int_beyond_int64", config(', "type_vocab_size": 99999999999999999999'),
     "expected an integer"),
    ("int_beyond_int32", config(', "type_vocab_size": 4294967296'),
     "must be an integer in [1, 2147483647]"),
    ("negative_size", config(', "type_vocab_size": -2'), "found -2"),
    ("zero_heads", (BASE % "").replace('"num_attention_heads": 4', '"num_attention_heads": 0')
     .encode(), "num_attention_heads"),
    ("bom", b"\xef\xbb\xbf" + config(""), "byte order mark"),
    ("invalid_utf8", config(', "name": "X"').replace(b"X", b"\xff"), "invalid UTF-8"),
    ("lone_surrogate", config(', "name": "\\ud800"'), "surrogate"),
    ("comment", config(' /* big */'), "expected ',' or '}'"),
    ("nul_byte", config(', "a": 1') + b"\x00", "after the end of the JSON value"),
    ("duplicate_key", config(', "vocab_size": 120'), "duplicate key \"vocab_size\""),
    ("architectures_not_list", config("").replace(b'["BertForSequenceClassification"]',
                                                   b'"BertForSequenceClassification"'),
     "architectures"),
]

SPECIALS = b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"

VOCABS = [
    ("empty", b"", "empty file"),
    ("only_newlines", b"\n\n\n", "empty line"),
    ("invalid_utf8", SPECIALS + b"ok\n\xc3\x28\n", ":7: invalid UTF-8"),
    ("overlong_utf8", SPECIALS + b"\xc0\xaf\n", ":6: invalid UTF-8"),
    ("nul_byte", SPECIALS + b"a\x00b\n", ":6: NUL byte"),
    ("duplicate", SPECIALS + b"x\ny\nx\n", ":8: duplicate token 'x' (first on line 6)"),
    ("no_unk", b"[PAD]\n[CLS]\n[SEP]\n[MASK]\nthe\n", "no [UNK] token"),
    ("binary", bytes(range(256)) * 4, "NUL byte"),
    ("utf16", "[PAD]\n[UNK]\n".encode("utf-16"), "invalid UTF-8"),
]


# ---------------------------------------------------------------------------
# safetensors helpers
# ---------------------------------------------------------------------------

def st_read(path):
    """name -> (dtype, shape, raw bytes), in header order."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], e["shape"], blob[8 + n + b:8 + n + end])
    return out


def st_bytes(tensors, crc32=False):
    """With crc32=True, "bertc.crc32" in __metadata__ as bertc writes it."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if crc32:
        header = {"__metadata__": {"format": "pt", "bertc.crc32": "%08x" % zlib.crc32(data)},
                  **header}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def with_f32(tensors, name, index, value):
    t = dict(tensors)
    dtype, shape, raw = t[name]
    assert dtype == "F32"
    raw = raw[:4 * index] + struct.pack("<f", value) + raw[4 * index + 4:]
    t[name] = (dtype, shape, raw)
    return t


def flip_bit(blob, at):
    """The low bit of blob[at] flipped: a bad disk, a bad copy."""
    return blob[:at] + bytes([blob[at] ^ 1]) + blob[at + 1:]


def i64(shape, values):
    return ("I64", shape, struct.pack("<%dq" % len(values), *values))


def weights_cases():
    w = st_read(os.path.join(ZOO, "weights.safetensors"))
    emb = "bert.embeddings.word_embeddings.weight"
    cls = "classifier.weight"
    no_cls = {k: v for k, v in w.items() if k != cls}
    wrong_shape = dict(w)
    wrong_shape[cls] = ("F32", [2, 32], w[cls][2][:2 * 32 * 4])
    return [
        ("nan_weight", st_bytes(with_f32(w, emb, 7 * 32 + 3, float("nan"))),
         "'bert.embeddings.word_embeddings.weight'[7, 3] is nan"),
        ("inf_weight", st_bytes(with_f32(w, cls, 40, float("inf"))),
         "'classifier.weight'[1, 8] is inf"),
        ("missing_param", st_bytes(no_cls), "missing parameter 'classifier.weight'"),
        ("wrong_shape", st_bytes(wrong_shape), "'classifier.weight' has shape [2, 32]"),
        ("crc_flipped_bit", flip_bit(st_bytes(w, crc32=True), -100),
         "data section checksum mismatch"),
    ]


def inputs_cases():
    x = st_read(os.path.join(ZOO, "inputs.safetensors"))   # B = 3, S = 16

    def but(**changes):
        t = dict(x)
        for k, v in changes.items():
            if v is None:
                del t[k]
            else:
                t[k] = v
        return st_bytes(t)

    ids = list(struct.unpack("<48q", x["input_ids"][2]))
    many = dict(x)
    for k in range(40):
        many["extra.%02d" % k] = i64([1], [0])
    return [
        ("id_beyond_vocab", but(input_ids=i64([3, 16], ids[:5] + [120] + ids[6:])),
         "'input_ids'[0, 5] = 120 is >= vocab_size 120"),
        ("negative_id", but(input_ids=i64([3, 16], [-1] + ids[1:])),
         "'input_ids'[0, 0] = -1 is below 0"),
        ("id_beyond_int32", but(input_ids=i64([3, 16], [2 ** 40] + ids[1:])),
         "outside the int32 range"),
        ("mask_not_binary", but(attention_mask=i64([3, 16], [2] * 48)),
         "'attention_mask'[0, 0] = 2 is neither 0 nor 1"),
        ("type_beyond", but(token_type_ids=i64([3, 16], [5] * 48)),
         "'token_type_ids'[0, 0] = 5 is >= type_vocab_size 2"),
        ("label_beyond", but(labels=i64([3], [0, 3, 1])), "'labels'[1] = 3"),
        ("float_ids", but(input_ids=("F32", [3, 16], struct.pack("<48f", *ids))),
         "'input_ids' must hold integers"),
        ("missing_ids", but(input_ids=None), "missing input tensor 'input_ids'"),
        ("wrong_rank", but(input_ids=i64([48], ids)), "'input_ids' must have shape"),
        ("mask_shape", but(attention_mask=i64([3, 15], [1] * 45)),
         "'attention_mask' must have shape [3, 16], got [3, 15]"),
        ("too_long", but(input_ids=i64([1, 41], [1] * 41), attention_mask=None,
                         token_type_ids=None, labels=None),
         "max_position_embeddings 40"),
        ("too_many_tensors", st_bytes(many), "more than the 32 inputs"),
    ]


def write(sub, name, ext, content):
    d = os.path.join(BAD, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ext), "wb") as f:
        f.write(content)


def main():
    for name, content, _ in CONFIGS:
        write("config", name, ".json", content)
    for name, content, _ in VOCABS:
        write("vocab", name, ".txt", content)
    for name, content, _ in weights_cases():
        write("weights", name, ".safetensors", content)
    for name, content, _ in inputs_cases():
        write("inputs", name, ".safetensors", content)
    print("wrote the hostile config, vocab, weights and inputs files to", BAD)


if __name__ == "__main__":
    main()
