"""The per-agent token count cache: ``agents/<id>/.token-counts``.

A derived, rebuildable cache (never the source of truth): token counts of texts the agent's
commands counted before, keyed by :func:`memcli.tokens.text_key` (64 bits of BLAKE2b over the
encoding name and the text). With it, ``snapshot`` and ``stats`` on an agent whose texts were
all counted before never load a tiktoken encoding (0.2–0.5 s of start-up). A count read from
here is the number tiktoken gave for the same text, so totals are exactly what they are without
the cache.

Format (native byte order, checked)::

    b"memcli-token-counts 1 " + b"le\n" | b"be\n"     header
    uint32 n                                          entries
    n × uint64 key, then n × uint32 count             two packed arrays

A file of any other shape (torn, foreign, other byte order) is ignored and rewritten on the next
save. Saving writes a temp file in the agent directory (0600, :func:`memcli.store.jsonl.atomic_write_bytes`)
and renames it over the cache, so
a reader sees the old or the new file, whole; concurrent savers each write a whole file and the
last rename wins — both are correct, since a count depends on the text alone. Nothing is
written when the agent directory does not exist or cannot be written. At most
:data:`MAX_ENTRIES` counts are kept: the ones used or added last.
"""

from __future__ import annotations

import sys
from array import array
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Iterator

from memcli.errors import StoreError
from memcli.store import jsonl
from memcli.tokens import counting_memo, text_key

MAGIC = b"memcli-token-counts 1 " + (b"le\n" if sys.byteorder == "little" else b"be\n")
MAX_ENTRIES = 100_000


