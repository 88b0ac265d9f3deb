"""The one byte-size format of every command (``stats``, ``agents``, ``export``, ``clear``, the
markdown export): binary units, one decimal — ``512 B``, ``1.5 KiB``, ``2.0 MiB``, ``1,024.0 TiB``;
and counted nouns (:func:`counted`): ``1 turn``, ``2 turns``, ``1,024 records``; what a
compaction moved (:func:`what_moved`): ``4 turns``, ``2 turns and 120 steps``, ``120 steps``.
A leaf module (no imports)."""

from __future__ import annotations


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:,.1f} {unit}"
    return f"{n} B"  # pragma: no cover


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular for exactly one: ``1 turn``, ``0 turns``, ``3 summaries``
    (``plural`` when adding an ``s`` is wrong)."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def what_moved(whole_turns: int, steps: int) -> str:
    """"4 turns", "2 turns and 120 steps", "120 steps": what a compaction's window holds."""
    parts = []
    if whole_turns or not steps:
        parts.append(counted(whole_turns, "turn"))
    if steps:
        parts.append(counted(steps, "step"))
    return " and ".join(parts)
