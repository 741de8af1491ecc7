#!/usr/bin/env node
// tools/hf_unicode_probe.js — asks Hugging Face's own tokenizers (the npm
// package, tokenizers 0.23, the Rust code behind BertTokenizerFast) what
// its BertNormalizer and BertPreTokenizer do with every code point, and
// writes the answers as JSON lines to stdout for tools/gen_unicode_tables.py.
//
//     NODE_PATH=<dir>/node_modules node tools/hf_unicode_probe.js > probe.jsonl
//
// (tools/hf_tokenizer_fixtures.sh installs the package and runs this.)
// Each line is {"cp": N, ...} for a code point with anything to say:
//   rm   clean_text removes it (its is_control: Cc Cf Co of the Unicode
//        version of the unicode_categories crate; U+0000, U+FFFD)
//   sp   clean_text maps it to ' ' (and BertPreTokenizer splits there)
//   cjk  handle_chinese_chars puts spaces around it
//   nfd  its NFD (unicode-normalization-alignments), when not itself
//   mn   strip_accents drops it (is_mark_nonspacing, that crate's Unicode)
//   lo   lowercase (Rust char::to_lowercase), when not itself
//   pu   BertPreTokenizer isolates it (punctuation)
//   nz   NFD reorders it: its canonical combining class is not 0
//   full the whole uncased BertNormalizer of it alone, when not itself
'use strict';
const t = require('tokenizers');

const only = o => t.bertNormalizer(Object.assign(
    {cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: false}, o));
const clean = only({cleanText: true}), cjk = only({handleChineseChars: true});
const strip = only({stripAccents: true}), lower = only({lowercase: true});
const full = t.bertNormalizer({cleanText: true, handleChineseChars: true, lowercase: true});
const nfd = t.nfdNormalizer();
const pre = t.bertPreTokenizer();
const cps = s => Array.from(s, c => c.codePointAt(0));

// NFD sorts a run of marks by combining class: X is a non-starter when it
// moves past U+0345 (class 240) or U+0334 (class 1) moves past it.
function nonStarter(s) {
    return nfd.normalizeString('a\u0345' + s) !== 'a\u0345' + s ||
           nfd.normalizeString('a' + s + '\u0334') !== 'a' + s + '\u0334';
}

const lines = [];
for (let cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xD800 && cp < 0xE000)
        continue;
    const s = String.fromCodePoint(cp), r = {cp};
    const c = clean.normalizeString(s);
    if (c === '')
        r.rm = 1;
    else if (c === ' ' && s !== ' ')
        r.sp = 1;
    if (cjk.normalizeString(s) !== s)
        r.cjk = 1;
    const d = nfd.normalizeString(s);
    if (d !== s)
        r.nfd = cps(d);
    else if (strip.normalizeString(s) === '')
        r.mn = 1;
    const l = lower.normalizeString(s);
    if (l !== s)
        r.lo = cps(l);
    const p = pre.preTokenizeString('a' + s + 'a');
    if (p.length === 3)
        r.pu = 1;
    if (s === ' ' || p.length === 2)
        r.ws = 1;
    if (d === s && nonStarter(s))
        r.nz = 1;
    const f = full.normalizeString(s);
    if (f !== s)
        r.full = cps(f);
    if (Object.keys(r).length > 1)
        lines.push(JSON.stringify(r));
}
process.stdout.write(lines.join('\n') + '\n');