def _past(limit: int) -> int:
    """How many entries a limit of ``limit`` lets pile up before it trims back (a quarter more:
    the trim's cost spread over what was added since)."""
    return limit + max(limit // 4, 1)


class TokenCountCache:
    """The counts of one agent's cache file; a :class:`memcli.tokens.CountMemo`.

    ``counts`` maps keys to counts in the file's order (the counts loaded, then those added);
    ``lookup``/``record`` read and add by key, ``known``/``learn`` (what a
    :class:`memcli.tokens.TokenCounter` calls) by text. While the cache holds no key (no file,
    or an empty one) no text can be found by key, so the counts learned are held by text, in
    the order learned, and keyed only when a key is needed (:meth:`_key_texts`: at save, or when
    ``counts`` is read or a key looked up or added): the texts a command counts and forgets
    (``keep_new``) are never hashed. What is saved, and in which order, is the same either way."""

    def __init__(self, path: Path, keep_new: int | None = None):
        self.path = path
        self._counts: dict[int, int] = {}
        self._used: set[int] = set()
        self.added = 0
        # keep_new: of the counts this command adds, only the newest this many (and a quarter
        # more) are held and saved (a compaction counts every text it archives, but the next
        # command needs those that stay, which it counts last)
        self.keep_new = keep_new
        self._new: dict[int, None] = {}
        # counts learned while no key is held, by text (of one encoding), in the order learned:
        # the newest of the cache, after every key
        self._texts: dict[str, int] = {}
        self._texts_encoding = ""
        # learn() trims nothing below this many texts held (the lower of its two limits, with
        # MAX_ENTRIES as it is when the cache is made)
        self._texts_limit = _past(MAX_ENTRIES if keep_new is None else min(keep_new, MAX_ENTRIES))
        self._missed: tuple[str, str, int] | None = None   # the last text known() did not find, with its key
        self.valid = self._load()

    @property
    def counts(self) -> dict[int, int]:
        self._key_texts()
        return self._counts

    @counts.setter
    def counts(self, counts: dict[int, int]) -> None:
        self._texts = {}
        self._counts = counts

    @property
    def used(self) -> set[int]:
        """The keys this command used (looked up or added)."""
        self._key_texts()
        return self._used

    @property
    def new(self) -> dict[int, None]:
        """The keys this command added (with ``keep_new``), oldest first."""
        self._key_texts()
        return self._new

    @property
    def held(self) -> int:
        """How many counts the cache holds (by key or by text)."""
        return len(self._counts) + len(self._texts)

    def _load(self) -> bool:
        try:
            data = self.path.read_bytes()
        except OSError:
            return False
        head = len(MAGIC) + 4
        if not data.startswith(MAGIC) or len(data) < head:
            return False
        n = int.from_bytes(data[len(MAGIC):head], sys.byteorder)
        if len(data) != head + 12 * n:
            return False
        keys, counts = array("Q"), array("I")
        keys.frombytes(data[head:head + 8 * n])
        counts.frombytes(data[head + 8 * n:])
        self._counts = dict(zip(keys, counts, strict=True))
        return True

    def known(self, encoding: str, text: str) -> int | None:
        found = self._texts.get(text)
        if found is not None and encoding == self._texts_encoding:
            return found
        counts = self._counts
        if not counts:
            return None   # no key held: none to compute
        key = text_key(encoding, text)
        found = counts.get(key)
        if found is not None:
            self._used.add(key)
            return found
        self._missed = (encoding, text, key)
        return None

    def learn(self, encoding: str, text: str, tokens: int) -> None:
        texts = self._texts
        if self._counts or (texts and encoding != self._texts_encoding):
            self._key_texts()
            missed = self._missed
            if missed is not None and missed[1] is text and missed[0] == encoding:
                key = missed[2]
            else:
                key = text_key(encoding, text)
            self._record(key, tokens)
            return
        held = len(texts)
        texts[text] = tokens if tokens < 0xFFFFFFFF else 0xFFFFFFFF
        if len(texts) == held:
            return   # known already: nothing moves
        if not held:
            self._texts_encoding = encoding
        self.added += 1
        if held >= self._texts_limit:
            self._trim_texts(held)

    def _trim_texts(self, held: int) -> None:
        """What :meth:`_record` does when a count is added over a limit, to the counts held by
        text (``held`` of them before the last one)."""
        texts, keep_new = self._texts, self.keep_new
        if keep_new is not None and held >= _past(keep_new):
            # as _forget_oldest_new: the oldest go (unhashed)
            for old in list(islice(texts, held + 1 - keep_new)):
                texts.pop(old, None)   # (a summarizer's threads may count at once)
        if len(texts) > _past(MAX_ENTRIES):
            self._key_texts()
            self._counts = self._kept()
            self._used.intersection_update(self._counts)

    def _key_texts(self) -> None:
        """Move the counts held by text to ``counts`` under their keys, as :meth:`record` would
        have added them (already counted in ``added``)."""
        texts = self._texts
        if not texts:
            return
        self._texts = {}
        counts, used, new = self._counts, self._used, self._new
        encoding = self._texts_encoding
        track = self.keep_new is not None
        for text, tokens in list(texts.items()):   # taken at once: another thread may still add
            key = text_key(encoding, text)
            if track and key not in counts:
                new[key] = None
            counts[key] = tokens
            used.add(key)

    def lookup(self, key: int) -> int | None:
        found = self.counts.get(key)
        if found is not None:
            self._used.add(key)
        return found

    def record(self, key: int, tokens: int) -> None:
        self._key_texts()
        self._record(key, tokens)

    def _record(self, key: int, tokens: int) -> None:
        counts = self._counts
        if key not in counts:
            self.added += 1
            if self.keep_new is not None:
                new = self._new
                new[key] = None
                if len(new) > _past(self.keep_new):
                    self._forget_oldest_new()
        counts[key] = tokens if tokens < 0xFFFFFFFF else 0xFFFFFFFF
        self._used.add(key)
        if len(counts) > _past(MAX_ENTRIES):
            # a command that counts more texts than the file keeps (a compaction of 100,000 turns)
            # holds no more than that in memory either: what save() would keep stays
            self._counts = self._kept()
            self._used.intersection_update(self._counts)

    def _forget_oldest_new(self) -> None:
        new, counts, used = self._new, self._counts, self._used
        # the oldest (first inserted) keys only: the cost is what is forgotten, not what is kept
        for key in list(islice(new, len(new) - self.keep_new)):
            del new[key]
            counts.pop(key, None)
            used.discard(key)

    def _kept(self) -> dict[int, int]:
        """The counts a save keeps: at most MAX_ENTRIES; those this command used or added stay
        (the newest of them when there are more), the oldest others go."""
        items = self.counts
        if len(items) <= MAX_ENTRIES:
            return items
        used = self._used
        order = [k for k in items if k not in used] + [k for k in items if k in used]
        return {k: items[k] for k in order[-MAX_ENTRIES:]}

    def save(self) -> bool:
        """Write the cache if it learned something; False when it could not (nothing changes then)."""
        if not self.added:
            return False
        items = self._kept()
        body = MAGIC + len(items).to_bytes(4, sys.byteorder) + array("Q", items.keys()).tobytes() \
            + array("I", items.values()).tobytes()
        try:
            jsonl.atomic_write_bytes(self.path, body, fsync=False)
        except StoreError:  # no agent directory (cleared meanwhile), read-only store: stay without cache
            return False
        self.added = 0
        return True


@contextmanager
def counting_cache(path: Path, *, save: bool = True, keep_new: int | None = None) -> Iterator[TokenCountCache]:
    """Token counting inside the block answers from, and adds to, the cache at ``path``; the
    cache is saved when the block ends without an error (and ``save`` is true). ``keep_new``:
    see :class:`TokenCountCache`."""
    cache = TokenCountCache(path, keep_new)
    with counting_memo(cache):
        yield cache
    if save:
        cache.save()
