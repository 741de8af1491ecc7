#!/usr/bin/python3
"""An independent Python implementation of Hugging Face BertTokenizerFast
(tokenizers' BertNormalizer + BertPreTokenizer + WordPiece + BertProcessing,
lowercase=True; with --cased lowercase=False), written from the algorithm's
description (docs/tokenizer.md) without importing transformers or tokenizers.
It is a cross-check, not the authority: the expected outputs the C tokenizer
is tested against are written by Hugging Face's own code
(tools/hf_tokenizer_fixtures.sh), and this script checks that it agrees:

    /usr/bin/python3 tools/tokenizer_ref.py --check test/data/tokenizer/hf_uncased.json
    /usr/bin/python3 tools/tokenizer_ref.py --cased --check test/data/tokenizer/hf_cased.json
    /usr/bin/python3 tools/tokenizer_ref.py --inputs [--cased] > inputs.json

--inputs prints the texts of its cases (hand-written and 100 random ones from
a fixed seed) for tools/hf_tokenizer_fixtures.js. Its character classes come
from Python's unicodedata (Unicode 14 for Python 3.11), while tokenizers takes
them from crates of older and newer Unicode versions (zoo/text/unicode_tables.c is
generated from tokenizers itself), so the two may disagree on characters whose
category changed between versions; --check lists every disagreement.

Every character carries the span of the ORIGINAL code point it came from, as
tokenizers' NormalizedString alignments: a removed character (control,
format, private use) or a stripped combining mark leaves no trace, and a
token spans from its first character's start to its last character's end;
special tokens added by the encoder get (0, 0).
"""
import json
import random
import sys
import unicodedata

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_WORD = 100


def is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch):
    """clean_text's is_control: Cc, Cf, Co, Cs; unassigned (Cn) is kept."""
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


def is_punct(ch):
    o = ord(ch)
    ascii_punct = 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126
    return ascii_punct or unicodedata.category(ch)[0] == "P"


def is_cjk(ch):
    o = ord(ch)
    blocks = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
    return any(a <= o <= b for a, b in blocks)


class Span:
    """A normalised character and the original code points [lo, hi) it covers."""

    def __init__(self, ch, lo, hi):
        self.ch, self.lo, self.hi = ch, lo, hi


def split_specials(text):
    """[(is_special, start, piece)] in text order."""
    out, i, chunk = [], 0, 0
    while i < len(text):
        hit = next((s for s in SPECIAL if text.startswith(s, i)), None)
        if hit:
            out.append((False, chunk, text[chunk:i]))
            out.append((True, i, hit))
            i += len(hit)
            chunk = i
        else:
            i += 1
    out.append((False, chunk, text[chunk:]))
    return out


def raw_words(chunk, base):
    """Cleaning, CJK isolation and whitespace splitting: lists of Spans."""
    words, cur = [], []
    for k, ch in enumerate(chunk):
        pos = base + k
        if ch in "\x00\ufffd" or is_control(ch):
            continue
        if is_whitespace(ch) or ch.isspace() or is_cjk(ch):
            if cur:
                words.append(cur)
            cur = []
            if is_cjk(ch):
                words.append([Span(ch, pos, pos + 1)])
            continue
        cur.append(Span(ch, pos, pos + 1))
    if cur:
        words.append(cur)
    return words


def lower_word(word):
    """Lowercase one character at a time (Rust char::to_lowercase), so a
    capital sigma never becomes the final sigma that str.lower() of a whole
    word would give; extra characters share their source's span."""
    return [Span(c, s.lo, s.hi) for s in word for c in s.ch.lower()]


def strip_accents(word):
    """NFD of the word, then drop category Mn; each decomposed character keeps
    its source span, reordering moves characters but not spans, and a dropped
    mark leaves no trace."""
    expanded = []
    for s in word:
        for c in unicodedata.normalize("NFD", s.ch):
            expanded.append(Span(c, s.lo, s.hi))
    expanded = reorder(expanded)
    kept = [s for s in expanded if unicodedata.category(s.ch) != "Mn"]
    check = unicodedata.normalize("NFD", "".join(s.ch for s in word))
    assert "".join(s.ch for s in expanded) == check, "reorder disagrees with NFD"
    return kept


