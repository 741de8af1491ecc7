#!/usr/bin/python3
"""Generate zoo/text/unicode_tables.c: the Unicode facts the WordPiece tokenizer
(SPEC §7, Hugging Face BertTokenizerFast) needs, as Hugging Face's own Rust
code answers them. tools/hf_unicode_probe.js asks the npm `tokenizers`
package about every code point; this script turns the answers into tables:

    tools/hf_tokenizer_fixtures.sh      (runs both, and writes the fixtures)
    /usr/bin/python3 tools/gen_unicode_tables.py probe.jsonl > zoo/text/unicode_tables.c

Why HF and not Python's unicodedata: the fast tokenizer takes its classes
from several crates of different Unicode versions (unicode_categories for
control / nonspacing mark / punctuation, unicode-normalization-alignments
for NFD, Rust's std for whitespace and lowercase), and so keeps unassigned
code points (Cn), does not strip marks newer than its tables, and so on;
docs/tokenizer.md lists the differences from the slow tokenizer.

Tables (all sorted, searched by bisection in zoo/text/tokenizer_text.c):
  bertc_uc_class     run-length code-point classes: each entry (first, flags) holds
               for first .. next entry's first - 1. Flags are UC_* below.
  bertc_uc_lower     lowercase of ONE code point (Rust char::to_lowercase, one
               character at a time, so 'Σ' is always 'σ') where it is ONE
               code point, as runs (first, last, stride, delta): cp in
               [first, last] with (cp - first) % stride == 0 lowers to
               cp + delta.
  bertc_uc_lower_multi  the code points that lower to more than one (U+0130).
  bertc_uc_ccc       canonical combining class runs (first, last, ccc), ccc != 0,
               for the code points HF's NFD reorders (values from Python's
               unicodedata: only their order matters).
  bertc_uc_decomp    HF's NFD of one code point for every code point that has
               one, Hangul syllables excepted (zoo/text/tokenizer_text.c
               decomposes them by the algorithm of Unicode §3.12).
"""
import json
import sys
import unicodedata

MAX_CP = 0x110000
SURROGATES = range(0xD800, 0xE000)

# Flag bits; zoo/text/tokenizer_internal.h defines the same names and values.
UC_CONTROL = 1     # BertNormalizer clean_text removes it (probe "rm")
UC_SPACE = 2       # clean_text maps it to ' ', BertPreTokenizer splits there ("sp", "ws")
UC_PUNCT = 4       # BertPreTokenizer isolates it ("pu")
UC_MN = 8          # strip_accents drops it after NFD ("mn")
UC_CJK = 32        # handle_chinese_chars puts spaces around it ("cjk")


def read_probe(path):
    with open(path, encoding="utf-8") as f:
        return {r["cp"]: r for r in map(json.loads, f) if r}


def flags_of(probe, cp):
    r = probe.get(cp, {})
    f = 0
    if r.get("rm"):
        f |= UC_CONTROL
    if r.get("sp") or r.get("ws"):
        f |= UC_SPACE
    if r.get("pu"):
        f |= UC_PUNCT
    if r.get("mn"):
        f |= UC_MN
    if r.get("cjk"):
        f |= UC_CJK
    return f


def class_runs(probe):
    runs, prev = [], None
    for cp in range(MAX_CP):
        f = UC_CONTROL if cp in SURROGATES else flags_of(probe, cp)
        if f != prev:
            runs.append((cp, f))
            prev = f
    return runs


def lower_runs(probe):
    """(first, last, stride, delta) runs of single-code-point lowercasing,
    greedily extending a run while the stride and delta stay the same."""
    pairs, multi = [], []
    for cp in sorted(probe):
        low = probe[cp].get("lo")
        if low is None:
            continue
        if len(low) > 1:
            multi.append((cp, low))
        else:
            pairs.append((cp, low[0] - cp))
    runs = []
    for cp, delta in pairs:
        if runs:
            first, last, stride, d = runs[-1]
            step = cp - last
            if d == delta and (stride == step or (first == last and step <= 2)):
                runs[-1] = (first, cp, step, d)
                continue
        runs.append((cp, cp, 1, delta))
    return runs, multi


def ccc_runs(probe):
    runs = []
    for cp in sorted(cp for cp, r in probe.items() if r.get("nz")):
        ccc = unicodedata.combining(chr(cp))
        assert ccc != 0, f"HF reorders U+{cp:04X}, Python's class is 0"
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == ccc:
            runs[-1] = (runs[-1][0], cp, ccc)
        else:
            runs.append((cp, cp, ccc))
    return runs


