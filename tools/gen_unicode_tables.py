#!/usr/bin/python3
"""Generate zoo/unicode_tables.c: the Unicode facts the WordPiece tokenizer
(SPEC §7, Hugging Face BertTokenizer) needs, taken from this Python's
`unicodedata` and `str.lower()` so the C tokenizer agrees with the Python one.

    /usr/bin/python3 tools/gen_unicode_tables.py > zoo/unicode_tables.c

Tables (all sorted, searched by bisection in zoo/tokenizer_text.c):
  uc_class     run-length code-point classes: each entry (first, flags) holds
               for first .. next entry's first - 1. Flags are UC_* below.
  uc_lower     str.lower() of ONE code point (HF lowercases character by
               character, see zoo/zoo.h) where it is ONE code point, as
               runs (first, last, stride, delta): cp in [first, last] with
               (cp - first) % stride == 0 lowers to cp + delta.
  uc_lower_multi  the code points that lower to more than one (U+0130).
  uc_ccc       canonical combining class runs (first, last, ccc), ccc != 0.
  uc_decomp    full canonical decomposition (NFD of one code point) for every
               code point that has one, Hangul syllables excepted (they are
               decomposed by the algorithm of Unicode §3.12 in C).
"""
import sys
import unicodedata

MAX_CP = 0x110000
SURROGATES = range(0xD800, 0xE000)

# Flag bits; zoo/tokenizer_internal.h defines the same names and values.
UC_CONTROL = 1     # HF _is_control: category C* except \t \n \r
UC_SPACE = 2       # HF _is_whitespace: ' ', \t, \n, \r or category Zs
UC_PUNCT = 4       # HF _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126 or P*
UC_MN = 8          # category Mn (dropped by HF _run_strip_accents)
UC_PYSPACE = 16    # str.isspace(): what str.split() (whitespace_tokenize) splits on
UC_CJK = 32        # HF BasicTokenizer._is_chinese_char

CJK_RANGES = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]

def is_ascii_punct(cp):
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126


def flags_of(cp):
    c = chr(cp)
    cat = unicodedata.category(c)
    f = 0
    if cat.startswith("C") and c not in "\t\n\r":
        f |= UC_CONTROL
    if c in " \t\n\r" or cat == "Zs":
        f |= UC_SPACE
    if is_ascii_punct(cp) or cat.startswith("P"):
        f |= UC_PUNCT
    if cat == "Mn":
        f |= UC_MN
    if c.isspace():
        f |= UC_PYSPACE
    if any(lo <= cp <= hi for lo, hi in CJK_RANGES):
        f |= UC_CJK
    return f


def class_runs():
    runs, prev = [], None
    for cp in range(MAX_CP):
        f = UC_CONTROL if cp in SURROGATES else flags_of(cp)
        if f != prev:
            runs.append((cp, f))
            prev = f
    return runs


def lower_runs():
    """(first, last, stride, delta) runs of single-code-point lowercasing,
    greedily extending a run while the stride and delta stay the same."""
    pairs, multi = [], []
    for cp in range(MAX_CP):
        if cp in SURROGATES:
            continue
        low = chr(cp).lower()
        if len(low) > 1:
            multi.append((cp, [ord(x) for x in low]))
        elif ord(low) != cp:
            pairs.append((cp, ord(low) - cp))
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


def ccc_runs():
    runs = []
    for cp in range(MAX_CP):
        ccc = unicodedata.combining(chr(cp))
        if ccc == 0:
            continue
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == ccc:
            runs[-1] = (runs[-1][0], cp, ccc)
        else:
            runs.append((cp, cp, ccc))
    return runs


def decompositions():
    out = []
    for cp in range(MAX_CP):
        if cp in SURROGATES or 0xAC00 <= cp <= 0xD7A3:
            continue
        nfd = unicodedata.normalize("NFD", chr(cp))
        if nfd != chr(cp):
            out.append((cp, [ord(x) for x in nfd]))
    return out


def check_assumptions(multi, decomp):
    """Facts zoo/tokenizer_text.c relies on; fail loudly if a new Unicode
    version breaks one."""
    assert all(len(d) <= 4 for _, d in decomp), "a decomposition longer than 4"
    assert all(len(m) <= 3 for _, m in multi), "a lowercase longer than 3"
    for cp, d in decomp + multi:
        if flags_of(cp) & (UC_SPACE | UC_CONTROL):
            continue            # _clean_text turned it into ' ' or removed it
        for x in d:
            f = flags_of(x)
            assert not f & (UC_PYSPACE | UC_CONTROL), f"U+{cp:04X} yields a space or control"
    # One raw character becomes at most UC_EXPAND_MAX normalised ones.
    assert max(len(unicodedata.normalize("NFD", chr(cp).lower()))
               for cp in range(MAX_CP) if cp not in SURROGATES) <= 4


def emit(out):
    runs = class_runs()
    lows, multi = lower_runs()
    cccs = ccc_runs()
    decomp = decompositions()
    check_assumptions(multi, decomp)
    w = out.write
    w("/* zoo/unicode_tables.c — GENERATED by tools/gen_unicode_tables.py from Python\n")
    w(f" * {sys.version.split()[0]}'s unicodedata (Unicode {unicodedata.unidata_version}) and\n")
    w(" * str.lower(). Do not edit; rerun the generator. */\n")
    w('#include "zoo/tokenizer_internal.h"\n\n')
    w(f'const char uc_unicode_version[] = "{unicodedata.unidata_version}";\n\n')
    w(f"const UcClassRun uc_class[] = {{\n")
    write_rows(w, [f"{{0x{cp:X},{f}}}" for cp, f in runs])
    w(f"const int uc_class_n = {len(runs)};\n\n")
    w("const UcLowerRun uc_lower[] = {\n")
    write_rows(w, [f"{{0x{a:X},0x{b:X},{s},{d}}}" for a, b, s, d in lows])
    w(f"const int uc_lower_n = {len(lows)};\n\n")
    w("const UcMulti uc_lower_multi[] = {\n")
    write_rows(w, [multi_row(cp, m) for cp, m in multi])
    w(f"const int uc_lower_multi_n = {len(multi)};\n\n")
    w("const UcCccRun uc_ccc[] = {\n")
    write_rows(w, [f"{{0x{a:X},0x{b:X},{c}}}" for a, b, c in cccs])
    w(f"const int uc_ccc_n = {len(cccs)};\n\n")
    w("const UcMulti uc_decomp[] = {\n")
    write_rows(w, [multi_row(cp, d) for cp, d in decomp])
    w(f"const int uc_decomp_n = {len(decomp)};\n")


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
    emit(sys.stdout)
