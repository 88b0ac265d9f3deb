"""The one byte-size format of every command (``stats``, ``agents``, ``export``, ``clear``, the
markdown export): binary units, one decimal — ``512 B``, ``1.5 KiB``, ``2.0 MiB``, ``1,024.0 TiB``.
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
