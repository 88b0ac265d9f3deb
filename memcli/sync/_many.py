"""What the sources whose one file holds many sessions (chat exports, Goose's database) share:
storing one session's events into its agent, as :func:`memcli.sync.engine.import_session` does
for a session file (same redaction, all-or-nothing ingest, agent metadata)."""

from __future__ import annotations

from memcli.errors import MemcliError


def store_session(memory_dir, source, session, ident, report, items: list, result, *, redact: bool,
                  label: str) -> None:
    """Ingest ``items`` into ``report.agent``; on failure ``report`` says why (``label`` names the
    session in the file) and nothing is written."""
    from memcli.ingest.pipeline import ingest_events
    from memcli.store.agent import AgentStore
    from memcli.sync.engine import _first_ask, _write_meta

    redactor = None
    if redact:
        import memcli.redact as redactor
    store = AgentStore(memory_dir, report.agent)
    try:
        if items:
            ingest_events(store, iter(items), redactor=redactor, source_event=source.name, result=result)
    except MemcliError as exc:
        report.status, report.error = "failed", f"{session.main.path}: {label}: {exc}"
        return
    report.events, report.duplicates, report.skipped = result.appended, result.duplicates, result.skipped
    _write_meta(store, source, session, ident, report, _first_ask(items), result)