def decompositions(probe):
    return [(cp, r["nfd"]) for cp, r in sorted(probe.items())
            if "nfd" in r and not 0xAC00 <= cp <= 0xD7A3]


def normalize_one(probe, cp):
    """What zoo/text/tokenizer_text.c does to one code point alone (uncased):
    clean_text, CJK spacing, NFD, drop Mn, lowercase."""
    f = flags_of(probe, cp)
    if f & UC_CONTROL:
        return []
    if f & UC_SPACE:
        return [32]
    out = []
    for d in probe.get(cp, {}).get("nfd", [cp]):
        if not flags_of(probe, d) & UC_MN:
            out += probe.get(d, {}).get("lo", [d])
    return [32] + out + [32] if f & UC_CJK else out


def check_assumptions(probe, multi, decomp):
    """Facts zoo/text/tokenizer_text.c relies on; fail loudly if a new version of
    tokenizers breaks one."""
    assert all(len(d) <= 4 for _, d in decomp), "a decomposition longer than 4"
    assert all(len(m) <= 3 for _, m in multi), "a lowercase longer than 3"
    for cp in range(MAX_CP):
        if cp in SURROGATES:
            continue
        want = probe.get(cp, {}).get("full", [cp])
        got = normalize_one(probe, cp)
        assert got == want, f"U+{cp:04X}: tables give {got}, BertNormalizer {want}"
        f = flags_of(probe, cp)
        if f & (UC_CONTROL | UC_SPACE):
            continue
        got = [x for x in got if x != 32] if f & UC_CJK else got
        # One raw character becomes at most UC_EXPAND_MAX normalised ones,
        # none of them a space or a removed character.
        assert len(got) <= 4, f"U+{cp:04X} normalises to {len(got)} characters"
        for x in got:
            assert not flags_of(probe, x) & (UC_SPACE | UC_CONTROL), \
                f"U+{cp:04X} yields a space or a removed character"


def emit(probe, out):
    runs = class_runs(probe)
    lows, multi = lower_runs(probe)
    cccs = ccc_runs(probe)
    decomp = decompositions(probe)
    check_assumptions(probe, multi, decomp)
    w = out.write
    w("/* zoo/text/unicode_tables.c — GENERATED by tools/gen_unicode_tables.py from what\n")
    w(" * Hugging Face tokenizers (npm, tools/hf_unicode_probe.js) does with each code\n")
    w(f" * point; combining classes from Python {sys.version.split()[0]}'s unicodedata.\n")
    w(" * Do not edit; rerun tools/hf_tokenizer_fixtures.sh. */\n")
    w('#include "zoo/text/tokenizer_internal.h"\n\n')
    w('const char bertc_uc_unicode_version[] = "tokenizers 0.23 BertNormalizer";\n\n')
    w("const UcClassRun bertc_uc_class[] = {\n")
    write_rows(w, [f"{{0x{cp:X},{f}}}" for cp, f in runs])
    w(f"const int bertc_uc_class_n = {len(runs)};\n\n")
    w("const UcLowerRun bertc_uc_lower[] = {\n")
    write_rows(w, [f"{{0x{a:X},0x{b:X},{s},{d}}}" for a, b, s, d in lows])
    w(f"const int bertc_uc_lower_n = {len(lows)};\n\n")
    w("const UcMulti bertc_uc_lower_multi[] = {\n")
    write_rows(w, [multi_row(cp, m) for cp, m in multi])
    w(f"const int bertc_uc_lower_multi_n = {len(multi)};\n\n")
    w("const UcCccRun bertc_uc_ccc[] = {\n")
    write_rows(w, [f"{{0x{a:X},0x{b:X},{c}}}" for a, b, c in cccs])
    w(f"const int bertc_uc_ccc_n = {len(cccs)};\n\n")
    w("const UcMulti bertc_uc_decomp[] = {\n")
    write_rows(w, [multi_row(cp, d) for cp, d in decomp])
    w(f"const int bertc_uc_decomp_n = {len(decomp)};\n")


def multi_row(cp, seq):
    return "{0x%X,%d,{%s}}" % (cp, len(seq), ",".join(f"0x{x:X}" for x in seq))


def write_rows(w, rows, width=96):
    line = " "
    for r in rows:
        if len(line) + len(r) + 1 > width:
            w(line + "\n")
            line = " "
        line += r + ","
    w(line + "\n};\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_unicode_tables.py PROBE.jsonl (from tools/hf_unicode_probe.js)")
    emit(read_probe(sys.argv[1]), sys.stdout)
