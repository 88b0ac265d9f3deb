"""A progress bar on stderr for long jobs, shared by the commands that need one.

    with progress_bar("exporting coder", total=None, enabled=to_file) as advance:
        job(progress=advance)          # advance(n, total=None): n more units done

The bar appears only when ``enabled``, when stderr is a terminal, and only once the job has
run for more than ``delay`` seconds (default 0.5) — quick jobs print nothing, and nothing ever
reaches a pipe or a log. ``unit="bytes"`` shows sizes and a transfer rate, ``unit="items"``
counts. ``advance`` may pass ``total`` (a job often learns its size once it has started); it is
cheap enough to call per block (Rich is imported only when the bar is actually shown). The bar
is transient: it is erased when the job ends.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

Advance = Callable[..., None]

DEFAULT_DELAY = 0.5


class _DelayedBar:
    def __init__(self, description: str, total: int | None, unit: str, enabled: bool, delay: float):
        self.description = description
        self.total = total
        self.unit = unit
        self.enabled = enabled and _stderr_is_terminal()
        self.start = time.monotonic()
        self.delay = delay
        self.completed = 0
        self._progress = None
        self._task = None

    def advance(self, n: int = 1, total: int | None = None) -> None:
        self.completed += n
        if total is not None:
            self.total = total
        if not self.enabled:
            return
        if self._progress is None:
            if time.monotonic() - self.start < self.delay:
                return
            self._show()
        self._progress.update(self._task, completed=self.completed, total=self.total)

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        columns = [TextColumn("[progress.description]{task.description}"), BarColumn()]
        if self.unit == "bytes":
            columns += [DownloadColumn(), TransferSpeedColumn()]
        else:
            columns += [MofNCompleteColumn()]
        columns.append(TimeRemainingColumn())
        self._progress = Progress(*columns, console=Console(stderr=True), transient=True)
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=self.total, completed=self.completed)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_bar(description: str, total: int | None = None, *, unit: str = "bytes",
                 enabled: bool = True, delay: float = DEFAULT_DELAY) -> Iterator[Advance]:
    """Yield ``advance(n, total=None)``; see the module docstring."""
    bar = _DelayedBar(description, total, unit, enabled, delay)
    try:
        yield bar.advance
    finally:
        bar.close()