def reorder(spans):
    """Canonical ordering: stable sort of each run of non-zero combining class.
    The characters move, the spans stay at their positions (tokenizers gives
    the reordered characters the alignments of the places they land in)."""
    out, run = [], []
    for s in spans + [None]:
        if s is not None and unicodedata.combining(s.ch):
            run.append(s)
            continue
        chars = sorted((x.ch for x in run), key=unicodedata.combining)
        out += [Span(c, x.lo, x.hi) for c, x in zip(chars, run)]
        run = []
        if s is not None:
            out.append(s)
    return out


def split_punct(word):
    parts, cur = [], []
    for s in word:
        if is_punct(s.ch):
            if cur:
                parts.append(cur)
            parts.append([s])
            cur = []
        else:
            cur.append(s)
    if cur:
        parts.append(cur)
    return parts


def span_of(spans):
    """tokenizers' expand_alignments: first character's start, last's end."""
    return (spans[0].lo, spans[-1].hi)


PIECE_WORD, PIECE_CONT, PIECE_SPECIAL = "word", "cont", "special"   # what a piece is


def wordpiece(vocab, word):
    """[(id, (lo, hi), kind)] for one basic token: greedy longest match first."""
    chars = [s.ch for s in word]
    if len(chars) > MAX_WORD:
        return [(vocab["[UNK]"], span_of(word), PIECE_WORD)]
    out, start = [], 0
    while start < len(chars):
        for end in range(len(chars), start, -1):
            piece = ("##" if start else "") + "".join(chars[start:end])
            if piece in vocab:
                out.append((vocab[piece], span_of(word[start:end]), PIECE_CONT if start else PIECE_WORD))
                start = end
                break
        else:
            return [(vocab["[UNK]"], span_of(word), PIECE_WORD)]
    return out


def tokenize(vocab, text, lower=True):
    out = []
    for special, base, chunk in split_specials(text):
        if special:
            out.append((vocab[chunk], (base, base + len(chunk)), PIECE_SPECIAL))
            continue
        for word in raw_words(chunk, base):
            if lower:
                word = lower_word(strip_accents(word))
            for part in split_punct(word):
                out += wordpiece(vocab, part)
    return out


def encoded_of_pair(pieces, max_len):
    """What tokenizers 0.23 encodes of one text of a truncated pair: it stops
    after the first word that brings the count of pieces (special tokens
    included) to max_len; a special token never stops it."""
    in_word = False
    for i, (_, _, kind) in enumerate(pieces):
        if kind != PIECE_CONT:
            if in_word and i >= max_len:
                return pieces[:i]
            in_word = kind == PIECE_WORD
    return pieces


def truncate(a, b, max_len):
    """tokenizers' truncate_encodings, LongestFirst, room T = max_len - specials,
    on what encoded_of_pair keeps of each text of a pair."""
    room = max_len - (3 if b is not None else 2)
    if len(a) + (len(b) if b is not None else 0) <= room:
        return a, b
    if b is None:
        return a[:room], b
    a, b = encoded_of_pair(a, max_len), encoded_of_pair(b, max_len)
    n1, n2 = sorted((len(a), len(b)))
    n2 = n1 if n1 > room else max(n1, room - n1)
    if n1 + n2 > room:
        n1, n2 = room // 2, room // 2 + room % 2
    if len(a) > len(b):
        n1, n2 = n2, n1
    return a[:n1], b[:n2]


