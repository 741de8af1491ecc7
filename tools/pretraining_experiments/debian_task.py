#!/usr/bin/env python3
"""debian_task.py OUTDIR: a held-out real classification task the project does not contain.

Debian package descriptions (the long English text of each package, from apt's
Translation-en index) labelled with the package's section, five sections:
games, sound, graphics, science, net. Up to 700 packages a section with at
least 40 words of description; shuffled with seed 1 and split 80/20 into
OUTDIR/train.tsv (header label, text) and OUTDIR/test.tsv. Fetches the
translation index once with `apt-get update -o Acquire::Languages=en`
(root) when it is missing. The descriptions are DFSG-free package metadata
and never enter the pretraining corpus (tools/build_corpus.py reads man
pages, WordNet, Perl/Python docs and fortunes)."""
import glob, os, random, re, subprocess, sys

SECTIONS = ["games", "sound", "graphics", "science", "net"]
LISTS = "/var/lib/apt/lists"

def cat(path):
    return subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path], check=True,
                          capture_output=True, text=True).stdout

def stanzas(text):
    for block in text.split("\n\n"):
        fields, key = {}, None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields

def main():
    out = sys.argv[1]
    if not glob.glob(f"{LISTS}/*_main_i18n_Translation-en*"):
        subprocess.run(["apt-get", "update", "-q", "-o", "Acquire::Languages=en"], check=True)
    section = {}
    for path in glob.glob(f"{LISTS}/*_main_binary-amd64_Packages*"):
        for f in stanzas(cat(path)):
            s = f.get("Section", "").split("/")[-1]
            if s in SECTIONS:
                section[f["Package"]] = s
    texts = {s: {} for s in SECTIONS}
    for path in glob.glob(f"{LISTS}/*_main_i18n_Translation-en*"):
        for f in stanzas(cat(path)):
            p, d = f.get("Package"), f.get("Description-en")
            if p not in section or not d:
                continue
            lines = [l.strip() for l in d.split("\n")]
            body = " ".join(l for l in lines if l != ".")
            body = re.sub(r"\s+", " ", body).strip()
            if len(body.split()) >= 40:
                texts[section[p]][p] = body
    rng = random.Random(1)
    rows = []
    for s in SECTIONS:
        names = sorted(texts[s])
        rng.shuffle(names)
        rows += [(s, texts[s][n]) for n in names[:700]]
    rng.shuffle(rows)
    cut = int(len(rows) * 0.8)
    os.makedirs(out, exist_ok=True)
    for name, part in (("train.tsv", rows[:cut]), ("test.tsv", rows[cut:])):
        with open(os.path.join(out, name), "w") as fp:
            fp.write("label\ttext\n")
            for label, text in part:
                fp.write(f"{label}\t{text.replace(chr(9), ' ')}\n")
    words = sorted(len(t.split()) for _, t in rows)
    print(f"{out}: {cut} train, {len(rows) - cut} test rows; words a text: median "
          f"{words[len(words) // 2]}, 90th percentile {words[int(len(words) * 0.9)]}; per "
          f"section: " + ", ".join(f"{s} {min(700, len(texts[s]))}" for s in SECTIONS))

main()
