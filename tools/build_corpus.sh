#!/bin/sh
# tools/build_corpus.sh — build the plain-text pretraining corpus.
#
#   sh tools/build_corpus.sh [OUT] [--fortunes DIR]     (default OUT: build/corpus/corpus.txt)
#
# Installs the Debian packages of English prose it reads when they are
# missing (apt-get; needs root, or sudo):
#   manpages, manpages-dev   the Linux man pages (rendered by groff-base)
#   wordnet-base             WordNet 3.0's glosses
#   perl-doc                 the Perl documentation (.pod)
#   python3-doc              the Python documentation (HTML)
# then tools/build_corpus.py extracts their text and the BSD fortunes
# (../shared/data/fortunes; data/fortunes-COPYRIGHT), de-duplicates it,
# removes every held-out text of data/topics.tsv (the 229 `make demo` scores),
# writes OUT (one paragraph a line, a blank line between documents) and
# prints its size, its document counts and each source's licence.
# The corpus is build output: never commit it.
set -e
cd "$(dirname "$0")/.."

PACKAGES="manpages manpages-dev wordnet-base perl-doc python3-doc groff-base bsdextrautils"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "installing:$missing" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -q >&2
    # shellcheck disable=SC2086  # one word a package
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >&2
fi

exec python3 tools/build_corpus.py "$@"
