#!/usr/bin/env python3
"""Write the seed corpora of the libFuzzer targets into test/fuzz/corpus/.

Run from the repository root after the fixtures exist:

    python3 test/fuzz/make_corpus.py

Seeds are small valid inputs (plus a few near misses) for each target, so the
fuzzer starts from files that get past the first checks:

fuzz_safetensors  the good files of tools/make_bad_safetensors.py, two inputs
                  files of test/data/zoo/ and some hostile files
fuzz_config       test/data/config/*.json and the zoo fixtures' configs
fuzz_vocab        tiny vocabularies (LF, CRLF, no final newline, ## pieces)
fuzz_tokenize     option byte + split byte + text (see fuzz_tokenize.c)
fuzz_run_inputs   model byte + an inputs file of that model's fixture
                  (see fuzz_run_inputs.c for the model order)
fuzz_model        a tiny config of each architecture as fuzz_model.c decodes
                  it, and edge sizes (0 layers, 1 position, S = 1, ...)
"""

import glob
import os
import shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "test", "fuzz", "corpus")

# The order of `fixtures` in fuzz_run_inputs.c.
RUN_FIXTURES = ["bert_model", "bert_seqcls_single", "bert_seqcls_regression",
                "bert_seqcls_multi", "bert_mlm_b", "cgbert_gate", "qacgbert_first",
                "bertsum_b", "qaconv_given", "spanbert_c"]

SPECIALS = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"

TEXTS = [
    b"Hello, world!",
    b"The cat sat on the mat.",
    "H\u00e9llo w\u00f6rld \u4e2d\u6587 \u03a3\u03b9\u03c3\u03c5\u03c6\u03bf\u03c2".encode(),
    b"[CLS] who [MASK] it? [SEP] unaffable",
    b"e\xcc\x81t\xc3\xa9 \xf0\x9f\x98\x80 tab\there\r\nnew\x1bline",
    b"a" * 120 + b" supercalifragilistic",
]


def path(target, name):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def write(target, name, data):
    with open(path(target, name), "wb") as f:
        f.write(data)


def read(rel):
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


# fuzz_model.c: one byte per key, an index into its table of edge values
# (0x80 leaves the key out). Index -> value of int_edges for the tiny model.
INT_EDGE = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 8: 7, 12: 8, 16: 9, 30: 10, 64: 11,
            1024: 12, 1025: 13, 2147483647: 15}
TINY = {"vocab_size": 30, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2,
        "num_labels": 3, "pad_token_id": 0, "sep_token_id": 3, "mask_token_id": 4,
        "cls_token_id": 2, "unk_token_id": 1, "context_vocab_size": 4, "ff_size": 16,
        "heads": 2, "inter_layers": 2, "pe_max_len": 64, "query_len": 4, "conv_filters": 8,
        "num_question_types": 6, "sbo_dim_ffn": 16, "sbo_max_span_length": 3}
ARCHS = 8
OMIT = 0x80
EDGES = [{"num_hidden_layers": 0}, {"hidden_size": 0}, {"max_position_embeddings": 1},
         {"vocab_size": 1}, {"inter_layers": 0}, {"query_len": 16}, {"pe_max_len": 1},
         {"sbo_max_span_length": 1}, {"num_labels": 1}, {"type_vocab_size": 1},
         {"num_attention_heads": 8}, {"hidden_size": 2147483647}, {"conv_filters": 1},
         {"num_hidden_layers": 1025}]


def model_seed(arch, s_minus_1, labels, tiny):
    keys = list(TINY)
    out = [arch, (0x80 if labels else 0) | (s_minus_1 << 1) | 1]
    out += [INT_EDGE[tiny[k]] for k in keys]
    out += [OMIT] * 8                 # float keys: defaults
    out += [0, OMIT, OMIT, 0]         # gelu, problem_type, pooler_type, masking {"seed": 1}
    return bytes(out)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for f in ["good_all_dtypes", "good_hf_layout", "good_spaced"]:
        write("fuzz_safetensors", f, read("test/data/%s.safetensors" % f))
    for f in ["bert_seqcls_single", "bertsum_b"]:
        write("fuzz_safetensors", "inputs_" + f, read("test/data/zoo/%s/inputs.safetensors" % f))
    for f in ["overlap", "shape_overflow", "metadata_not_string", "bool_byte"]:
        write("fuzz_safetensors", "bad_" + f, read("test/data/bad/%s.safetensors" % f))

    for f in sorted(glob.glob(os.path.join(ROOT, "test/data/config/*.json"))):
        write("fuzz_config", os.path.basename(f)[:-5], read(f))
    for f in RUN_FIXTURES:
        write("fuzz_config", "zoo_" + f, read("test/data/zoo/%s/config.json" % f))

    write("fuzz_vocab", "tiny", (SPECIALS + "the\ncat\n##s\nsat\n.\n,\n").encode())
    write("fuzz_vocab", "crlf", (SPECIALS.replace("\n", "\r\n") + "hello").encode())
    write("fuzz_vocab", "pieces", (SPECIALS + "un\n##aff\n##able\n\u00e9t\u00e9\n\u4e2d\n").encode())
    real = read("data/bert-base-uncased-vocab.txt").split(b"\n")
    write("fuzz_vocab", "real_slice", b"\n".join(real[:5] + real[100:110] + real[1996:2100]))

    for i, text in enumerate(TEXTS):
        write("fuzz_tokenize", "single%d" % i, bytes([0, 0]) + text)
        write("fuzz_tokenize", "pair%d" % i, bytes([64 | 32 | 12, 128]) + text)

    for i, f in enumerate(RUN_FIXTURES):
        inputs = read("test/data/zoo/%s/inputs.safetensors" % f)
        write("fuzz_run_inputs", f, bytes([i]) + inputs)
        write("fuzz_run_inputs", f + "_grad", bytes([128 | i]) + inputs)
    for arch in range(ARCHS):
        write("fuzz_model", "tiny%d" % arch, model_seed(arch, 7, True, TINY))
        write("fuzz_model", "tiny%d_s1" % arch, model_seed(arch, 0, False, TINY))
        write("fuzz_model", "tiny%d_train" % arch, model_seed(0x80 | arch, 7, True, TINY))
        for i, edge in enumerate(EDGES):
            write("fuzz_model", "edge%d_%d" % (arch, i), model_seed(arch, 7, True, dict(TINY, **edge)))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
