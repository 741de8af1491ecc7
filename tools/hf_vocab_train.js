// tools/hf_vocab_train.js OUT FILE... — Hugging Face's WordPiece trainer (the
// npm `tokenizers` package) on the files, its vocabulary written to OUT in id
// order, one token a line (not stdout: train() prints progress there). The Node binding's train() takes no trainer, so
// this is WordPieceTrainer's defaults: vocab_size 30000, min_frequency 0,
// no special tokens, no limit on the alphabet, "##" continuation; with
// BertNormalizer (lowercase) and BertPreTokenizer, as BertWordPieceTokenizer.
// Used by tools/hf_vocab_compare.sh.
const tk = require('tokenizers');
const out = process.argv[2], files = process.argv.slice(3);
const tok = new tk.Tokenizer(tk.WordPiece.empty());
tok.setNormalizer(tk.bertNormalizer({ lowercase: true, stripAccents: true, cleanText: true,
                                      handleChineseChars: true }));
tok.setPreTokenizer(tk.bertPreTokenizer());
tok.train(files);
const vocab = tok.getVocab(true);
const byId = [];
for (const [t, id] of Object.entries(vocab))
    byId[id] = t;
require('fs').writeFileSync(out, byId.join('\n') + '\n');
