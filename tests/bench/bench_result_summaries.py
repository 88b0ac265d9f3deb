"""``snapshot --expire TOOL=TURNS:summary`` against ``:clip`` on real sessions (docs/compaction.md,
"Result summaries"): for each corpus session with long tool results, the offline summaries of
every result of at least 2,000 characters are stored (``memcli summarize-results``), then

* **tokens**: the working snapshot with ``--expire '*=0:summary'`` as a ratio to the same with
  ``--expire '*=0:clip=2000'`` (the baseline: clipping at the fallback's length);
* **identifiers kept**: of the identifiers the agent used *after* each result (in its notes and
  call arguments) that the result contains, the share still present in the summary, as a ratio
  to the share present in a clip of the result to the summary's own length (same size, so the
  comparison is of what is kept, not of how much).

    python tests/bench/run_all.py result_summaries
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPORA = REPO.parent / "shared" / "corpora"
SESSIONS = ["claude-code/spotter_258c7280_compacted_by_claude-code.jsonl",
            "claude-code/ccviewer_fe5e1c67_todo-app_438ev.jsonl"]
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def _clip(text: str, limit: int) -> str:
    head = limit - limit // 4
    return text[:head] + text[len(text) - (limit - head):] if len(text) > limit else text


def run() -> list[dict]:
    from memcli.api import Memory
    from memcli.compaction.results import _select
    from memcli.store.agent import AgentStore

    rows = []
    for name in SESSIONS:
        path = CORPORA / name
        if not path.exists():
            continue
        tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-rsum-"))
        try:
            agent = Memory(tmp / "memory").agent("s")
            agent.ingest(path, "claude-code")
            candidates, _ = _select(AgentStore(tmp / "memory", "s"), tools=set(), older_than=0, min_chars=2000, done=set())
            later = {c.result.id: c.later for c in candidates}
            report = agent.summarize_results(min_chars=2000)
            texts = {c.result.id: c.text for c in candidates}
            kept_summary = kept_clip = total = 0
            for item in report.summarized:
                text = texts[item.trace_id]
                wanted = set(IDENT.findall(text)) & later[item.trace_id]
                total += len(wanted)
                kept_summary += len(wanted & set(IDENT.findall(item.summary)))
                kept_clip += len(wanted & set(IDENT.findall(_clip(text, len(item.summary)))))
            summary = agent.snapshot("openai-chat", full=True, expire=("*=0:summary",))
            clipped = agent.snapshot("openai-chat", full=True, expire=("*=0:clip=2000",))
            label = name.split("/")[1][:28]
            rows.append({"name": f"result summaries: tokens :summary / :clip=2000 ({label})",
                         "value": summary.tokens, "baseline": clipped.tokens, "unit": "t", "target": 1.0,
                         "note": f"{len(report.summarized)} results, {report.chars_before:,} → {report.chars_after:,} "
                                 f"characters; snapshot {summary.tokens:,} vs {clipped.tokens:,} tokens"})
            rows.append({"name": f"result summaries: identifiers kept, summary / same-size clip ({label})",
                         "value": max(kept_summary, 1e-9), "baseline": max(kept_clip, 1e-9), "unit": " ",
                         "target": None,
                         "note": f"of {total} identifiers the agent used later: summary keeps {kept_summary} "
                                 f"({kept_summary / max(total, 1):.0%}), a clip of the same length {kept_clip} "
                                 f"({kept_clip / max(total, 1):.0%})"})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows
