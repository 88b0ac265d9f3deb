"""Compaction policy and the budget trigger of docs/design.md §4.

``input_budget = max_context_tokens - reserved_output_tokens - safety_margin``; compaction is
due when the prompt size exceeds ``trigger_ratio`` × ``input_budget``. The prompt size is the
latest provider-reported ``usage.prompt_tokens`` (on the newest assistant trace that has one),
else memcli's estimate of the working snapshot. Context sizes come from
:func:`memcli.tokens.context_window` (LiteLLM's model map, else the flag, else 200,000).

``stats`` and ``compact --if-needed`` both call :func:`budget_status`, so they always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from memcli.store.agent import AgentStore
from memcli.tokens import TokenCounter, context_window


@dataclass
class CompactionPolicy:
    trigger_ratio: float = 0.8
    tail_turns: int = 4
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
                else "estimated working-snapshot tokens")
        return (f"{verdict}: {what} {self.prompt_tokens:,} {'>' if self.due else '<='} "
                f"{self.threshold:,} (= {self.threshold / max(self.input_budget, 1):.0%} of the input budget "
                f"{self.input_budget:,} = {self.max_context_tokens:,} context - {self.reserved_output_tokens:,} "
                f"output - {self.safety_margin_tokens:,} margin; context from {self.context_source})")


def latest_prompt_tokens(store: AgentStore) -> int | None:
    """``usage.prompt_tokens`` of the newest active assistant (or tool_call) trace that reports one, read from
    the end of the active file. Usage reported before the last compaction is ignored: it measured
    a prompt that compaction has since shrunk (see ``active_after_commit`` in
    :mod:`memcli.compaction.breaker`)."""
    import os

    from memcli.compaction.breaker import read_breaker
    from memcli.store import jsonl

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
                return usage["prompt_tokens"]
    return None


def trace_text(record) -> str:
    """The text a trace contributes to a prompt (content, tool arguments, result or error)."""
    parts = [record.content or ""]
    if record.tool_args is not None:
        parts.append(orjson.dumps(record.tool_args).decode())
    if record.tool_error:
        parts.append(record.tool_error)
    elif record.tool_result is not None:
        value = record.tool_result
        parts.append(value if isinstance(value, str) else orjson.dumps(value).decode())
    return "\n".join(p for p in parts if p)


def estimate_working_tokens(store: AgentStore, counter: TokenCounter) -> int:
    """Tokens of the working snapshot's content: live memory items plus every active trace
    (a streaming pass; per-message framing overhead is approximated as 4 tokens each)."""
    total = 0
    episodic, semantic = store.live_memory(3, 20)
    for item in episodic:
        total += counter.count(item.summary) + 4
    for item in semantic:
        total += counter.count(item.fact) + 4
    for trace in store.iter_active():
        total += counter.count(trace_text(trace)) + 4
    return total


def budget_status(store: AgentStore, *, model: str | None = None, max_context_tokens: int | None = None,
                  policy: CompactionPolicy | None = None, counter: TokenCounter | None = None) -> BudgetStatus:
    policy = policy or CompactionPolicy()
    context, reserved, context_source = context_window(model, max_context_tokens)
    budget = max(context - reserved - policy.safety_margin_tokens, 0)
    threshold = int(policy.trigger_ratio * budget)
    reported = latest_prompt_tokens(store)
    if reported is not None:
        prompt, source = reported, "provider"
    else:
        prompt, source = estimate_working_tokens(store, counter or TokenCounter(model)), "estimate"
    return BudgetStatus(context, reserved, policy.safety_margin_tokens, budget, threshold, prompt, source,
                        context_source, due=prompt > threshold)
