"""``export()``: what ``memcli export`` does, as one library call."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from memcli.errors import TurnNotFoundError, UsageError
from memcli.export.output import atomic_output, check_target, stdout_output
from memcli.export.provider import PROVIDER_FORMATS, require_renderers, write_provider_messages
from memcli.export.reader import open_history
from memcli.filters import TraceFilter
from memcli.sizes import format_size
from memcli.store.agent import AgentStore

FORMATS = ("jsonl", "json", "markdown", "openai", "anthropic")

ExportProgress = Callable[[int, int], None]  # (bytes just read, total bytes to read)


@dataclass
class ExportResult:
    agent_id: str
    format: str
    target: str | None = None     # the file written, None for stdout
    traces: int = 0
    episodic: int = 0
    semantic: int = 0
    memory_files: int = 0         # working-memory log records (memcli.store.memory_files)
    bytes_read: int = 0
    bytes_written: int = 0
    notes: list = field(default_factory=list)  # what a provider format left out, for stderr

    def count_memory(self, kind: str) -> None:
        if kind == "episodic":
            self.episodic += 1
        elif kind == "semantic":
            self.semantic += 1
        else:
            self.memory_files += 1

    def summary(self) -> str:
        what = f"{self.traces} trace{'s' if self.traces != 1 else ''}"
        if self.episodic or self.semantic:
            what += f", {self.episodic} episodic and {self.semantic} semantic item{'s' if self.semantic != 1 else ''}"
        if self.memory_files:
            what += (f", {self.memory_files} working-memory record{'s' if self.memory_files != 1 else ''}")
        where = f" to {self.target} ({format_size(self.bytes_written)})" if self.target else ""
        return f"exported {what} of {self.agent_id!r} as {self.format}{where}"


def _writer(fmt: str):
    if fmt == "jsonl":
        from memcli.export.jsonl import write_jsonl

        return write_jsonl
    if fmt == "json":
        from memcli.export.jsonl import write_json

        return write_json
    if fmt == "markdown":
        from memcli.export.markdown import write_markdown

        return write_markdown
    return lambda *args, **kwargs: write_provider_messages(fmt, *args, **kwargs)


def export(memory_dir: str | os.PathLike, agent_id: str, *, fmt: str = "jsonl",
           output: str | os.PathLike | None = None, with_memory: bool = False,
           turns: list[str] | None = None, since: str | None = None, until: str | None = None,
           progress: ExportProgress | None = None, stdout: BinaryIO | None = None) -> ExportResult:
    """Export ``agent_id``'s complete history (archive, then active) in ``fmt`` to ``output``
    (a path; ``None`` or ``-`` means ``stdout``, default ``sys.stdout.buffer``).

    Streams with flat memory. A file target appears only when the export is complete
    (:mod:`memcli.export.output`). Raises UsageError for bad arguments, AgentNotFoundError /
    RecordNotFoundError (``--turn`` that matches nothing) and CorruptStoreError.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    store = AgentStore(memory_dir, agent_id)  # validates the agent id
    flt = TraceFilter.from_options(since=since, until=until, turns=turns)
    if fmt in PROVIDER_FORMATS:
        require_renderers(fmt)
    target = None
    if output is not None and str(output) != "-":
        target = check_target(Path(output), Path(memory_dir))
    store.require()
    result = ExportResult(store.agent_id, fmt, str(target) if target is not None else None)
    write = _writer(fmt)
    with open_history(store) as history:
        total = history.trace_bytes + (history.memory_bytes if with_memory else 0)

        def advance(n: int) -> None:
            result.bytes_read += n
            if progress is not None:
                progress(n, total)

        if progress is not None:
            progress(0, total)
        sink = atomic_output(target) if target is not None else stdout_output(stdout)
        with sink as out:
            write(history, out, flt, with_memory=with_memory, result=result, progress=advance)
            missing = flt.missing_turns()
            if missing:
                error = TurnNotFoundError(store.agent_id, missing)
                if target is not None:
                    error.hint += "; nothing was written"
                raise error
    if target is not None:
        result.bytes_written = target.stat().st_size
    return result
