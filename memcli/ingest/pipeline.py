"""Ingest: validated events in, durable RAW_TRACE lines out (docs/design.md §2–§3).

Batch mode (the default) is all-or-nothing: under the agent lock, every event is validated,
de-duplicated by id, stamped (``id``, ``ts``, ``source_event``) and linked (``turn_id``, ``seq``)
and its final line staged to an anonymous temporary file; only if no event was rejected is the
staged file appended to ``raw_traces.jsonl`` in one go and fsynced
(:meth:`memcli.store.agent.WriteSession.append_staged`). A rejected input leaves every file
byte-identical. Memory stays flat for any input size: events stream through, only the 16-byte
digests of ids given in the input are held (to catch the same id twice in one input).

Stream mode (``stream=True``) commits small batches as they arrive — whatever the pipe has
ready, at most ``STREAM_MAX_DELAY`` seconds after the first event of a batch — so a long-lived
``agent | memcli ingest --stream`` has its events on disk within a second. A bad event stops the
stream after the events before it were committed.

A trace carrying ``harness_compaction`` (an agent harness's own compaction summary) is also
written as an episodic item by the same commit (memcli.store.harness_items).

An event whose ``id`` the agent already has (in active or archive) or that appeared earlier in
the same input is skipped and counted as a duplicate: re-ingesting is a no-op.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Callable, Iterable, Protocol

import orjson

from memcli.bulk import cyclic_gc_paused
from memcli.errors import InputError
from memcli.events import DEFAULT_SOURCE_EVENT, validate_event
from memcli.ids import new_id_value
from memcli.models import HARNESS_COMPACTION, TAG_SIDECHAIN
from memcli.store import jsonl
from memcli.store.agent import AgentStore, WriteSession
from memcli.store.harness_items import SpanTracker
from memcli.store.id_index import digest
from memcli.store.ledger import check_ledger
from memcli.store.state import is_context_event

MAX_REPORTED_ERRORS = 10
STREAM_MAX_DELAY = 0.2
STREAM_MAX_BATCH = 5000

EventItem = tuple[int, object]  # (input line, event dict | InputError)
REDACT_CHUNK = 256


class NoEvents(InputError):
    """An input with no event at all (:func:`require_a_valid_event`): nothing was written. A
    caller for which that is not a failure (a hook on a transcript not yet written) catches it."""


class Redactor(Protocol):
    """What the pipeline needs of a redactor (``memcli.redact`` is one)."""

    def candidate_lines(self, lines: list[bytes], blob: bytes) -> list[int]: ...  # may list a clean line, never misses one

    def redact_event_counts(self, event: dict, *, prechecked: bool) -> Counter: ...  # in place; replacements by kind

# asked about an item that is not a valid event: True = taken elsewhere (e.g. a memory record of
# an export), an InputError = rejected for that reason, False = an invalid event after all
Divert = Callable[[int, object], "bool | InputError"]


class IngestResult:
    def __init__(self, agent_id: str):
        self.agent_id = agent_id
        self.format = "native"
        self.detected = False      # format picked by --from auto
        self.values = 0            # JSON values read from the input (records, lines)
        self.events = 0            # events offered (valid or not)
        self.appended = 0
        self.duplicates = 0
        self.invalid = 0
        self.turns: set = set()
        self.trace_types: Counter = Counter()
        self.skipped: Counter = Counter()  # importer: things it did not understand
        self.redacted = 0
        self.redacted_kinds: Counter = Counter()  # secrets replaced, by kind
        self.errors: list = []     # first InputErrors (kept or reported)
        self.notes: list = []      # repairs and recoveries done on the way
        self.meta: dict = {}       # importer: what the harness says about the session (title, PR links)

    def __repr__(self) -> str:
        """``IngestResult(agent_id='a', format='native', appended=3, duplicates=0, invalid=0,
        turns=1, tool_calls=1)``: what a REPL or a log line needs."""
        return (f"IngestResult(agent_id={self.agent_id!r}, format={self.format!r}, appended={self.appended}, "
                f"duplicates={self.duplicates}, invalid={self.invalid}, turns={len(self.turns)}, "
                f"tool_calls={self.trace_types.get('tool_call', 0)}"
                + (f", redacted={self.redacted}" if self.redacted else "") + ")")

    def summary(self) -> str:
        calls = self.trace_types.get("tool_call", 0)
        results = self.trace_types.get("tool_result", 0)
        parts = [
            f"ingested {self.appended} event{'s' if self.appended != 1 else ''} into {self.agent_id!r}"
            f" ({len(self.turns)} turn{'s' if len(self.turns) != 1 else ''},"
            f" {calls} tool call{'s' if calls != 1 else ''}, {results} result{'s' if results != 1 else ''})"
        ]
        if self.detected:
            parts.append(f"format {self.format} (detected)")
        elif self.format != "native":
            parts.append(f"format {self.format}")
        if self.duplicates:
            parts.append(f"{self.duplicates} already present")
        if self.invalid:
            parts.append(f"{self.invalid} invalid skipped")
        if self.redacted:
            from memcli.redact import describe_counts

            parts.append(describe_counts(self.redacted_kinds))
        if self.skipped:
            parts.append("skipped " + ", ".join(f"{n} {kind}" for kind, n in sorted(self.skipped.items())))
        return "; ".join(parts)


class _Batch:
    """Stages one batch of events against a write session's state."""

    def __init__(self, session: WriteSession, result: IngestResult, redactor: Redactor | None,
                 source_event: str, skip_invalid: bool, divert: Divert | None = None):
        self.session = session
        self.result = result
        self.redactor = redactor
        self.divert = divert
        self.source_event = source_event
        self.skip_invalid = skip_invalid
        self.state = session.state.copy()
        self.base = jsonl.file_size(session.paths.active)
        self.staged = anonymous_temp_file()
        self.staged_len = 0
        self.digests = bytearray()
        self.seen: set[bytes] = set()
        self.rejected: InputError | None = None
        self.stop_at_first_rejection = False
        state = session.state
        self.harness = SpanTracker(state.active_count + state.archive_count == 0, state.turn_counter)
        self.restored: list = ()   # (kind, record) of the input's own memory records (an export's)

    def add_all(self, items: Iterable[EventItem]) -> None:
        """Validate, de-duplicate, stamp, link and stage events."""
        # The loop makes no reference cycles; the cyclic collector would only rescan the large,
        # long-lived id set and state again and again (~20% of the time), so it is paused.
        with cyclic_gc_paused():
            self._stage(items)

    def _stage(self, items: Iterable[EventItem]) -> None:
        """The ingest hot path: locals only, one pass, nothing kept per event but its id key."""
        result = self.result
        state = self.state
        ids = self.session.ids
        seq_lookup = self.session.seq_lookup
        seen = self.seen
        digests = self.digests
        source_event = self.source_event
        turns_add = result.turns.add
        type_counts = result.trace_types
        dumps = orjson.dumps
        now = time.time
        offset = self.base + self.staged_len
        appended = 0
        last_ts = state.last_ts if state.last_ts is not None else float("-inf")
        chunk: list = []       # events staged but not yet written, checked for secrets together
        chunk_lines: list = []  # their lines
        chunk_start = offset
        offered = 0
        rejected = self.rejected is not None
        harness = self.harness     # the turns each harness compaction covered (memcli.store.harness_items)
        span_append = harness.span.append
        span_last = harness.span[-1] if harness.span else None
        for line, item in items:
            offered += 1
            try:
                if type(item) is not dict and isinstance(item, InputError):
                    raise item
                event = validate_event(item, line)
            except InputError as exc:
                # not an event: perhaps a record another part of memcli takes (checked only on
                # this rare path, so ordinary events pay nothing for it)
                taken = self.divert(line, item) if self.divert is not None else False
                if taken is True:
                    offered -= 1
                    continue
                self._reject(taken or exc)
                rejected = self.rejected is not None
                if self.stop_at_first_rejection and rejected:
                    break
                continue
            if rejected:
                continue  # keep validating to report every problem, but stage nothing more
            trace_id = event.get("id")
            if trace_id is not None:
                d = digest(trace_id)
                if d in seen or ids.contains(d):
                    result.duplicates += 1
                    if HARNESS_COMPACTION in event:
                        harness.present.append(trace_id)   # stored before harness items existed? (commit)
                    continue
                seen.add(d)
            else:
                value = new_id_value()
                event["id"] = f"rt_{value:032x}"
                d = value.to_bytes(16, "big")
            ts = event.get("ts")
            if ts is None:
                ts = event["ts"] = now()
            if "source_event" not in event:
                event["source_event"] = source_event
            state.assign(event, seq_lookup, offset)
            if HARNESS_COMPACTION in event:
                harness.harness(event)
                span_append, span_last = harness.span.append, None
            else:
                if event["turn_id"] != span_last and not is_context_event(event):
                    # a turn is covered by its asks and steps; the harness's own lines after a summary
                    # (a /compact caveat, its command, its output) join its turn without being new work
                    span_last = event["turn_id"]
                    span_append(span_last)
                tags = event.get("tags")
                if tags and TAG_SIDECHAIN in tags and isinstance(event.get("agent_id"), str):
                    harness.subagent(event["agent_id"], event["turn_id"])   # for its own compaction
            try:
                line_bytes = dumps(stored_record(event)) + b"\n"
            except TypeError as exc:   # (what JSON input gives orjson.dumps: only a value nested too deep)
                raise InputError(f"not storable: {exc} (nested more than 254 levels deep)", line=line) from None
            chunk.append(event)
            chunk_lines.append(line_bytes)
            offset += len(line_bytes)
            if len(chunk) >= REDACT_CHUNK:
                offset = self._write_chunk(chunk, chunk_lines, chunk_start)
                chunk, chunk_lines, chunk_start = [], [], offset
            digests += d
            appended += 1
            if ts > last_ts:
                last_ts = ts
            turns_add(event["turn_id"])
            type_counts[event["trace_type"]] += 1
        result.events += offered
        if chunk:
            offset = self._write_chunk(chunk, chunk_lines, chunk_start)
        self.staged_len = offset - self.base
        state.active_count += appended
        result.appended += appended
        if appended:
            state.last_ts = last_ts

    def _write_chunk(self, chunk: list, lines: list, start: int) -> int:
        """Write staged events (``chunk``), whose lines are ``lines``, at ``start``; returns the
        end offset.

        Redaction runs here, after the id check (a re-import pays nothing for known events) and
        on a whole chunk at once: one scan of ~``REDACT_CHUNK`` lines for every rule's anchors
        (memcli.redact) names the few lines a rule may match; only their events are looked at.
        A redacted line changes length, so the byte offsets the state recorded for the chunk's
        unanswered calls are corrected.
        """
        blob = b"".join(lines)
        redactor = self.redactor
        if redactor is not None:
            changed = False
            for i in redactor.candidate_lines(lines, blob):
                event = chunk[i]
                found = redactor.redact_event_counts(event, prechecked=True)
                if found:
                    self.result.redacted += sum(found.values())
                    self.result.redacted_kinds.update(found)
                    lines[i] = orjson.dumps(stored_record(event)) + b"\n"
                    changed = True
            if changed:
                blob = b"".join(lines)
                pos = start
                for event, line in zip(chunk, lines):
                    if event["trace_type"] == "tool_call":
                        self.state.move_pending_offset(event["tool_call_id"], event["id"], pos)
                    pos += len(line)
        self.staged.write(blob)
        return start + len(blob)

    def _reject(self, exc: InputError) -> None:
        result = self.result
        result.invalid += 1
        if len(result.errors) < MAX_REPORTED_ERRORS:
            result.errors.append(exc)
        if not self.skip_invalid and self.rejected is None:
            self.rejected = exc

    def commit(self) -> None:
        try:
            if self.rejected is None and self.staged_len:
                self.staged.flush()
                harness = self.harness if self.harness.pending else None
                if harness is not None:
                    harness.skip_ids = {record.get("id") for kind, record in self.restored if kind == "episodic"}
                self.session.append_staged(self.staged, self.staged_len, bytes(self.digests), self.state,
                                           harness=harness)
            if self.rejected is None and self.harness.present:
                self.session.catch_up_harness_items(self.harness.present)
        finally:
            self.staged.close()


