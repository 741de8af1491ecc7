#!/usr/bin/env node
// tools/hf_tokenizer_fixtures.js — the expected tokenizer outputs, written by
// Hugging Face's own tokenizers (the npm package: the Rust code behind
// BertTokenizerFast, the tokenizer AutoTokenizer gives for bert-base-uncased).
//
//     NODE_PATH=<dir>/node_modules node tools/hf_tokenizer_fixtures.js \
//         VOCAB LOWER INPUTS.json > test/data/tokenizer/hf_uncased.json
//
// (tools/hf_tokenizer_fixtures.sh installs the package and runs this.)
// LOWER is "uncased" (BertNormalizer lowercase=true, strip_accents following
// it: bert-base-uncased's tokenizer.json) or "cased" (lowercase=false:
// bert-base-cased). INPUTS.json is [[a, b|null, max_len, pad], ...] (from
// tools/tokenizer_ref.py --inputs); the corpus below is added to it.
//
// Offsets: the Node binding reports code points of the text (checked below
// on astral characters, where bytes, UTF-16 units and code points differ),
// which is what bertc's Encoding.start/end count.
'use strict';
const t = require('tokenizers');
const fs = require('fs');

// bert-base-uncased's tokenizer.json, with the vocab of VOCAB.
function build(vocabPath, lower) {
    const tokens = fs.readFileSync(vocabPath, 'utf8').split(/\r?\n/);
    if (tokens[tokens.length - 1] === '')
        tokens.pop();
    const vocab = {};
    tokens.forEach((w, i) => { vocab[w] = i; });
    const added = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map(c => ({
        id: vocab[c], content: c, single_word: false, lstrip: false, rstrip: false,
        normalized: false, special: true}));
    const special = (id, type) => ({SpecialToken: {id, type_id: type}});
    const seq = (id, type) => ({Sequence: {id, type_id: type}});
    const json = {
        version: '1.0', truncation: null, padding: null, added_tokens: added,
        normalizer: {type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true,
                     strip_accents: null, lowercase: lower},
        pre_tokenizer: {type: 'BertPreTokenizer'},
        post_processor: {
            type: 'TemplateProcessing',
            single: [special('[CLS]', 0), seq('A', 0), special('[SEP]', 0)],
            pair: [special('[CLS]', 0), seq('A', 0), special('[SEP]', 0), seq('B', 1),
                   special('[SEP]', 1)],
            special_tokens: {
                '[CLS]': {id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]']},
                '[SEP]': {id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]']}}},
        decoder: {type: 'WordPiece', prefix: '##', cleanup: true},
        model: {type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##',
                max_input_chars_per_word: 100, vocab}};
    return {tk: t.Tokenizer.fromString(JSON.stringify(json)), pad: vocab['[PAD]']};
}

const A100 = 'a'.repeat(100);
// [a, b, max_len, pad]: one entry per class of input (see docs/tokenizer.md).
const CORPUS = [
    // removed characters and stripped marks next to a token (issue 13)
    ['e\u0301'], ['e\u0301 x'], ['e\u0301\u0301\u0323'], ['e\u200b'], ['e\u200b x'],
    ['\u200be'], ['a\u00adb'], ['ab\u0301c'], ['x\u0301\u200b\u0302y'], ['\u0301\u0301'],
    ['cafe\u0301 nai\u0308ve re\u0301sume\u0301'], ['café naïve résumé'], ['E\u0301COLE École'],
    ['a\u0000b\u0007c\u001bd\u007fe'], ['a\u0080b\u0085c\u009fd'], ['tab\tnl\ncr\rend'],
    ['\u000b\u000c\u001c\u001d\u001e\u001f'], ['x\u001cy x\u000by'],
    ['zw\u200bsp zw\u200cnj zw\u200dj lrm\u200e rlm\u200f'],
    ['wj\u2060x \u2061\u2062\u2063\u2064 bom\ufeffx \ufeff'],
    ['ann\ufff9a\ufffab\ufffbc'], ['pua\ue000x \uf8ff \u{f0000} \u{10fffd}'],
    ['unassigned \u0378 \u{e0000} \u{2fffe} x\u0378y'], ['tag\u{e0001}\u{e0041}\u{e007f}x'],
    ['vs a\ufe0f b\ufe00 \u{e0100}'], ['music \u{1d173}\u{1d17a} x\u{1d173}'],
    ['sh\u00ady soft\u00ad'], ['\u180e mongolian\u180ex'], ['\u061c arabic\u061cmark'],
    ['replacement \ufffd x\ufffdy'], ['a\u0000'], ['\u0000'], ['\u200b\u200b'],
    ['ends with marks e\u0301\u0302'], ['\u0301lead mark'], ['\u0345\u0334 \u0334e'],
    ['a\u{1d16d}\u{1d165}\u0301 x\u0301\u{1d165}y'], ['\u0308\u302e\u03b8'],
    // whitespace classes
    [''], [' '], ['   \t\n  '], ['\u00a0nbsp\u3000ideo\u2003em\u2009thin\u202fnarrow\u205fmath'],
    ['line\u2028sep\u2029par'], ['ogham\u1680x'], ['  lead and trail  '],
    // case, lowercasing that changes length, sigma, Turkish
    ['İstanbul İ i̇ ı I'], ['ẞ ß STRASSE Straße'], ['ΟΔΥΣΣΕΥΣ Σίσυφος ΣΑ.Σ σς'],
    ['Ǆemal ǅ ǆ'], ['ﬁne ﬂow ﬀ'], ['ÅNGSTRÖM Å Å K Ω'], ['ᾼ ᾳ ῼ ΐ'], ['Ⅻ ⅻ Ⓐ ⓐ'],
    ['𐐀𐐨 Deseret', null], ['Ꞔ ꞔ Ɥ ɥ Ᲊ'], ['ǰ ŉ ẖ'],
    // scripts and CJK
    ['我喜欢学习'], ['我喜欢learning中文!'], ['ah博推zz'], ['的人有'], ['野口里佳 Noguchi Rika'],
    ['CJK compat 豈 更 \u{2f800}'], ['ext \u{20000}\u{2a700}\u{2b740}\u{2b820}\u{2b920}\u{30000}'],
    ['한국어 텍스트 조각'], ['こんにちは世界 ガギグ'], ['漢字とひらがなとカタカナが混ざった文章です。'],
    ['Москва Привет'], ['Ελληνικά עברית العربية'], ['हिन्दी भाषा'], ['ไทย ภาษา'],
    // emoji
    ['I ❤️ emoji 😀👍🏽!'], ['👨‍👩‍👧‍👦 family 🇫🇷 flag'], ['a😀b é'], ['😀😀 e\u0301'],
    // punctuation, numbers, URLs
    ['Hello, world!! How\'s it going? (fine; thanks...)'], ['Wait...what?!?'],
    ['((a)) [b] {c} <d> "e" \'f\''], ['¿Qué tal? ¡Muy bien! «quotes» „low“'],
    ['em—dash en–dash ellipsis… bullet•'], ['$100 + 50% = €1.5 © ® ™ § ¶'],
    ['1234567890, 3.14159, 1,000,000th'], ['3333333'], ['ied 4 ½ months'],
    ['https://example.com/path?q=1&r=two#frag user@example.org'],
    ['a\n\'ll !!to?\'d of, can\'t.'], ['∑ᵢ xᵢ² ≤ ∫₀^∞ e⁻ˣ dx ≈ 1'], ['፡ ፣ ᙭ ᠀ 𑇉'],
    // special tokens written in the text
    ['hello [CLS] world[SEP]x [cls]'], ['a[MASK]b [UNK] [PAD]'], ['[[CLS]] [CLS [ CLS]'],
    ['[MASK]'], ['[SEP][SEP]'], ['é[MASK]\u0301'], ['x\u200b[CLS]\u200by'],
    // long words (max_input_chars_per_word = 100 normalised characters)
    [A100], [A100 + 'a'], ['x ' + A100 + 'a y'], [A100 + '\u200b\u200b'],
    ['a'.repeat(99) + 'e\u0301'], [A100 + '\u0301'], ['a'.repeat(98) + 'İ'],
    ['a'.repeat(99) + 'ﬁ'], ['a'.repeat(60) + '.' + 'a'.repeat(60)],
    ['Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen'],
    // pairs, truncation (fast LongestFirst), padding
    ['My name is John', 'pair'], ['hello world', ''], ['', ''], ['', 'only b'],
    ['Who wrote it?', 'Héllo wörld', 16, true],
];
const A = 'a b c d e f g', B = 'h i j';
for (const ml of [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
    CORPUS.push([A, B, ml], [B, A, ml], ['a b c d', 'e f g h', ml, true],
                ['a b c d e', 'f g h i', ml]);
for (const ml of [2, 3, 4, 6, 8])
    CORPUS.push([A, null, ml], ['e\u0301 x\u200b', null, ml, true]);
// A text of a pair is first cut after the word that reaches max_len pieces
// (special tokens count, but only words stop it): multi-piece words,
// special tokens before and after the cut.
for (const ml of [4, 5, 6, 8])
    CORPUS.push(['unaffable unaffable unaffable', 'a a a a a a a a', ml],
                ['agenciessmiling2ndgood', 'a a a a a a a a a a a a a a a a', ml],
                ['a a a [CLS] a a a a a a', 'b b b b b b', ml],
                ['a [CLS] a a a a a a', 'b b b b b b', ml],
                ['[UNK] [UNK] [UNK] [UNK] [UNK]', 'a a a a a a', ml],
                ['a a a a [UNK] [UNK]', 'a a a a a', ml],
                ['records [SEP]!dranice1982 posted', 'x, recognized y z', ml]);
CORPUS.push(['A short question?', 'A much longer context that goes on and on.', 12],
            ['one two three four five six seven', 'uno dos', 8, true],
            ['unaffable e\u0301\u200b', 'x\u200b y', 6, true]);

async function encode(h, a, b, maxLen, pad) {
    h.tk.disableTruncation();
    h.tk.disablePadding();
    if (maxLen > 0)
        h.tk.setTruncation(maxLen);
    if (maxLen > 0 && pad)
        h.tk.setPadding({maxLength: maxLen, padId: h.pad, padToken: '[PAD]', padTypeId: 0});
    const e = await h.tk.encode(a, b === null ? null : b);
    return {ids: e.getIds(), types: e.getTypeIds(), mask: e.getAttentionMask(),
            offsets: e.getOffsets(), tokens: e.getTokens()};
}

async function main() {
    const [vocabPath, mode, inputsPath] = process.argv.slice(2);
    if (!inputsPath || (mode !== 'uncased' && mode !== 'cased'))
        throw new Error('usage: hf_tokenizer_fixtures.js VOCAB uncased|cased INPUTS.json');
    const h = build(vocabPath, mode === 'uncased');
    // Offsets count code points: '😀' is 1 code point, 2 UTF-16 units, 4 bytes.
    const probe = await encode(h, '😀😀 x', null, 0, false);
    if (JSON.stringify(probe.offsets[2]) !== '[3,4]')
        throw new Error('offsets are not code points: ' + JSON.stringify(probe.offsets));
    const inputs = JSON.parse(fs.readFileSync(inputsPath, 'utf8')).concat(CORPUS);
    const cases = [];
    for (const [a, b = null, maxLen = 0, pad = false] of inputs) {
        const c = {name: 'case' + String(cases.length).padStart(3, '0'), a};
        if (b !== null)
            c.b = b;
        Object.assign(c, {max_len: maxLen, pad}, await encode(h, a, b, maxLen, pad));
        cases.push(c);
    }
    const version = require('tokenizers/package.json').version;
    const doc = {generator: 'tools/hf_tokenizer_fixtures.js', tokenizers: version,
                 vocab: vocabPath, do_lower_case: mode === 'uncased', cases};
    // ASCII only, one case per line: diffs stay readable.
    const ascii = s => s.replace(/[\u007f-\uffff]/g,
                                 ch => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0'));
    const body = cases.map(c => ' ' + ascii(JSON.stringify(c))).join(',\n');
    process.stdout.write(ascii(JSON.stringify(Object.assign({}, doc, {cases: []})))
                         .replace('"cases":[]}', '"cases":[\n') + body + '\n]}\n');
}

module.exports = {build};
if (require.main === module)
    main().catch(e => { console.error('hf_tokenizer_fixtures.js: ' + e.message); process.exit(1); });