def encode(vocab, a_text, b_text=None, max_len=0, pad=False, lower=True):
    a = tokenize(vocab, a_text, lower)
    b = tokenize(vocab, b_text, lower) if b_text is not None else None
    if max_len:
        a, b = truncate(a, b, max_len)
    a = [(i, o) for i, o, _ in a]
    b = [(i, o) for i, o, _ in b] if b is not None else None
    cls, sep = (vocab["[CLS]"], (0, 0)), (vocab["[SEP]"], (0, 0))
    seq = [cls] + a + [sep]
    types = [0] * len(seq)
    if b is not None:
        seq += b + [sep]
        types += [1] * (len(b) + 1)
    mask = [1] * len(seq)
    while pad and len(seq) < max_len:
        seq.append((vocab["[PAD]"], (0, 0)))
        types.append(0)
        mask.append(0)
    return {"ids": [i for i, _ in seq], "types": types, "mask": mask,
            "offsets": [list(o) for _, o in seq]}


LONG = "a" * 101
CASES = [
    ("hello", None, 0, False),
    ("Hello, World!", None, 0, False),
    ("Héllo wörld, ça va?", None, 0, False),
    ("unaffable", None, 0, False),
    ("The quick brown fox jumps over the lazy dog.", None, 0, False),
    ("我喜欢学习", None, 0, False),
    ("我喜欢learning中文!", None, 0, False),
    ("안녕하세요 세계", None, 0, False),
    ("こんにちは世界", None, 0, False),
    ("Wait...what?!?", None, 0, False),
    ("((a)) [b] {c} <d> \"e\" 'f'", None, 0, False),
    ("I ❤️ emoji 😀👍🏽!", None, 0, False),
    (LONG, None, 0, False),
    (LONG[:100], None, 0, False),
    ("x " + LONG + " y", None, 0, False),
    ("3.14159 1,000,000 42nd 2023-12-31", None, 0, False),
    ("https://example.com/path?q=1&r=two#frag", None, 0, False),
    ("user@example.org", None, 0, False),
    ("MiXeD CaSe WoRdS", None, 0, False),
    ("tabs\tand\nnewlines\r\nhere", None, 0, False),
    ("ctrl\x00chars\x07in\x1bside\u200b", None, 0, False),
    ("", None, 0, False),
    ("   \t\n  ", None, 0, False),
    ("\u00a0nbsp\u3000ideographic\u2003em", None, 0, False),
    ("line\u2028separator\u2029paragraph", None, 0, False),
    ("naïve café résumé coöperate", None, 0, False),
    ("e\u0301 combining a\u0308\u0301 marks \u0301lead", None, 0, False),
    ("ΟΔΥΣΣΕΥΣ Σίσυφος ΣΑ.Σ", None, 0, False),
    ("İstanbul ŞIŞLI Ǆemal ǅ", None, 0, False),
    ("Straße ﬁne ﬂow ÅNGSTRÖM Å", None, 0, False),
    ("Москва Привет мир", None, 0, False),
    ("Ελληνικά και עברית ועוד العربية", None, 0, False),
    ("हिन्दी भाषा", None, 0, False),
    ("¿Qué tal? ¡Muy bien! «quotes» „low“", None, 0, False),
    ("em—dash en–dash ellipsis… bullet•", None, 0, False),
    ("$100 + 50% = €1.5 © ® ™ §", None, 0, False),
    ("a[MASK]b [CLS] [mask] [SEP][UNK]", None, 0, False),
    ("\ufffdreplacement\ufffd", None, 0, False),
    ("胡说八道 and 鸡 ﬀ", None, 0, False),
    ("CJK compat 豈 更", None, 0, False),
    ("Who wrote it?", "Héllo wörld", 16, True),
    ("A short question?", "A much longer context that goes on and on about nothing at all.",
     12, False),
    ("one two three four five six seven", "uno dos", 8, True),
    ("alpha beta", "gamma delta", 5, False),
    ("alpha beta gamma", "delta epsilon zeta", 7, True),
    ("the cat sat on the mat", None, 5, True),
    ("hello world", "", 0, False),
    ("", "", 4, True),
    ("word " * 20, None, 10, False),
    ("Transformers!!! are... AMAZING??", "yes", 0, False),
    ("nel\x85inside\x1cword \u0308\u302e\u03b8 \U0001d165\U0001d16d\U0001d16d\U0001d165", None, 0, False),
]