def stored_record(event: dict) -> dict:
    """The line written for a stamped, validated event: RawTrace's required fields first, in
    AutoByteus' order, then the event's other fields in the order they came (known or not).

    (Not the full declaration order of :func:`memcli.models.to_record`: sorting the optional
    fields cost ~1.5 µs per event, a fifth of ingest, for a cosmetic difference.)"""
    record = {"id": event["id"], "ts": event["ts"], "turn_id": event["turn_id"], "seq": event["seq"],
              "trace_type": event["trace_type"], "content": event["content"],
              "source_event": event["source_event"]}
    record.update(event)
    return record


def anonymous_temp_file(directory: str | None = None):
    """An unnamed read/write temp file (Linux ``O_TMPFILE``: nothing on disk can be planted in its
    place or left behind); ``tempfile.TemporaryFile`` elsewhere."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            fd = os.open(directory or _tmp_dir(), flag | os.O_RDWR, 0o600)
            return os.fdopen(fd, "w+b")
        except OSError:
            pass
    import tempfile

    return tempfile.TemporaryFile(dir=directory)


def _tmp_dir() -> str:
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value and os.path.isdir(value):
            return value
    return "/tmp"


def _notes(session: WriteSession, result: IngestResult) -> None:
    result.notes.extend(session.recovered)
    result.notes.extend(r.describe() for r in session.repairs)


def ingest_events(store: AgentStore, items: Iterable[EventItem], *, skip_invalid: bool = False,
                  redactor: Redactor | None = None, source_event: str = DEFAULT_SOURCE_EVENT,
                  result: IngestResult | None = None, divert: Divert | None = None,
                  restored: list | None = None) -> IngestResult:
    """All-or-nothing ingest of ``items`` (see the module docstring). Raises the first
    :class:`InputError` (nothing written) unless ``skip_invalid``. ``restored``: the list
    ``divert`` fills with the input's memory records; a harness item among them is restored in
    its place afterwards, not derived again here."""
    result = result or IngestResult(store.agent_id)
    with store.writer() as session:
        _notes(session, result)
        batch = _Batch(session, result, redactor, source_event, skip_invalid, divert)
        batch.restored = restored if restored is not None else ()
        try:
            batch.add_all(items)
        except BaseException:
            batch.staged.close()
            raise
        if batch.rejected is not None:
            batch.staged.close()
            raise _rejection(batch.rejected, result)
        if batch.restored:   # an export's memory: restoring it reads and appends to the ledger
            try:
                check_ledger(session.paths.ledger, store.agent_id, "ingest")   # a bad line refuses now
            except BaseException:
                batch.staged.close()
                raise
        batch.commit()
    return result


def require_a_valid_event(result: IngestResult, memory: list | tuple = ()) -> None:
    """``--skip-invalid`` over an input in which no event is valid is a failure (exit 1), not
    "ingested 0 events": the input is not what the user thinks it is. Nor is an input with no
    event at all (empty, or blank lines), unless it holds ``memory`` records (an export of memory
    alone). An input whose records the importer read and passed over (a session's first,
    metadata-only lines) is not empty: it ingests nothing and says so."""
    if result.events == 0 and not memory and not result.values:
        raise NoEvents(f"no events in the input (format {result.format})", hint="nothing was written")
    if result.invalid and result.events <= result.invalid:
        first = result.errors[0] if result.errors else None
        raise InputError(f"no valid event in the input: {result.invalid} invalid"
                         + (f" (first: {first})" if first else "") + "; nothing was written",
                         hint="check the input's format (--from NAME names it)")


def _rejection(first: InputError, result: IngestResult) -> InputError:
    others = result.invalid - 1
    if result.events <= result.invalid:  # no event is valid: --skip-invalid would ingest nothing
        first.hint = ((f"{others} more invalid event{'s' if others != 1 else ''}; " if others > 0 else "")
                      + "nothing was written; no event of the input is valid")
    elif others > 0:
        shown = "; ".join(str(e) for e in result.errors[1:4])
        first.hint = (f"{others} more invalid event{'s' if others != 1 else ''} ({shown}{'; ...' if others > 3 else ''}); "
                      "nothing was written; --skip-invalid ingests the valid ones")
    else:
        first.hint = "nothing was written; --skip-invalid ingests the valid events and reports the others"
    return first


def ingest_live(store: AgentStore, items: Iterable[EventItem], set_idle_callback: Callable[[Callable[[], None]], None],
                *, skip_invalid: bool = False, redactor: Redactor | None = None,
                source_event: str = DEFAULT_SOURCE_EVENT, result: IngestResult | None = None,
                max_batch: int = STREAM_MAX_BATCH, divert: Divert | None = None) -> IngestResult:
    """Stream mode: commit events in small batches as they arrive.

    ``items`` is lazily produced from a live input whose reader calls the callback registered
    through ``set_idle_callback`` whenever it is about to wait for more input (or has been
    reading for ``STREAM_MAX_DELAY`` without a pause); that callback commits what has arrived.
    Nothing is staged or locked while waiting. The first invalid event stops the stream after the
    events before it were committed, unless ``skip_invalid``.
    """
    result = result or IngestResult(store.agent_id)
    buffer: list[EventItem] = []

    def flush() -> None:
        if not buffer:
            return
        items_now = list(buffer)
        buffer.clear()
        with store.writer() as session:
            _notes(session, result)
            batch = _Batch(session, result, redactor, source_event, skip_invalid, divert)
            batch.stop_at_first_rejection = True
            batch.add_all(items_now)
            rejected, batch.rejected = batch.rejected, None  # commit what came before it
            batch.commit()
        if rejected is not None:
            rejected.hint = "events before it were committed (--stream); --skip-invalid skips bad events"
            raise rejected

    set_idle_callback(flush)
    for item in items:
        buffer.append(item)
        if len(buffer) >= max_batch:
            flush()
    flush()
    return result
