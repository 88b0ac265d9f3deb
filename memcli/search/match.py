"""Where a query's terms occur in a text, the way the index matches them: for ranking (coverage
and proximity) and for highlighting every matched term in a snippet.

A text's words are runs of letters and digits (``_`` and punctuation separate, as the index's
``unicode61`` tokenizer splits them), compared case-insensitively by their Porter stem — the same
algorithm as the index's ``porter`` tokenizer (``snowballstemmer``'s ``porter``), so ``retries``
matches ``retry`` and ``retried`` here exactly when it does in FTS5. A prefix term matches words
starting with it; a phrase (or an identifier) matches its words in order with only separators
between them.

:class:`Matcher` finds, for one query, the spans of every term in a text (:meth:`Matcher.spans`);
:func:`coverage` and :func:`proximity` score them; :func:`highlight` marks them ``**so**``.
Scanning is by one regular expression per term word (its first letters), each hit confirmed by
its stem: a few hundred candidate texts cost a few milliseconds.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memcli.search.query import Query, Term

_stemmer = None


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    global _stemmer
    if _stemmer is None:
        import snowballstemmer

        _stemmer = snowballstemmer.stemmer("porter")
    return _stemmer.stemWord(word.lower())


_SEP = r"[\W_]+"
_PLACEHOLDER = re.compile(r"\[REDACTED:[^\]]*\]")    # redaction's marks are not highlighted inside
_TAIL = r"[^\W_]*"


class _TermPattern:
    __slots__ = ("term", "regex", "stems")

    def __init__(self, term: Term):
        self.term = term
        self.stems = [w if (term.prefix and i == len(term.words) - 1) else stem(w) for i, w in enumerate(term.words)]
        parts = []
        for word, s in zip(term.words, self.stems):
            lead = _lead(word, s)
            parts.append("(" + re.escape(lead) + _TAIL + ")")
        self.regex = re.compile(r"(?<![^\W_])" + _SEP.join(parts) + r"(?![^\W_])", re.IGNORECASE)

    def finditer(self, text: str):
        last = len(self.stems) - 1
        for m in self.regex.finditer(text):
            ok = True
            for i, s in enumerate(self.stems):
                token = m.group(i + 1).lower()
                if self.term.prefix and i == last:
                    ok = token.startswith(s)
                else:
                    ok = stem(token) == s
                if not ok:
                    break
            if ok:
                yield m.start(), m.end()


def _lead(word: str, s: str) -> str:
    """The letters every word with stem ``s`` starts with (Porter changes at most the end)."""
    n = 0
    while n < min(len(word), len(s)) and word[n] == s[n]:
        n += 1
    n = min(n, max(1, len(s) - 1)) if len(s) > 3 else min(n, len(s))
    return word[:max(n, 1)]


class Matcher:
    """The terms of one query, ready to be found in texts."""

    def __init__(self, query: Query):
        self.query = query
        self.patterns = [_TermPattern(t) for t in query.terms]

    def spans(self, text: str, *, limit: int = 200) -> list[list[tuple[int, int]]]:
        """Per term (in query order), the (start, end) of its occurrences in ``text`` (at most
        ``limit`` each)."""
        out = []
        for p in self.patterns:
            found = []
            for span in p.finditer(text):
                found.append(span)
                if len(found) >= limit:
                    break
            out.append(found)
        return out


def coverage(spans, weights) -> float:
    """Share of the query's weight (per term) found in the text: 0..1."""
    total = sum(weights) or 1.0
    return sum(w for s, w in zip(spans, weights) if s) / total


def proximity(spans) -> float:
    """How close together the matched terms stand: 1.0 when every matched term lies within a
    window of a few words, falling with the smallest window (in characters) that holds one
    occurrence of each; 0 when fewer than two terms matched."""
    present = [s for s in spans if s]
    if len(present) < 2:
        return 0.0
    events = sorted((start, end, i) for i, occ in enumerate(present) for start, end in occ)
    need = len(present)
    count: dict[int, int] = {}
    best = None
    lo = 0
    for hi in range(len(events)):
        count[events[hi][2]] = count.get(events[hi][2], 0) + 1
        while len(count) == need:
            width = events[hi][1] - events[lo][0]
            best = width if best is None or width < best else best
            i = events[lo][2]
            count[i] -= 1
            if not count[i]:
                del count[i]
            lo += 1
    if best is None:
        return 0.0
    # the terms' own length plus a few words' worth of gap scores 1
    own = sum(min(e - s for s, e in occ) for occ in present)
    gap = max(0, best - own - 8 * (need - 1))
    return 1.0 / (1.0 + gap / 40.0)


def highlight(text: str, spans, width: int) -> str:
    """About ``width`` characters of ``text`` (whitespace collapsed by the caller) around the
    first place the most matched terms stand together, every occurrence of every term in the
    window marked ``**like this**``."""
    hidden = [m.span() for m in _PLACEHOLDER.finditer(text)] if "[REDACTED:" in text else ()
    tagged = sorted({(a, b, t) for t, occ in enumerate(spans) for a, b in occ
                     if not any(x <= a < y for x, y in hidden)})
    if not tagged:
        return text[:width] + ("…" if len(text) > width else "")
    marks = sorted({(a, b) for a, b, _ in tagged})
    # the first window (two thirds of the width) holding the most distinct terms: two pointers
    reach = width * 2 // 3
    best_start, best_n = tagged[0][0], 0
    inside: dict[int, int] = {}          # term -> marks in [tagged[i].start, + reach]
    hi = 0
    for i, (a, _, t) in enumerate(tagged):
        while hi < len(tagged) and (hi <= i or tagged[hi][1] <= a + reach):
            inside[tagged[hi][2]] = inside.get(tagged[hi][2], 0) + 1
            hi += 1
        if len(inside) > best_n:
            best_start, best_n = a, len(inside)
        inside[t] -= 1
        if not inside[t]:
            del inside[t]
    start = max(0, best_start - width // 3)
    if start:
        space = text.find(" ", start, best_start)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    out = []
    pos = start
    for s, e in marks:
        if s < pos or e > end:
            continue
        out.append(text[pos:s])
        out.append("**" + text[s:e] + "**")
        pos = e
    out.append(text[pos:end])
    return ("…" if start else "") + "".join(out) + ("…" if end < len(text) else "")