# Run only with --cased (on test/data/tokenizer/cased-vocab.txt): case and
# accents that the uncased pipeline would erase.
CASED_CASES = [
    ("Héllo World", None, 0, False),
    ("Hello hello HELLO", None, 0, False),
    ("Héllo, wörld! ça va?", "The World", 0, False),
    ("MiXeD CaSe ÉCOLE École école", None, 0, False),
    ("He\u0301llo e\u0301 Ä A\u0308", None, 0, False),
    ("ΣΑ σα Straße STRASSE ﬁ", None, 0, False),
    ("İ I ı i", None, 0, False),
    ("[MASK] [mask] Hello[SEP]World", None, 0, False),
    ("我Hello世界World", None, 0, False),
    ("Hello\x00Wor\u200bld\tH\u00e9llo", None, 0, False),
    ("Hello World Hello", "World Héllo hello", 6, True),
]


def random_cases(lines, n, seed=2024):
    """n short texts mixing vocab words, single vocab characters, marks,
    sigmas, controls and any code point at all, from a fixed seed."""
    rnd = random.Random(seed)
    words = [t.replace("##", "") for t in lines[1000:8000]]
    chars = [t for t in lines if len(t) == 1]
    tricky = list(" \t\n.,!?'[]#-\x00\x85\ufffd\u00a0\u2028\u0301\u0308\u302e\u03a3\u0130"
                  "ÅßﬁΑΣΟ한글我豈")
    texts = []
    for _ in range(n):
        out = []
        for _ in range(rnd.randrange(1, 16)):
            r = rnd.random()
            if r < 0.1:
                cp = rnd.randrange(0x110000)
                out.append(chr(cp) if not 0xD800 <= cp < 0xE000 else "?")
            elif r < 0.4:
                out.append(rnd.choice(tricky))
            elif r < 0.6:
                out.append(rnd.choice(chars))
            else:
                out.append(rnd.choice(words).capitalize() + rnd.choice(["", " "]))
        texts.append("".join(out))
    return [(t, None, 0, False) for t in texts]


def read_vocab(path):
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [x[:-1] if x.endswith("\r") else x for x in lines]
    vocab = {tok: i for i, tok in enumerate(lines)}
    assert len(vocab) == len(lines)
    return lines, vocab


def check(path, lower):
    """Compares this reference with a fixture written by HF; returns the
    number of cases that disagree, each listed on stderr."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["do_lower_case"] == lower, f"{path} is for do_lower_case {doc['do_lower_case']}"
    lines, vocab = read_vocab(doc["vocab"])
    bad = 0
    for c in doc["cases"]:
        got = encode(vocab, c["a"], c.get("b"), c["max_len"], c["pad"], lower)
        diff = [k for k in ("ids", "types", "mask", "offsets") if got[k] != c[k]]
        if diff:
            bad += 1
            print(f"{c['name']} {c['a']!r} {c.get('b')!r}: {', '.join(diff)} differ: "
                  f"HF {c['tokens']} {c['offsets']}, here "
                  f"{[lines[i] for i in got['ids']]} {got['offsets']}", file=sys.stderr)
    print(f"{path}: {len(doc['cases']) - bad} of {len(doc['cases'])} cases agree")
    return bad


def main():
    args = sys.argv[1:]
    lower = "--cased" not in args
    args = [a for a in args if a != "--cased"]
    if args[:1] == ["--check"] and len(args) == 2:
        sys.exit(1 if check(args[1], lower) else 0)
    if args[:1] == ["--inputs"]:
        path = "data/bert-base-uncased-vocab.txt"
        lines, _ = read_vocab(path)
        cases_in = CASES + random_cases(lines, 100) if lower else CASES + CASED_CASES
        json.dump([list(c) for c in cases_in], sys.stdout, ensure_ascii=True)
        sys.stdout.write("\n")
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
