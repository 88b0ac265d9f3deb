"""The text a harness's session-start hook gives the model back (after a compaction, on resume).

Sections, in this order of priority, each taken while the whole stays within ``max_chars``
(default 10,000: Claude Code shows at most that many characters of a hook's output, the rest only
as a preview in a file; Codex's limit is the same):

1. a header naming the agent and how to search the rest (``memcli --dir D search AGENT QUERY``);
2. **Latest ask** — the newest user ask of the agent's active history, verbatim (clipped to a
   quarter of the budget);
3. **Pinned facts** — every live fact tagged ``pinned`` (``memcli remember --pin``);
4. **Working memory** — the ``/memories`` files, each clipped to what is left;
5. **Relevant memory** — summaries and facts matching the latest ask
   (:func:`memcli.snapshot.recall.select_bundle`, the snapshot's ``--recall auto``, here with
   characters as the unit);
6. **Related history** — up to :data:`MAX_TRACE_HITS` earlier traces matching the latest ask
   (search snippets with their turn and id; ``memcli get AGENT ID`` expands one).

An item that does not fit whole is clipped with ``…``; a section with nothing in it is left out.
The text is plain statements about the project (the harness wraps it as context). An agent with
nothing to say gives "": the hook then prints nothing.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from memcli.store.agent import AgentStore

DEFAULT_MAX_CHARS = 10_000
MAX_TRACE_HITS = 8
ASK_QUERY_CHARS = 400
_ELLIPSIS = "…"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + _ELLIPSIS if limit > 0 else ""


class _Page:
    def __init__(self, max_chars: int):
        self.parts: list[str] = []
        self.left = max_chars

    def add(self, text: str) -> bool:
        if len(text) > self.left:
            return False
        self.parts.append(text)
        self.left -= len(text)
        return True

    def section(self, title: str, items: list[str]) -> None:
        """``## title`` and as many items as fit (the last one clipped to the room left)."""
        head = f"\n## {title}\n"
        if not items or self.left < len(head) + 20:
            return
        self.add(head)
        for item in items:
            line = item if item.endswith("\n") else item + "\n"
            if not self.add(line):
                room = self.left - 1
                if room >= 20:
                    self.add(_clip(line, room) + "\n")
                break

    def text(self) -> str:
        return "".join(self.parts).strip() + "\n" if self.parts else ""


def session_context(store: AgentStore, memory_dir: Path, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The context text for ``store``'s agent (module docstring); "" when it has nothing."""
    from memcli.models import is_pinned
    from memcli.snapshot.recall import latest_user_ask_trace, select_bundle

    if not store.exists():
        return ""
    ask_trace = latest_user_ask_trace(store)
    ask = None if ask_trace is None else ask_trace.content
    bundle = select_bundle(store, recall="auto", memory_tokens=max(0, max_chars // 2), count=len)
    pinned = [f for f in bundle.semantic if is_pinned(f)]
    relevant = [f"- summary {e.id} (turns {e.turn_ids[0] if e.turn_ids else '?'}–"
                f"{e.turn_ids[-1] if e.turn_ids else '?'}): {e.summary.strip()}" for e in bundle.episodic]
    relevant += [f"- fact {f.id}: {f.fact.strip()}" for f in bundle.semantic if f not in pinned]
    files = store.memory_tree().sorted_files()
    if ask is None and not pinned and not relevant and not files:
        return ""

    page = _Page(max_chars)
    dir_arg = shlex.quote(str(Path(memory_dir).absolute()))
    page.add(f"Memory kept by memcli for this session (agent {store.agent_id}). Search the rest with "
             f"`memcli --dir {dir_arg} search {store.agent_id} QUERY`; `memcli --dir {dir_arg} get "
             f"{store.agent_id} ID` shows a record in full.\n")
    if ask is not None:
        page.section("Latest ask", [_clip(ask, max(200, max_chars // 4))])
    page.section("Pinned facts", [f"- {f.fact.strip()} ({f.id})" for f in pinned])
    page.section("Working memory", [f"### {path}\n{content.rstrip()}" for path, content in files])
    page.section("Relevant memory", relevant)
    if ask is not None and page.left > 200:
        page.section("Related history", _trace_hits(store, ask_trace))
    return page.text()


def _trace_hits(store: AgentStore, ask) -> list[str]:
    """Traces matching the latest ask (a RawTrace), before it and after it (the ask itself
    would match every word of itself: each side is searched on its own, so a question's words
    rank the rest), best first."""
    from memcli.errors import UsageError
    from memcli.search import search

    query = ask.content[:ASK_QUERY_CHARS]
    hits = []
    for side in ({"until": ask.ts - 1e-3}, {"since": ask.ts + 1e-3}):
        try:
            hits += search(store, query, limit=MAX_TRACE_HITS, kinds=("trace",), **side).hits
        except UsageError:  # no word to search for
            return []
    hits.sort(key=lambda hit: -hit.score)
    out = []
    for hit in hits[:MAX_TRACE_HITS]:
        what = hit.tool_name or hit.trace_type or hit.kind
        out.append(f"- {hit.turn or ''} {what} {hit.id}: {' '.join(hit.snippet.split())}")
    return out
