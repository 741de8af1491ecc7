#!/usr/bin/python3
"""tools/build_corpus.py - the plain-text pretraining corpus (run by tools/build_corpus.sh).

    python3 tools/build_corpus.py [OUT] [--fortunes DIR] [--jobs N]

Reads English prose that Debian packages install and the BSD fortunes, and
writes OUT (default build/corpus/corpus.txt; never committed):

  source       package          what becomes text
  man pages    manpages,        each page of the two packages rendered by groff
               manpages-dev     (-man -Tutf8, a line length wide enough that a
                                paragraph is one line) | col -bx
  WordNet      wordnet-base     every synset of data.{noun,verb,adj,adv}:
                                "lemma, lemma: gloss"
  Perl docs    perl-doc         every .pod, through Pod::Text (pod2text's
                                module) with verbatim (code) paragraphs dropped
  Python docs  python3-doc      the <p> paragraphs of the main body of every
                                HTML page (python3's html.parser), <pre> dropped
  fortunes     (../shared/data/fortunes; data/fortunes-COPYRIGHT)
                                every entry, whitespace folded

Format: one paragraph a line; a blank line ends a document (a man page, a
pod, an HTML page, a synset, a fortune), so a reader may take either lines
or blank-line-separated blocks as documents. Text is whitespace-folded (no
TAB, so `bertc finetune --task mlm` reads it as a TSV column once a `text`
header is put in front).

Clean-up: a paragraph that does not read as prose (fewer than 3 words, or
mostly symbols: code, tables) is dropped; paragraphs are de-duplicated over
the whole corpus (lowercased, whitespace-folded; the first kept); and every
paragraph equal to or containing a held-out text of data/topics.tsv (its last
20 %, the 229 texts `make demo` scores, split as tools/make_pretrain.py and
examples/topics.c do) is removed, so a model pretrained on the corpus has
never seen a text it is scored on.

Prints the size, the document and paragraph counts per source, and each
source's licence (from its Debian copyright file)."""
import argparse
import gzip
import html.parser
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

LICENCES = {
    "man pages": ("manpages, manpages-dev", "per page: mostly GPL-2+, BSD and the "
                  "man-pages 'verbatim' licence", "/usr/share/doc/manpages/copyright"),
    "WordNet": ("wordnet-base", "WordNet 3.0 licence (Princeton; BSD-style, attribution)",
                "/usr/share/doc/wordnet-base/copyright"),
    "Perl docs": ("perl-doc", "GPL-1+ or Artistic (Perl's own terms)",
                  "/usr/share/doc/perl-doc/copyright"),
    "Python docs": ("python3-doc", "PSF License 2 (the Python documentation)",
                    "/usr/share/doc/python3-doc/copyright"),
    "fortunes": ("fortune-mod databases", "BSD fortune(6) databases: BSD licence; "
                 "see data/fortunes-COPYRIGHT", os.path.join(ROOT, "data/fortunes-COPYRIGHT")),
}

WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def fold(text):
    return " ".join(text.split())


def prose(par):
    """A paragraph that reads as prose: 3+ words, and words (not symbols,
    numbers or code) make up most of it."""
    words = WORD.findall(par)
    if len(words) < 3:
        return False
    letters = sum(len(w) for w in words)
    code = sum(par.count(c) for c in "{}[];=<>#$\\|_*/")
    return letters >= 0.6 * len(par.replace(" ", "")) and code <= 0.05 * len(par)


def dpkg_files(package, pattern):
    out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"build_corpus: package {package} is not installed "
                 "(tools/build_corpus.sh installs it)")
    rx = re.compile(pattern)
    return sorted(p for p in out.stdout.splitlines() if rx.search(p) and os.path.isfile(p))


# ---- man pages -------------------------------------------------------------

def man_page(path):
    """groff-rendered paragraphs of one man page, the running header, the
    footer and the section headings (lines with no indent) left out."""
    with open(path, "rb") as f:
        src = f.read()
    if path.endswith(".gz"):
        src = gzip.decompress(src)
    if src.lstrip().startswith(b".so "):   # a link to another page
        return []
    groff = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-rLL=4000n", "-P-cbou"],
                           input=src, capture_output=True)
    text = subprocess.run(["col", "-bx"], input=groff.stdout, capture_output=True).stdout
    pars, cur = [], []
    for line in text.decode("utf-8", "replace").split("\n"):
        if not line.strip() or not line.startswith(" "):   # blank, header, heading
            if cur:
                pars.append(fold(" ".join(cur)))
            cur = []
            continue
        cur.append(line)
    if cur:
        pars.append(fold(" ".join(cur)))
    return pars


def man_pages(jobs):
    files = []
    for pkg in ("manpages", "manpages-dev"):
        files += dpkg_files(pkg, r"^/usr/share/man/man[0-9]/")
    with ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(man_page, files))


# ---- WordNet ---------------------------------------------------------------

