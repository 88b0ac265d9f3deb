"""``ingest()``: what ``memcli ingest`` does, as one library call."""

from __future__ import annotations

import os
from typing import IO, Callable

from memcli.errors import InputError, UsageError
from memcli.importers import resolve
from memcli.ingest.pipeline import IngestResult, Redactor, ingest_events, ingest_live, require_a_valid_event
from memcli.ingest.source import LiveLines, iter_json_values, open_input, values_from_lines
from memcli.store.agent import AgentStore


def ingest(memory_dir: str | os.PathLike, agent_id: str, file: str | os.PathLike | None = None, *,
           fmt: str = "auto", stream: bool = False, skip_invalid: bool = False,
           redact: bool = True, stdin: IO[bytes] | None = None, split: bool = False,
           on_detect: Callable[[str], None] | None = None):
    """Ingest ``file`` (or stdin) into ``agent_id``. Raises InputError on bad input (nothing
    written in batch mode), UsageError for unusable arguments, StoreError for store problems.

    ``on_detect`` is told the format ``--from auto`` picked. ``redact`` replaces well-known
    secret formats before anything is written (memcli.redact).

    A file of several conversations is refused (InputError naming how many) unless ``split``:
    then each becomes agent ``<agent_id>.<key>`` (memcli.importers.conversations) and the result
    is a :class:`memcli.ingest.split.SplitResult`.
    """
    store = AgentStore(memory_dir, agent_id)  # validates the agent id before any path is used
    redactor: Redactor | None = None
    if redact:
        import memcli.redact as redactor
    result = IngestResult(store.agent_id)
    if stream:
        if split:
            raise UsageError("{split} reads a whole file: it cannot be combined with {stream}", param="split", also=("stream",))
        if file is not None and str(file) != "-":
            try:
                source = open(file, "rb")
            except OSError as exc:
                raise UsageError(f"cannot read {file}: {exc.strerror}") from None
        else:
            source = stdin if stdin is not None else _stdin()
        live = LiveLines(source)
        try:
            importer, values = resolve(fmt, values_from_lines(live), _name(file), sniff_values=1)
            _detected(importer, fmt, result, on_detect)
            memory, divert = _memory_records(importer)
            events = importer.events(_counted(values, result), result)
            ingest_live(store, events, live.set_idle_callback, skip_invalid=skip_invalid,
                        redactor=redactor, source_event=importer.source_event, result=result, divert=divert)
        except InputError as exc:
            _name_the_file(exc, _name(file))
            raise
        require_a_valid_event(result, memory)
        # (a stream's traces are written as they come: by then only its memory records are not)
        _restore_memory(store, memory, result, f"its {result.appended} new traces were written as they came, its "
                                               "memory records were not" if result.appended else "nothing was written")
        return result
    f, name = open_input(file, stdin)
    with f:
        try:
            importer, values = resolve(fmt, iter_json_values(f), name)
            _detected(importer, fmt, result, on_detect)
            values = _one_conversation(importer, values, name, split)
            if split:
                return _split(memory_dir, agent_id, importer, values, result, skip_invalid, redactor)
            memory, divert = _memory_records(importer)
            events = importer.events(_counted(values, result), result)
            ingest_events(store, events, skip_invalid=skip_invalid, redactor=redactor,
                          source_event=importer.source_event, result=result, divert=divert, restored=memory)
            require_a_valid_event(result, memory)
        except InputError as exc:
            exc.hint = exc.hint or "nothing was written"
            _name_the_file(exc, name)
            raise
    _restore_memory(store, memory, result)
    if name != "<stdin>":
        _remember_source(store, result.format, name)
    return result


def _name_the_file(exc: InputError, name: str) -> None:
    """``line 420: not valid JSON …`` becomes ``FILE: line 420: …``, as ``sync`` and the hooks say
    it: where the bad line is, whole (stdin has no name)."""
    if exc.line is not None and name != "<stdin>" and name not in str(exc):
        exc.message = f"{name}: {exc}"


def _remember_source(store: AgentStore, fmt: str, path: str) -> None:
    """An agent imported from a file records where from (``agents --json``: ``source``,
    ``source_path``), once: a synced agent's own record (memcli.sync) is kept."""
    from memcli.store.sync_state import read_source_meta, write_source_meta

    if not store.exists() or read_source_meta(store.paths) is not None:
        return
    write_source_meta(store, {"source": fmt, "source_path": os.path.abspath(path)})


def _one_conversation(importer, values, name: str, split: bool):
    """The values of the file's one conversation; with ``split``, the list of its conversations.
    A file of several conversations without ``split`` is refused."""
    conversations_of = getattr(importer, "conversations", None)
    if conversations_of is None:
        if not split:
            return values
        from memcli.importers.conversations import Conversation

        items = list(values)
        return [Conversation(1, None, items[0][0] if items else 1, items)]
    conversations = list(conversations_of(values))
    if split:
        return conversations
    if len(conversations) > 1:
        raise InputError(
            f"{name} holds {len(conversations)} conversations ({importer.name}); importing them into one agent"
            " would glue unrelated histories together",
            hint="nothing was written; --split imports each into its own agent AGENT.<id or index>")
    return conversations[0].values if conversations else []


def _split(memory_dir, agent_id, importer, conversations, result, skip_invalid, redactor):
    from memcli.ingest.split import SplitResult, ingest_split

    split_result = SplitResult(agent_id, len(conversations))
    split_result.format, split_result.detected = result.format, result.detected
    return ingest_split(memory_dir, agent_id, importer, conversations, skip_invalid=skip_invalid,
                        redactor=redactor, result=split_result)


def _counted(values, result: IngestResult):
    """``values``, counted into ``result.values`` as the importer reads them."""
    for value in values:
        result.values += 1
        yield value


def _memory_records(importer):
    """(sink, divert): memory items of a ``memcli export --with-memory`` stream are set aside
    into ``sink`` by the pipeline's ``divert`` hook (memcli.store.memory_records)."""
    memory: list = []
    if importer.name != "native":
        return memory, None
    from functools import partial

    from memcli.store.memory_records import divert_memory_record

    return memory, partial(divert_memory_record, sink=memory)


def _restore_memory(store, memory: list, result: IngestResult, written: str = "nothing was written") -> None:
    if memory:
        from memcli.store.memory_records import restore_memory

        result.notes.append(restore_memory(store, memory, written))


def _stdin():
    import sys

    return sys.stdin.buffer


def _name(file) -> str:
    return "<stdin>" if file is None or str(file) == "-" else str(file)


def _detected(importer, fmt: str, result: IngestResult, on_detect) -> None:
    result.format = importer.name
    result.detected = fmt == "auto"
    if result.detected and on_detect is not None:
        on_detect(importer.name)
