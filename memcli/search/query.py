"""User query text -> terms, and the FTS5 match expression that cannot be a syntax error.

Rules (``memcli search``, the MCP ``memory_search`` tool and ``snapshot --recall`` share them):

* ``"two words"`` in double quotes is a phrase: the words next to each other, in that order.
  Every word of a phrase is kept, stop words included (``"the build"``);
* a word ending in ``*`` is a prefix term (``compact*`` matches compaction, compacted, ...);
* an identifier is kept whole: a run of non-space characters with punctuation inside
  (``retry_policy``, ``src/app.py``, ``os.path.join``, ``A-1042``) is the phrase of its parts as
  the index tokenizer splits them (``retry policy``), so it matches only where the parts stand
  together; a stop word inside an identifier is kept;
* every other word is a plain word; English stop words (:data:`STOP_WORDS`: "what", "did",
  "the", "about" ...) are dropped, so a question is searched by the words that carry its
  meaning (:attr:`Query.dropped` lists what was dropped). Apostrophes are ignored when telling a
  stop word (``didn't``, ``what's``);
* every term is passed to FTS5 as a quoted string, so FTS5 operators in user text (``AND``,
  ``NEAR``, ``-``, ``:``, parentheses, a lone quote) are plain words, never syntax;
* terms with no letter or digit are dropped; so are repeated terms.

A query with no term left is :attr:`Query.empty`; :attr:`Query.only_stop_words` tells the case of
a question made of stop words alone. :meth:`Query.match_any` is the one expression searched (any
term): :mod:`memcli.search.engine` ranks its matches, boosting records that hold more of the
terms and hold them close together. :meth:`Query.match_all` (every term) is kept for callers
that want it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
# the index tokenizer's token characters (unicode61: letters, digits; "_" separates)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_APOSTROPHES = re.compile(r"['\u2019]")
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")

STOP_WORDS = frozenset("""
a about above after again against all am an and any are arent as at be because been before being
below between both but by can cant could couldnt did didnt do does doesnt doing dont down during each
else ever few for from further had hadnt has hasnt have havent having he hed hell hes her here heres
hers herself him himself his how hows i id ill im ive if in into is isnt it its itself just lets me
more most much my myself no nor not of off on once only or other ought our ours ourselves out over
own please same shall shant she shed shell shes should shouldnt so some such tell than that thats
the their theirs them themselves then there theres these they theyd theyll theyre theyve this those
through to too under until up upon us very was wasnt we wed well were weve werent what whats when
whens where wheres which while who whos whom why whys will with wont would wouldnt you youd youll
youre youve your yours yourself yourselves
""".split())


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]   # the term's words as the tokenizer will see them (lowercased)
    prefix: bool = False
    label: str | None = field(default=None, compare=False)   # an identifier as typed (run_tests)

    def expression(self) -> str:
        text = " ".join(self.words).replace('"', '""')
        return f'"{text}"' + ("*" if self.prefix else "")

    @property
    def text(self) -> str:
        if self.label:
            return self.label
        words = " ".join(self.words)
        return (f'"{words}"' if len(self.words) > 1 else words) + ("*" if self.prefix else "")


@dataclass(frozen=True)
class Query:
    text: str
    terms: tuple[Term, ...]
    dropped: tuple[str, ...] = ()      # stop words left out of the search

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def only_stop_words(self) -> bool:
        return not self.terms and bool(self.dropped)

    def match_all(self) -> str:
        return " AND ".join(t.expression() for t in self.terms)

    def match_any(self) -> str:
        return " OR ".join(t.expression() for t in self.terms)

    @property
    def words(self) -> list[str]:
        """Every word of every term."""
        out: list[str] = []
        for term in self.terms:
            for word in term.words:
                if word not in out:
                    out.append(word)
        return out

    def prefix_words(self) -> set[str]:
        return {t.words[-1] for t in self.terms if t.prefix}


def is_stop_word(word: str) -> bool:
    return _APOSTROPHES.sub("", word.lower()) in STOP_WORDS


def parse_query(text: str) -> Query:
    terms: list[Term] = []
    dropped: list[str] = []
    for m in _TOKEN.finditer(text or ""):
        phrase, word = m.group(1), m.group(2)
        prefix = False
        if phrase is None:
            prefix = word.endswith("*") and len(word.rstrip("*")) > 0
            word = word.rstrip("*")
            bare = _WORD.findall(_APOSTROPHES.sub("", word))
            if not prefix and len(bare) == 1 and bare[0].lower() in STOP_WORDS:
                if bare[0].lower() not in dropped:
                    dropped.append(bare[0].lower())
                continue
            if len(bare) == 1 and len(_WORD.findall(word)) > 1 and not _inner_punctuation(word):
                word = bare[0]          # "user's" is the word "users", not an identifier
            source = word
        else:
            source = phrase
        words = tuple(w.lower() for w in _WORD.findall(source))
        if not words:
            continue
        label = _EDGES.sub("", source.lower()) if phrase is None and len(words) > 1 else None
        term = Term(words, prefix, label)
        if term not in terms:
            terms.append(term)
    return Query(text or "", tuple(terms), tuple(dropped))


def _inner_punctuation(word: str) -> bool:
    """True for an identifier: punctuation other than an apostrophe between two word characters."""
    return bool(re.search(r"[^\W_]([^\w\s'\u2019]|_)+[^\W_]", word))
