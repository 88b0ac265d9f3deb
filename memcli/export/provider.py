"""``--format openai`` / ``--format anthropic``: the whole history as a provider message list.

The mapping from traces to provider messages (tool calls and results as native structures,
pairing, role alternation) is the snapshot renderers' job (:mod:`memcli.renderers`, DESIGN.md §5);
export must not write it a second time. This module is the one seam between the two:
:func:`write_provider_messages` hands the history to the renderer and streams its output.

Until the renderers are part of this build, asking for these formats is a usage error, raised
before any output is opened.
"""

from __future__ import annotations

from typing import BinaryIO

from memcli.errors import UsageError

PROVIDER_FORMATS = {"openai": "openai-chat", "anthropic": "anthropic"}


def require_renderers(fmt: str):
    """The renderers module, or a UsageError saying this build has none."""
    try:
        import memcli.renderers as renderers
    except ModuleNotFoundError as exc:
        if exc.name not in ("memcli.renderers",):
            raise
        raise UsageError(
            f"--format {fmt} needs the snapshot renderers, which this build does not have yet",
            hint="--format jsonl, json or markdown work now",
        ) from None
    return renderers


def write_provider_messages(fmt: str, history, out: BinaryIO, flt, *, with_memory: bool, result,
                            progress=None) -> None:
    """Write the (filtered) history as one provider payload to ``out``, streaming.

    Wiring point for the renderers. With the streaming interface the snapshot branch documents
    (memcli/renderers/__init__.py there), this becomes::

        from memcli.export.markdown import _trace            # dict -> RawTrace, fast path
        from memcli.renderers import get_renderer
        from memcli.snapshot.build import build_messages
        renderer = get_renderer(PROVIDER_FORMATS[fmt])
        select = flt.matches if flt.active else None
        traces = (_trace(r) for r in history.iter_trace_records(progress, select=select))
        messages = build_messages(traces, lookahead=10_000, id_capacity=1_000_000)
        if with_memory:  # the live items, as snapshot's memory bundle (assemble.memory_message)
            messages = itertools.chain([memory_message(episodic, semantic)], messages)
        for chunk in renderer.iter_chunks("", messages):
            out.write(chunk)
        # count result.traces in the generator; renderer.notes.lines() -> stderr

    and ``test_provider_formats_need_the_renderers`` (tests/test_export.py) becomes a test that
    the payload is the snapshot renderer's for the whole history.
    """
    require_renderers(fmt)
    raise UsageError(f"--format {fmt} is not wired to the snapshot renderers in this build")
