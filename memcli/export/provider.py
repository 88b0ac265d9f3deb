"""``--format openai`` / ``--format anthropic``: the whole history as a provider message list.

The mapping from traces to provider messages (tool calls and results as native structures,
pairing, role alternation) is the snapshot renderers' job (:mod:`memcli.renderers`, docs/design.md §5);
export must not write it a second time. This module is the one seam between the two:
:func:`write_provider_messages` hands the history to the renderer and streams its output.

If a build lacks the renderers, asking for these formats is a usage error, raised before any
output is opened.
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
            f"{{fmt}} {fmt} needs the snapshot renderers, which this build does not have yet",
            hint="--format jsonl, json or markdown work now", param="fmt") from None
    return renderers


def write_provider_messages(fmt: str, history, out: BinaryIO, flt, *, with_memory: bool, result,
                            progress=None) -> None:
    """Write the (filtered) history as one provider payload to ``out``, streaming.

    The snapshot's canonical messages are built from the whole history (archive, then active)
    and rendered by the same renderer ``memcli snapshot --provider`` uses; with ``--with-memory``
    the live memory items come first, as the snapshot's memory bundle. Memory stays bounded:
    a call waits at most ``LOOKAHEAD`` traces for its result before it gets its placeholder.
    What a renderer leaves out (reasoning, unsupported media) is listed in ``result.notes``.
    """
    from itertools import chain

    from memcli.export.markdown import _trace, live_memory
    from memcli.snapshot.assemble import memory_message, sidechain_note
    from memcli.snapshot.build import BuildStats, build_messages

    renderers = require_renderers(fmt)
    renderer = renderers.get_renderer(PROVIDER_FORMATS[fmt])
    lead = []
    if with_memory:
        memory = live_memory(history, flt, progress)
        result.episodic, result.semantic = len(memory.episodic), len(memory.semantic)
        bundle = memory_message(memory.episodic, memory.semantic)
        if bundle is not None:
            lead.append(bundle)

    def traces():
        for record in history.iter_trace_records(progress, select=flt.matches if flt.active else None):
            result.traces += 1
            yield _trace(record)

    stats = BuildStats()
    messages = build_messages(traces(), lookahead=LOOKAHEAD, id_capacity=ID_CAPACITY, stats=stats)
    for chunk in renderer.iter_chunks("", chain(lead, messages)):
        out.write(chunk)
    result.notes.extend(renderer.notes.lines())
    if sidechain_note(stats):
        result.notes.append(sidechain_note(stats))


LOOKAHEAD = 10_000
ID_CAPACITY = 1_000_000
