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
fuzz_checkpoint   test/data/checkpoint/tiny.safetensors (written by the
                  target itself, see fuzz_checkpoint.c), the same without
                  its data checksum (so mutated data reaches the value and
                  counter checks), and near misses: counters out of range,
                  a NaN weight, a negative second moment, a run field that
                  differs or is missing, a zero-size tensor
fuzz_registry_load  model byte + that model's fixture weights (and a few
                  damaged ones; see fuzz_registry_load.c)
fuzz_cli_flags    parser byte + NUL-separated arguments of bertc / bertc attention
fuzz_attention    model byte + NUL-separated arguments of bertc attention
fuzz_model        a tiny config of each architecture as fuzz_model.c decodes
                  it, and edge sizes (0 layers, 1 position, S = 1, ...)
fuzz_finetune_rows  task/format byte + a small data file of each task
                  (CSV, TSV, JSONL, CoNLL, SQuAD v1.1 and v2.0 JSON)
fuzz_model_dir    files byte + vocab.txt + NUL + tokenizer_config.json
"""

import glob
import json
import os
import shutil
import struct

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


def st_parse(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), bytearray(blob[8 + n:])


def st_dump(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def checkpoint_seeds():
    good = read("test/data/checkpoint/tiny.safetensors")
    write("fuzz_checkpoint", "valid", good)
    header, data = st_parse(good)
    del header["__metadata__"]["bertc.crc32"]
    write("fuzz_checkpoint", "valid_nocrc", st_dump(header, data))

    def variant(name, change):
        h, d = json.loads(json.dumps(header)), bytearray(data)
        change(h, d)
        write("fuzz_checkpoint", name, st_dump(h, d))

    def put(h, d, tensor, fmt, value, element=0):
        begin = h[tensor]["data_offsets"][0] + struct.calcsize(fmt) * element
        d[begin:begin + struct.calcsize(fmt)] = struct.pack(fmt, value)

    word = "bert.embeddings.word_embeddings.weight"
    variant("step_beyond", lambda h, d: put(h, d, "train.step", "<q", 99))
    variant("step_negative", lambda h, d: put(h, d, "train.step", "<q", -1))
    variant("optimizer_ahead", lambda h, d: put(h, d, "optimizer.step", "<q", 3))
    variant("nan_weight", lambda h, d: put(h, d, word, "<f", float("nan"), 5))
    variant("negative_v", lambda h, d: put(h, d, "optimizer.exp_avg_sq." + word, "<f", -1.0, 2))
    variant("batch_differs", lambda h, d: h["__metadata__"].update(batch_size="3"))
    variant("no_seed", lambda h, d: h["__metadata__"].pop("seed"))

    def zero_size(h, d):
        t = h["bert.embeddings.token_type_embeddings.weight"]
        t["shape"] = [0, 4]
        t["data_offsets"][1] = t["data_offsets"][0]
    variant("zero_size", zero_size)
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
    # regress-* seeds are added by hand, each from a finding: keep them
    kept = {}
    for path in glob.glob(os.path.join(OUT, "*", "regress-*")):
        with open(path, "rb") as f:
            kept[path] = f.read()
    shutil.rmtree(OUT, ignore_errors=True)
    for path, blob in kept.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(blob)
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

    checkpoint_seeds()
    registry_load_seeds()
    cli_seeds()
    finetune_rows_seeds()
    model_dir_seeds()
    for arch in range(ARCHS):
        write("fuzz_model", "tiny%d" % arch, model_seed(arch, 7, True, TINY))
        write("fuzz_model", "tiny%d_s1" % arch, model_seed(arch, 0, False, TINY))
        write("fuzz_model", "tiny%d_train" % arch, model_seed(0x80 | arch, 7, True, TINY))
        for i, edge in enumerate(EDGES):
            write("fuzz_model", "edge%d_%d" % (arch, i), model_seed(arch, 7, True, dict(TINY, **edge)))
    print("wrote", OUT)


# The order of `fixtures` in fuzz_registry_load.c and fuzz_attention.c.
LOAD_FIXTURES = ["bert_model", "bert_seqcls_single", "bert_mlm_b", "cgbert_gate",
                 "qacgbert_first", "bertsum_b", "qaconv_given", "spanbert_c"]
ATTENTION_FIXTURES = ["bert_seqcls_single", "cgbert_gate", "qacgbert_gate", "bertsum_b",
                      "qaconv_given", "spanbert_c"]


def registry_load_seeds():
    for i, f in enumerate(LOAD_FIXTURES):
        weights = read("test/data/zoo/%s/weights.safetensors" % f)
        write("fuzz_registry_load", f, bytes([64 | i]) + weights)
    # another model's weights (wrong names and shapes), and init_missing
    write("fuzz_registry_load", "bert_into_cgbert",
          bytes([128 | 3]) + read("test/data/zoo/bert_model/weights.safetensors"))
    write("fuzz_registry_load", "empty_init_missing", bytes([128 | 64 | 1]) + b"\x02" + bytes(7)
          + b"{}")


def args(*a):
    return b"\0".join(x.encode() for x in a)


def cli_seeds():
    write("fuzz_cli_flags", "run", bytes([0]) + args(
        "--config", "c.json", "--weights", "w.safetensors", "--inputs", "i.safetensors",
        "--output", "o.safetensors", "--grad", "--threads", "4", "--stats"))
    write("fuzz_cli_flags", "tokenize", bytes([0]) + args(
        "--vocab", "v.txt", "--max-len", "16", "--cased", "hello world", "--", "--pair"))
    write("fuzz_cli_flags", "bad_threads", bytes([0]) + args("--threads", "0x10", "--seed"))
    write("fuzz_cli_flags", "attention", bytes([1]) + args(
        "--config", "c.json", "--weights", "w.safetensors", "--vocab", "v.txt", "--layer", "1",
        "--map", "quasi_attention_prob", "--context", "3", "--output", "a.svg", "the cat",
        "sat"))
    write("fuzz_cli_flags", "attention_bad", bytes([1]) + args("--layer", "-1", "--context"))
    for i, f in enumerate(ATTENTION_FIXTURES):
        write("fuzz_attention", f, bytes([i]) + args("the cat sat on the mat.", "a dog ran."))
    write("fuzz_attention", "layer0", bytes([0]) + args("--layer", "0", "hello world"))
    write("fuzz_attention", "context", bytes([1]) + args("--context", "7", "--layer", "1",
                                                         "unaffable"))
    write("fuzz_attention", "quasi", bytes([2]) + args("--map", "quasi_attention_prob", "it"))
    write("fuzz_attention", "gate", bytes([1]) + args("--map", "lambda_q", "who is it?"))


if __name__ == "__main__":
    main()


# fuzz_finetune_rows.c's byte 0: task (seq-cls 0, multi-label 1, regression 2,
# token-cls 3, qa 4, mlm 5) | format << 3 (CSV 0, TSV 1, JSONL 2, CoNLL 3) |
# window << 5.
def finetune_rows_seeds():
    def seed(name, task, fmt, text, window=0):
        write("fuzz_finetune_rows", name, bytes([task | fmt << 3 | window << 5]) + text.encode())
    seed("seq_cls_csv", 0, 0, 'text,label\n"a, b",x\nc,y\n')
    seed("multi_label_tsv", 1, 1, "text\tlabel\nthe cat\ta|b\nnone\t\n")
    seed("regression_csv", 2, 0, "text,label\nx,0.5\ny,1e-310\nz,-3.4e38\n")
    seed("regression_past_float", 2, 0, "text,label\nx,1e39\n")
    seed("token_cls_jsonl", 3, 2, '{"tokens": ["EU", "rejects", "German"], '
         '"tags": ["B-ORG", "O", "B-MISC"]}\n')
    seed("token_cls_conll", 3, 3, "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\n"
         "Peter NNP B-PER\n")
    seed("mlm_csv", 5, 0, "text\nthe cat sat\non the mat\n")
    qa = ('{"question": "Where does she live?", "context": "we know that she lives in '
          'Paris Nord now.", "answers": {"text": ["Paris Nord"], "answer_start": [26]}}\n'
          '{"question": "Who?", "context": "nobody here.", "answers": {"text": [], '
          '"answer_start": []}}\n')
    for w in (0, 1, 5):
        seed("qa_jsonl_window%d" % w, 4, 2, qa, w)
    squad = ('{"version": "v2.0", "data": [{"title": "T", "paragraphs": [\n'
             ' {"context": "Paris is in France.", "qas": [\n'
             '  {"id": "q1", "question": "Where is Paris?", "answers": '
             '[{"text": "France", "answer_start": 12}]},\n'
             '  {"id": "q2", "question": "Who?", "answers": [], "is_impossible": true}]}]}]}\n')
    seed("squad_v2", 4, 2, squad, 2)
    seed("squad_v1", 4, 2, squad.replace(', "is_impossible": true', "")
         .replace('"answers": []', '"answers": [{"text": "Paris", "answer_start": 0}]'), 3)


# fuzz_model_dir.c's byte 0: bit 0 model.safetensors, bit 1 vocab.txt, bit 2
# tokenizer_config.json.
def model_dir_seeds():
    vocab = (SPECIALS + "".join("t%d\n" % i for i in range(5, 120))).encode()
    config = json.dumps({"do_lower_case": True, "strip_accents": None, "cls_token": "[CLS]",
                         "sep_token": {"content": "[SEP]", "lstrip": False},
                         "model_max_length": 512}).encode()
    write("fuzz_model_dir", "all", bytes([7]) + vocab + b"\0" + config)
    write("fuzz_model_dir", "no_weights", bytes([6]) + vocab + b"\0" + config)
    write("fuzz_model_dir", "vocab_only", bytes([3]) + vocab)
    write("fuzz_model_dir", "bom_vocab", bytes([3]) + b"\xef\xbb\xbf" + vocab)
    write("fuzz_model_dir", "hf_unbounded", bytes([7]) + vocab + b"\0" +
          b'{"model_max_length": 1000000000000000019884624838656, "do_lower_case": false, '
          b'"strip_accents": false, "mask_token": "[MASK]"}')
    write("fuzz_model_dir", "no_vocab", bytes([5]) + b"\0{}")
