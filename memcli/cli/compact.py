"""CLI commands of this area (not implemented yet)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
