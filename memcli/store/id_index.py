"""``.ids``: the set of every trace id an agent holds (active and archive), for idempotent ingest.

Format: a flat file of 16-byte keys, one per trace, appended in the order traces were appended:
the 128-bit value of a memcli-generated ``rt_<32 hex>`` id, or the BLAKE2b-128 digest of any
other id (see :func:`digest`). Only the first ``count`` entries are valid, where ``count`` comes from
the agent state (``.state.json``); bytes beyond it are leftovers of an interrupted write and are
cut off. The file is a cache: it is rebuilt from ``raw_traces*.jsonl`` whenever the state says it
cannot be trusted.

A 128-bit digest makes a false "already present" (which would drop a new event) about as likely as
a random 2^-128 collision, so no verification read is needed. Membership of a few ids is a
``find`` over the mapped file (C speed, ~1 ms per 1M entries); of many ids, one pass builds a set.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from memcli.store import jsonl

DIGEST_SIZE = 16
_SET_THRESHOLD = 64


_GENERATED = re.compile(r"rt_[0-9a-f]{32}")


def digest(trace_id: str) -> bytes:
    """The index key of an id: for memcli's own ``rt_<32 hex>`` ids the 128-bit value itself
    (unique by construction, no hashing needed), for any other id its BLAKE2b-128 digest."""
    if len(trace_id) == 35 and _GENERATED.fullmatch(trace_id):
        return bytes.fromhex(trace_id[3:])
    import hashlib  # ~5 ms; only ids given in the input need it

    return hashlib.blake2b(trace_id.encode("utf-8", "surrogatepass"), digest_size=DIGEST_SIZE).digest()


class IdIndex:
    def __init__(self, path: Path, count: int):
        self.path = path
        self.count = count
        self._set: set[bytes] | None = None
        self._queries = 0

    def truncate_to_count(self) -> None:
        """Drop entries beyond ``count`` (an interrupted append). Caller holds the lock."""
        size = jsonl.file_size(self.path)
        want = self.count * DIGEST_SIZE
        if size > want:
            fd = os.open(self.path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                os.ftruncate(fd, want)
            finally:
                os.close(fd)

    def is_consistent(self) -> bool:
        return jsonl.file_size(self.path) >= self.count * DIGEST_SIZE

    def _load_set(self) -> set[bytes]:
        if self._set is None:
            data = b""
            try:
                with jsonl.open_read(self.path) as f:
                    data = f.read(self.count * DIGEST_SIZE)
            except FileNotFoundError:
                pass
            self._set = {data[i:i + DIGEST_SIZE] for i in range(0, len(data), DIGEST_SIZE)}
        return self._set

    def present(self, digests: Iterable[bytes]) -> set[bytes]:
        """The subset of ``digests`` already in the index."""
        wanted = list(digests)
        if not wanted or self.count == 0:
            return set()
        if self._set is not None or len(wanted) > _SET_THRESHOLD:
            known = self._load_set()
            return {d for d in wanted if d in known}
        found: set[bytes] = set()
        try:
            f = jsonl.open_read(self.path)
        except FileNotFoundError:
            return found
        import mmap

        with f:
            limit = self.count * DIGEST_SIZE
            if limit == 0:
                return found
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for d in wanted:
                    pos = mm.find(d, 0, limit)
                    while pos >= 0:
                        if pos % DIGEST_SIZE == 0:
                            found.add(d)
                            break
                        pos = mm.find(d, pos + 1, limit)
        return found

    def contains(self, d: bytes) -> bool:
        """Membership of one digest; after a few lookups the whole index is loaded as a set."""
        if self._set is None:
            self._queries += 1
            if self._queries <= _SET_THRESHOLD:
                return bool(self.present([d]))
        return d in self._load_set()

    def add_loaded(self, digests: Iterable[bytes]) -> None:
        """Keep an already loaded set in step with appended digests."""
        if self._set is not None:
            self._set.update(digests)

    def append(self, digests: list[bytes] | bytes, *, fsync: bool = True) -> None:
        """Append digests (a list, or their concatenation)."""
        data = digests if isinstance(digests, (bytes, bytearray)) else b"".join(digests)
        if not data:
            return
        self.truncate_to_count()
        jsonl.append_chunks(self.path, [data], fsync=fsync)
        self.count += len(data) // DIGEST_SIZE
        if self._set is not None:
            self._set.update(data[i:i + DIGEST_SIZE] for i in range(0, len(data), DIGEST_SIZE))

    def rewrite(self, digests: Iterable[bytes]) -> None:
        data = b"".join(digests)
        if not data and jsonl.file_size(self.path) == 0:
            # nothing to index and nothing indexed (a new agent): no file to write (a missing
            # index reads as empty); the first append creates it
            self.count, self._set = 0, None
            return
        jsonl.atomic_write_bytes(self.path, data)
        self.count = len(data) // DIGEST_SIZE
        self._set = None
