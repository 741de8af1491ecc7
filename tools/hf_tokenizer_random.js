#!/usr/bin/env node
// tools/hf_tokenizer_random.js — random texts and pairs through Hugging
// Face's own tokenizers (npm) and through bertc (tools/hf_tokenizer_random.c),
// compared in ids, types and offsets. tools/hf_tokenizer_fixtures.sh
// --random N runs it; by hand:
//
//     node tools/hf_tokenizer_random.js write VOCAB uncased|cased N SEED DIR
//     hf_tokenizer_random VOCAB uncased|cased DIR/cases.bin > DIR/bertc.jsonl
//     node tools/hf_tokenizer_random.js compare DIR
//
// The texts mix vocabulary words (some upper-cased), code points of every
// plane, the characters each class of docs/tokenizer.md is about (marks,
// controls, format and private-use characters, CJK, emoji, İ, ẞ ...),
// special tokens written in the text and long words; a third of the cases
// are truncated at a random max_len, half of those padded.
'use strict';
const fs = require('fs');
const path = require('path');
const {build} = require('./hf_tokenizer_fixtures.js');

const POOL = Array.from(' \t\n.,!?\'[]#-\u0000\u0085\ufffd\u00a0\u2028\u0301\u0308\u0323' +
    '\u0345\u302e\u03a3\u0130ÅßﬁΑΣΟ한글我豈\u200b\u200d\u00ad\ufeff\ue000\u0378\u{1d165}' +
    '\u{1d16d}\u{e0001}\u0890\u07fd😀👍🏽\u{1f970}İẞǅ');
const SPECIALS = ['[CLS]', '[SEP]', '[MASK]', '[UNK]', '[PAD]', '[cls]'];

function rng(seed) {
    let s = seed >>> 0 || 1;
    return n => {                 // xorshift32, then an integer in [0, n)
        s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
        return s % n;
    };
}

function randomText(r, words) {
    let out = '';
    for (let k = r(14); k > 0; k--) {
        const x = r(100);
        if (x < 12) {
            let cp;
            do { cp = r(0x110000); } while (cp >= 0xD800 && cp < 0xE000);
            out += String.fromCodePoint(cp);
        } else if (x < 16) {
            const cp = r(0x3000);
            out += String.fromCodePoint(cp >= 0xD800 && cp < 0xE000 ? 65 : cp);
        } else if (x < 45) {
            out += POOL[r(POOL.length)];
        } else if (x < 50) {
            out += SPECIALS[r(SPECIALS.length)];
        } else if (x < 52) {
            out += 'a'.repeat(95 + r(10));
        } else {
            const w = words[r(words.length)].replace('##', '');
            out += (r(3) === 0 ? w.toUpperCase() : w) + (r(2) ? ' ' : '');
        }
    }
    return out;
}

function int32(v) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    return b;
}

async function write(vocabPath, mode, n, seed, dir) {
    const h = build(vocabPath, mode === 'uncased');
    const r = rng(seed);
    let words = fs.readFileSync(vocabPath, 'utf8').split(/\r?\n/).filter(w => w);
    words = words.length > 9000 ? words.slice(1000, 9000) : words.concat(['Héllo', 'ÉCOLE']);
    const bin = [], expected = [];
    for (let i = 0; i < n; i++) {
        const a = randomText(r, words), b = r(2) ? randomText(r, words) : null;
        const maxLen = r(3) ? 0 : 3 + r(20), pad = maxLen > 0 && r(2) === 1;
        h.tk.disableTruncation();
        h.tk.disablePadding();
        if (maxLen > 0)
            h.tk.setTruncation(maxLen);
        if (pad)
            h.tk.setPadding({maxLength: maxLen, padId: h.pad, padToken: '[PAD]'});
        const e = await h.tk.encode(a, b);
        const A = Buffer.from(a, 'utf8');
        bin.push(int32(A.length), A);
        if (b === null) {
            bin.push(int32(-1));
        } else {
            const B = Buffer.from(b, 'utf8');
            bin.push(int32(B.length), B);
        }
        bin.push(int32(maxLen), Buffer.from([pad ? 1 : 0]));
        expected.push(JSON.stringify({a, b, max_len: maxLen, pad, ids: e.getIds(),
                                      types: e.getTypeIds(), offsets: e.getOffsets(),
                                      tokens: e.getTokens()}));
    }
    fs.writeFileSync(path.join(dir, 'cases.bin'), Buffer.concat(bin));
    fs.writeFileSync(path.join(dir, 'hf.jsonl'), expected.join('\n') + '\n');
}

function compare(dir) {
    const lines = f => fs.readFileSync(path.join(dir, f), 'utf8').trim().split('\n')
        .map(l => JSON.parse(l));
    const hf = lines('hf.jsonl'), bertc = lines('bertc.jsonl');
    let bad = 0;
    hf.forEach((want, i) => {
        const got = bertc[i] || {error: 'missing'};
        const same = k => JSON.stringify(got[k]) === JSON.stringify(want[k]);
        if (got.error || !same('ids') || !same('types') || !same('offsets')) {
            if (++bad <= 10)
                console.error(JSON.stringify({a: want.a, b: want.b, max_len: want.max_len,
                                              hf: [want.tokens, want.offsets], bertc: got}));
        }
    });
    console.log(`${dir}: ${hf.length - bad} of ${hf.length} random cases agree`);
    return bad === 0;
}

async function main() {
    const [cmd, ...args] = process.argv.slice(2);
    if (cmd === 'write' && args.length === 5)
        return write(args[0], args[1], +args[2], +args[3], args[4]);
    if (cmd === 'compare' && args.length === 1)
        process.exit(compare(args[0]) ? 0 : 1);
    throw new Error('usage: hf_tokenizer_random.js write VOCAB MODE N SEED DIR | compare DIR');
}

main().catch(e => { console.error('hf_tokenizer_random.js: ' + e.message); process.exit(1); });
