"""User query text -> FTS5 match expressions that cannot be a syntax error.

Rules (``memcli search``, the MCP ``memory_search`` tool and ``snapshot --recall`` share them):

* ``"two words"`` in double quotes is a phrase: the words next to each other, in that order;
* a word ending in ``*`` is a prefix term (``compact*`` matches compaction, compacted, ...);
* every other run of non-space characters is a word. Punctuation inside a word splits it the way
  the index tokenizer does (``foo_bar.py`` is the phrase ``foo bar py``), because every term is
  passed to FTS5 as a quoted string — so FTS5 operators in user text (``AND``, ``NEAR``, ``-``,
  ``:``, parentheses, a lone quote) are plain words, never syntax;
* terms with no letter or digit are dropped; so are repeated terms.

:meth:`Query.match_all` requires every term (what a search tries first), :meth:`Query.match_any`
any of them (the fallback when no record has them all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]   # the term's words as the tokenizer will see them (lowercased)
    prefix: bool = False

    def expression(self) -> str:
        text = " ".join(self.words).replace('"', '""')
        return f'"{text}"' + ("*" if self.prefix else "")

    @property
    def text(self) -> str:
        words = " ".join(self.words)
        return (f'"{words}"' if len(self.words) > 1 else words) + ("*" if self.prefix else "")


@dataclass(frozen=True)
class Query:
    text: str
    terms: tuple[Term, ...]

    @property
    def empty(self) -> bool:
        return not self.terms

    def match_all(self) -> str:
        return " AND ".join(t.expression() for t in self.terms)

    def match_any(self) -> str:
        return " OR ".join(t.expression() for t in self.terms)

    @property
    def words(self) -> list[str]:
        """Every word of every term (for highlighting a snippet)."""
        out: list[str] = []
        for term in self.terms:
            for word in term.words:
                if word not in out:
                    out.append(word)
        return out

    def prefix_words(self) -> set[str]:
        return {t.words[-1] for t in self.terms if t.prefix}


def parse_query(text: str) -> Query:
    terms: list[Term] = []
    for m in _TOKEN.finditer(text or ""):
        phrase, word = m.group(1), m.group(2)
        prefix = False
        if phrase is None:
            prefix = word.endswith("*") and len(word.rstrip("*")) > 0
            word = word.rstrip("*")
            source = word
        else:
            source = phrase
        words = tuple(w.lower() for w in _WORD.findall(source))
        if not words:
            continue
        term = Term(words, prefix)
        if term not in terms:
            terms.append(term)
    return Query(text or "", tuple(terms))
