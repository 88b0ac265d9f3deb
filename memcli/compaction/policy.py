"""Compaction policy and the budget trigger of docs/design.md §4.

``input_budget = max_context_tokens - reserved_output_tokens - safety_margin``; compaction is
due when the prompt size exceeds ``trigger_ratio`` × ``input_budget``. The prompt size is the
latest provider-reported ``usage.prompt_tokens`` (on the newest assistant trace that has one; not
after a harness compaction, see :func:`latest_prompt_tokens`),
else the working snapshot's token count (:func:`memcli.snapshot.assemble.working_tokens`, the
one count ``stats``, ``snapshot`` and ``compact`` share). Context sizes come from
:func:`memcli.tokens.context_window` (LiteLLM's model map, else the flag, else 200,000).

``stats`` and ``compact --if-needed`` both call :func:`budget_status`, so they always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from memcli.store.agent import AgentStore
from memcli.tokens import context_window


@dataclass
class CompactionPolicy:
    trigger_ratio: float = 0.8
    tail_turns: int = 4               # a floor only where target_tokens allows it
    keep_steps: int = 4               # the newest steps never move
    target_tokens: int | None = None  # None: half of the input budget
    target_ratio: float = 0.5
    safety_margin_tokens: int = 1024
    max_episodic_items: int = 3
    max_semantic_items: int = 20


@dataclass
class BudgetStatus:
    max_context_tokens: int
    reserved_output_tokens: int
    safety_margin_tokens: int
    input_budget: int
    threshold: int              # trigger_ratio * input_budget
    prompt_tokens: int          # what the decision used
    source: str                 # "provider" (usage.prompt_tokens) or "estimate"
    context_source: str         # where max_context_tokens came from
    due: bool

    def explain(self) -> str:
        verdict = "compaction is due" if self.due else "compaction is not due"
        what = ("provider-reported prompt_tokens" if self.source == "provider"
                else "working-snapshot tokens")
        return (f"{verdict}: {what} {self.prompt_tokens:,} {'>' if self.due else '<='} "
                f"{self.threshold:,} (= {self.threshold / max(self.input_budget, 1):.0%} of the input budget "
                f"{self.input_budget:,} = {self.max_context_tokens:,} context - {self.reserved_output_tokens:,} "
                f"output - {self.safety_margin_tokens:,} margin; context from {self.context_source})")


def latest_prompt_tokens(store: AgentStore) -> int | None:
    """``usage.prompt_tokens`` of the newest active assistant (or tool_call) trace that reports one, read from
    the end of the active file. Usage reported before the last compaction is ignored: it measured
    a prompt that compaction has since shrunk (see ``active_after_commit`` in
    :mod:`memcli.compaction.breaker`). Nor is usage counted while the active file holds a harness's
    own compaction (Claude Code's ``compact_boundary`` summary, Codex's ``compacted``): the
    harness then sent its summary in place of the traces before it, which the working snapshot
    still renders, so the provider's figure measures a smaller prompt than the snapshot. Nor for
    an agent that mirrors another harness's session (imported from its transcript — ``sync``, a
    hook, ``ingest FILE`` of any format but native events — its ``.source.json`` names that
    format): the usage its traces carry is that harness's prompt (its own system prompt, tools
    and context), never the working snapshot, and compacting on it (Claude Code's 62,562 against
    a snapshot of 7,820) compacted nearly every round of a hook's rhythm."""
    import os

    from memcli.compaction.breaker import read_breaker
    from memcli.store import jsonl
    from memcli.store.sync_state import read_source_meta

    mirrored = read_source_meta(store.paths)
    if mirrored is not None and mirrored.get("source", "native") != "native":
        return None

    stale_before = 0
    after = read_breaker(store.paths).active_after_commit
    if after:
        try:
            if os.lstat(store.paths.active).st_ino == after[0]:
                stale_before = int(after[1])
        except FileNotFoundError:
            return None
    for offset, record in jsonl.iter_records_reverse(store.paths.active):
        if offset < stale_before:
            return None
        if record.get("trace_type") in ("assistant", "tool_call"):  # a tool-only reply carries it on its call
            usage = record.get("usage")
            if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
                from memcli.store.harness_items import holds_harness_compaction

                return None if holds_harness_compaction(store.paths) else usage["prompt_tokens"]
    return None


def input_budget(model: str | None, max_context_tokens: int | None,
                 policy: CompactionPolicy) -> tuple[int, int, int, str]:
    """(input budget, context, reserved output, where the context size came from). A context given
    (``--max-context-tokens``) that the reserved output and the safety margin take whole is
    refused: every prompt would be over a threshold of 0, and no target of 0 can be met."""
    context, reserved, context_source = context_window(model, max_context_tokens)
    budget = context - reserved - policy.safety_margin_tokens
    if budget <= 0 and max_context_tokens is not None:
        from memcli.errors import UsageError

        raise UsageError(f"{{max_context_tokens}} {context:,} leaves no room for a prompt: {reserved:,} tokens are "
                         f"reserved for the output and {policy.safety_margin_tokens:,} kept as a safety margin",
                         param="max_context_tokens")
    return max(budget, 0), context, reserved, context_source


def target_tokens(model: str | None, max_context_tokens: int | None, policy: CompactionPolicy) -> int:
    """What a compaction keeps: ``policy.target_tokens``, else half of the input budget (so the
    trigger, at 80%, does not fire again at once)."""
    if policy.target_tokens is not None:
        return policy.target_tokens
    return int(policy.target_ratio * input_budget(model, max_context_tokens, policy)[0])


def budget_status(store: AgentStore, *, model: str | None = None, max_context_tokens: int | None = None,
                  policy: CompactionPolicy | None = None, tokens: int | None = None,
                  reported: int | None | object = ...) -> BudgetStatus:
    """The trigger's decision. ``tokens``: the working snapshot's count when the caller has it
    already (:func:`memcli.snapshot.assemble.working_tokens`, the one count), else it is taken.
    ``reported``: :func:`latest_prompt_tokens` when the caller read it already (None included)."""
    policy = policy or CompactionPolicy()
    budget, context, reserved, context_source = input_budget(model, max_context_tokens, policy)
    threshold = int(policy.trigger_ratio * budget)
    if reported is ...:
        reported = latest_prompt_tokens(store)
    if reported is not None:
        prompt, source = reported, "provider"
    else:
        if tokens is None:
            from memcli.snapshot.assemble import working_tokens

            tokens = working_tokens(store, model)
        prompt, source = tokens, "estimate"
    return BudgetStatus(context, reserved, policy.safety_margin_tokens, budget, threshold, prompt, source,
                        context_source, due=prompt > threshold)
