"""Importers: turn recorded transcripts into native memcli events.

Each format is a module exposing an ``IMPORTER`` object with:

* ``name`` — the ``--from`` value;
* ``source_event`` — the ``source_event`` stamped on traces that do not set their own;
* ``sniff(values) -> int`` — 0..100, how sure it is that the first parsed values (a list of
  ``(line, value)``) are in its format; used by ``--from auto``;
* ``events(values, result) -> iterator of (line, event | InputError)`` — native events, with ids
  derived deterministically from the source so re-importing adds nothing. Things the format
  allows but the importer does not understand are counted in ``result.skipped[kind]``.
"""

from __future__ import annotations

import importlib
from itertools import chain, islice
from typing import Iterator

from memcli.errors import InputError, UsageError

FORMATS = ("native", "openai", "anthropic", "claude-code", "codex")
_MODULES = {"native": "native", "openai": "openai", "anthropic": "anthropic",
            "claude-code": "claude_code", "codex": "codex"}
SNIFF_VALUES = 50
CERTAIN = 90  # a sniff score at which no other format is consulted


def get_importer(name: str):
    module = _MODULES.get(name)
    if module is None:
        raise UsageError(f"unknown format {name!r} (expected auto or one of {', '.join(FORMATS)})")
    try:
        return importlib.import_module(f"memcli.importers.{module}").IMPORTER
    except ModuleNotFoundError as exc:
        if exc.name == f"memcli.importers.{module}":
            raise UsageError(f"format {name!r} is not available in this version of memcli") from None
        raise


def resolve(fmt: str, values: Iterator, source_name: str = "input", sniff_values: int = SNIFF_VALUES):
    """(importer, values) for ``--from fmt``; ``auto`` sniffs the first ``sniff_values`` values
    (a live stream sniffs only the first, so that it never waits for more input)."""
    if fmt != "auto":
        return get_importer(fmt), values
    head = list(islice(values, sniff_values))
    if not head:
        return get_importer("native"), iter(())
    best, best_score = None, 0
    native = get_importer("native")
    if native.sniff(head) >= CERTAIN:  # memcli's own events: no need to load the other importers
        return native, chain(head, values)
    for name in FORMATS:
        try:
            importer = get_importer(name)
        except UsageError:
            continue
        score = importer.sniff(head)
        if score > best_score:
            best, best_score = importer, score
    if best is None:
        line = head[0][0]
        first = head[0][1]
        if isinstance(first, InputError):
            raise first
        raise InputError(
            f"cannot tell what format {source_name} is in",
            line=line,
            hint="name it with --from native|openai|anthropic|claude-code|codex",
        )
    return best, chain(head, values)
