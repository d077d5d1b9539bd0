"""Query words in a file's name and folder lift its chunks, for sentence queries: the benchmark's
targets and an agent's next `Read` are files, and files are named after what they do."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lgrep_core.domain.text import identifier_parts, stem

from lgrep_search.query import ParsedQuery, QueryKind

if TYPE_CHECKING:  # the corpus indexes its files by `path_words`, so it imports this module
    from lgrep_search.corpus import Corpus
    from lgrep_search.fusion import Candidate

__all__ = ["PATH_MATCH_BOOST", "PATH_MATCH_MIN_SHARE", "PATH_PREFIX_MIN", "boost_path_matches", "path_words"]

# Added (times the share of query words the file's name and folder match) for sentence queries: the
# benchmark's targets and an agent's next `Read` are files, and files are named after what they do
# (0.5 / 1.0 / 2.0 → 0.8630 / 0.8676 / 0.8578 on the subset).
PATH_MATCH_BOOST = 1.0
PATH_MATCH_MIN_SHARE = 0.1
PATH_PREFIX_MIN = 3  # "depend" matches "dependencies"


def boost_path_matches(corpus: Corpus, cands: dict[int, Candidate], query: ParsedQuery, top: float) -> None:
    """Add PATH_MATCH_BOOST best-scores `top`, times the share of the query's keywords its file's
    name and folder match, to each candidate of a natural-language query."""
    if query.kind is not QueryKind.NATURAL:
        return
    keywords = query.keywords
    if not keywords:
        return
    counts = corpus.path_match_counts(keywords, PATH_PREFIX_MIN)
    for i, c in cands.items():
        share = float(counts[corpus.file_of[i]]) / len(keywords)
        if share >= PATH_MATCH_MIN_SHARE:
            boost = PATH_MATCH_BOOST * top * share
            c.score += boost
            c.signals["path_match"] = boost
            c.why.append(f"path matches {share:.0%} of the query words")


def path_words(path: str) -> frozenset[str]:
    """Stemmed words of a file's name and its folder's name, a compound kept whole as well:
    `src/auth/jwtVerifier.py` -> {auth, jwt, verifi, jwtverifier}."""
    parts = path.split("/")
    name = parts[-1].split(".", 1)[0] if not parts[-1].startswith(".") else parts[-1]
    words: set[str] = set()
    for piece in ([parts[-2]] if len(parts) > 1 else []) + [name]:
        for ident in re.findall(r"[A-Za-z][A-Za-z0-9]*", piece):
            idp = identifier_parts(ident)
            words.update(stem(p) for p in idp)
            if len(idp) > 1:
                words.add(ident.lower())
    return frozenset(words)