def wordnet():
    docs = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(f"/usr/share/wordnet/data.{pos}", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:   # the licence header
                    continue
                head, gloss = line.split(" | ", 1)
                fields = head.split()
                n = int(fields[3], 16)
                lemmas = [re.sub(r"\(.*\)$", "", w).replace("_", " ")
                          for w in fields[4:4 + 2 * n:2]]
                docs.append([fold(", ".join(lemmas) + ": " + gloss)])
    return docs


# ---- Perl documentation ----------------------------------------------------

POD_TEXT = r"""
package NoVerbatim; our @ISA = ('Pod::Text');
sub cmd_verbatim { return '' }
package main;
use Pod::Text;
for my $file (@ARGV) {
    my $out = '';
    my $p = NoVerbatim->new(width => 1000000, indent => 0, margin => 0, sentence => 0);
    $p->output_string(\$out);
    $p->parse_file($file);
    $out =~ s/\f//g;
    print $out, "\n\f\n";
}
"""


def perl_docs():
    files = dpkg_files("perl-doc", r"\.pod$")
    out = subprocess.run(["perl", "-e", POD_TEXT] + files, capture_output=True, check=True)
    docs = []
    for doc in out.stdout.decode("utf-8", "replace").split("\n\f\n"):
        docs.append([fold(p) for p in re.split(r"\n\s*\n", doc) if p.strip()])
    return docs


# ---- Python documentation --------------------------------------------------

class SphinxText(html.parser.HTMLParser):
    """The <p> paragraphs inside a Sphinx page's main body (div role="main"
    or class "body"), nothing inside <pre>, <script>, <style>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pars, self.cur = [], None
        self.div_depth, self.body_at, self.skip = 0, None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div":
            self.div_depth += 1
            if self.body_at is None and (a.get("role") == "main" or
                                         "body" in (a.get("class") or "").split()):
                self.body_at = self.div_depth
        elif tag in ("pre", "script", "style"):
            self.skip += 1
        elif tag == "p" and self.body_at is not None and not self.skip:
            self.cur = []

    def handle_endtag(self, tag):
        if tag == "div":
            if self.body_at == self.div_depth:
                self.body_at = None
            self.div_depth -= 1
        elif tag in ("pre", "script", "style"):
            self.skip = max(0, self.skip - 1)
        elif tag == "p" and self.cur is not None:
            self.pars.append(fold("".join(self.cur)))
            self.cur = None

    def handle_data(self, data):
        if self.cur is not None and not self.skip:
            self.cur.append(data)


def python_docs():
    """python3-doc is the versioned package's link: /usr/share/doc/python3/html."""
    dpkg_files("python3-doc", r"/html$")   # only to say so when it is not installed
    top = os.path.realpath("/usr/share/doc/python3/html")
    files = [os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs if f.endswith(".html")]
    docs = []
    for path in sorted(set(os.path.realpath(p) for p in files)):
        p = SphinxText()
        with open(path, encoding="utf-8", errors="replace") as f:
            p.feed(f.read())
        docs.append([t.replace("\u00b6", "") for t in p.pars])
    return docs


# ---- fortunes --------------------------------------------------------------

def fortunes(src):
    docs = []
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name == "COPYRIGHT" or name.endswith(".dat") or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            docs += [[fold(e)] for e in f.read().split("\n%\n") if e.strip()]
    return docs


def find_fortunes(given):
    for d in ([given] if given else
              [os.path.join(ROOT, "..", "shared", "data", "fortunes"),
               os.path.join(ROOT, "..", "..", "shared", "data", "fortunes")]):
        if d and os.path.isdir(d):
            return os.path.abspath(d)
    sys.exit("build_corpus: no fortunes directory (../shared/data/fortunes beside the "
             "repository); give --fortunes DIR")


# ---- held-out texts, de-duplication, output -------------------------------

def held_out_texts():
    """The last 20 % of data/topics.tsv, as tools/make_pretrain.py and
    examples/topics.c split it, folded and lowercased."""
    with open(os.path.join(ROOT, "data", "topics.tsv"), encoding="utf-8") as f:
        texts = [line.rstrip("\n").split("\t", 1)[1] for line in f]
    return [fold(t).lower() for t in texts[len(texts) * 4 // 5:]]


def clean(sources, held_out):
    """Drops non-prose, repeated and held-out paragraphs; empty documents go."""
    seen, stats, out = set(), {}, []
    for name, docs in sources:
        n_docs = n_pars = n_bytes = dropped = 0
        for doc in docs:
            kept = []
            for par in doc:
                key = par.lower()
                if not prose(par) or key in seen:
                    continue
                seen.add(key)
                if any(h in key for h in held_out):
                    dropped += 1
                    continue
                kept.append(par)
            if kept:
                out.append(kept)
                n_docs += 1
                n_pars += len(kept)
                n_bytes += sum(len(p.encode("utf-8")) + 1 for p in kept) + 1
        stats[name] = (n_docs, n_pars, n_bytes, dropped)
    return out, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default=os.path.join(ROOT, "build/corpus/corpus.txt"))
    ap.add_argument("--fortunes", help="the fortune databases (default: ../shared/data/fortunes)")
    ap.add_argument("--jobs", type=int, default=2, help="man pages rendered at once")
    args = ap.parse_args()
    fortune_dir = find_fortunes(args.fortunes)
    sources = []
    for name, read in (("man pages", lambda: man_pages(args.jobs)), ("WordNet", wordnet),
                       ("Perl docs", perl_docs), ("Python docs", python_docs),
                       ("fortunes", lambda: fortunes(fortune_dir))):
        print(f"reading {name} ...", file=sys.stderr, flush=True)
        sources.append((name, read()))
    docs, stats = clean(sources, held_out_texts())
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for doc in docs:
            f.write("\n".join(doc) + "\n\n")
    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: {size / 1e6:.1f} MB, {len(docs)} documents, "
          f"{sum(len(d) for d in docs)} paragraphs (one a line; a blank line ends a document)")
    print(f"{'source':12s} {'documents':>9s} {'paragraphs':>10s} {'MB':>6s}  held-out removed  "
          "licence")
    for name, (n_docs, n_pars, n_bytes, dropped) in stats.items():
        pkg, licence, where = LICENCES[name]
        print(f"{name:12s} {n_docs:9d} {n_pars:10d} {n_bytes / 1e6:6.1f}  {dropped:16d}  "
              f"{licence} [{pkg}; {where}]")


if __name__ == "__main__":
    main()
