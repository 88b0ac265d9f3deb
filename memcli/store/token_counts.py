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

MAGIC = b"memcli-token-counts 1 " + (b"le\n" if sys.byteorder == "little" else b"be\n")
MAX_ENTRIES = 100_000


class TokenCountCache:
    """The counts of one agent's cache file; a :class:`memcli.tokens.CountMemo`."""

    def __init__(self, path: Path, keep_new: int | None = None):
        self.path = path
        self.counts: dict[int, int] = {}
        self.used: set[int] = set()
        self.added = 0
        # keep_new: of the counts this command adds, only the newest this many (and a quarter
        # more) are held and saved (a compaction counts every text it archives, but the next
        # command needs those that stay, which it counts last)
        self.keep_new = keep_new
        self.new: dict[int, None] = {}
        self.valid = self._load()

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
        self.counts = dict(zip(keys, counts, strict=True))
        return True

    def lookup(self, key: int) -> int | None:
        found = self.counts.get(key)
        if found is not None:
            self.used.add(key)
        return found

    def record(self, key: int, tokens: int) -> None:
        counts = self.counts
        if key not in counts:
            self.added += 1
            if self.keep_new is not None:
                new = self.new
                new[key] = None
                if len(new) > self.keep_new + max(self.keep_new // 4, 1):
                    self._forget_oldest_new()
        counts[key] = tokens if tokens < 0xFFFFFFFF else 0xFFFFFFFF
        self.used.add(key)
        if len(counts) > MAX_ENTRIES + max(MAX_ENTRIES // 4, 1):
            # a command that counts more texts than the file keeps (a compaction of 100,000 turns)
            # holds no more than that in memory either: what save() would keep stays
            self.counts = self._kept()
            self.used.intersection_update(self.counts)

    def _forget_oldest_new(self) -> None:
        new, counts, used = self.new, self.counts, self.used
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
        used = self.used
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
    from memcli.tokens import counting_memo

    cache = TokenCountCache(path, keep_new)
    with counting_memo(cache):
        yield cache
    if save:
        cache.save()
