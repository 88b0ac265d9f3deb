"""``memcli view``: one self-contained HTML page of an agent's memory.

The page is ``page.html`` with ``page.css`` and ``page.js`` inlined and the page model
(:mod:`memcli.view.data`) embedded as JSON in a ``<script type="application/json">`` element.
Invariants:

* **Self-contained**: nothing is fetched — no network, no CDN, no font; a Content-Security-Policy
  allows only the page's own inline style and script, so it works from ``file://`` and offline.
* **Stored text is data**: the JSON is embedded with ``<``, ``>`` and ``&`` written as ``\\u003c``,
  ``\\u003e``, ``\\u0026`` (a transcript holding ``</script>`` cannot close the element), and the
  script puts text into the page through ``textContent`` only, so no markup or script from a
  transcript runs (tested with ``<script>`` and ``onerror=`` in a real browser).
* **Small**: the model holds each text once (a tool result is folded into its call); long texts
  are drawn clipped and expanded on demand, and a call's arguments and result are built into the
  page only when the reader opens them.
* The file is written like an export (:func:`memcli.export.output.atomic_output`): complete or
  not at all, mode 0600, never inside the store.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["ViewResult", "render_page", "write_view"]

_HERE = Path(__file__).resolve().parent


@dataclass
class ViewResult:
    """What ``memcli view`` wrote: the page's ``path`` (None when written to a stream), its size
    in ``bytes``, and how many turns, traces and compactions it draws."""

    agent_id: str
    path: str | None
    bytes: int
    turns: int
    traces: int
    compactions: int

    def to_dict(self) -> dict:
        return asdict(self)


def _embed(model: dict) -> str:
    import orjson

    data = orjson.dumps(model)
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026").decode()


def render_page(model: dict) -> str:
    """The HTML page of a page model (:func:`memcli.view.data.collect`)."""
    import html

    template = (_HERE / "page.html").read_text(encoding="utf-8")
    parts = {"$title": html.escape(model["agent"]), "$css": (_HERE / "page.css").read_text(encoding="utf-8"),
             "$js": (_HERE / "page.js").read_text(encoding="utf-8")}
    for marker, value in parts.items():
        template = template.replace(marker, value, 1)
    return template.replace("$data", _embed(model), 1)   # last: stored text never meets a marker


def write_view(memory_dir: str | os.PathLike, agent_id: str, output: str | os.PathLike | None = None, *,
               stream=None, model: str | None = None, max_context_tokens: int | None = None) -> ViewResult:
    """Draw ``agent_id``'s page into ``output`` (default ``./<agent>.html``), or into ``stream``
    (a binary file) when given. Reads the store; writes only the page."""
    from memcli.export.output import atomic_output, check_target
    from memcli.store.agent import AgentStore
    from memcli.view.data import collect

    store = AgentStore(memory_dir, agent_id)
    target = None
    if stream is None:
        target = check_target(Path(output if output is not None else f"{agent_id}.html"), Path(memory_dir))
    page_model = collect(store, model=model, max_context_tokens=max_context_tokens)
    page = render_page(page_model).encode("utf-8")
    if stream is not None:
        stream.write(page)
        stream.flush()
    else:
        with atomic_output(target) as out:
            out.write(page)
    traces = page_model["traces"]
    return ViewResult(agent_id, str(target) if target is not None else None, len(page), len(page_model["turns"]),
                      traces, len(page_model["compactions"]))
