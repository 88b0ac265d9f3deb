"""Compaction fidelity against the harness's own compaction (method: tests/bench/fidelity.py and
docs/compaction.md, "Fidelity").

For every corpus session that carries a harness compaction with a readable summary, three
sessions built by rule (:func:`tests.bench.fidelity.rule_session`) and ten of the shapes harnesses
compact in practice (:func:`tests.bench.fidelity.worked_sessions`), one row; then, for
six of those shapes built with 40 other seeds (:data:`tests.bench.fidelity.MANY_SEEDED`), one row of
the mean recalls, its note saying on how many seeds memcli kept less than the harness:
the value is the harness's needed-later identifier recall, the baseline memcli's at the same token
count, so the ratio (harness / memcli) must stay at or below 1. A Codex session whose harness
summary is redacted gets a row with memcli's recall alone at ``REDACTED_BUDGET`` tokens (no
target: a figure to watch). The note gives both figures, the
tokens each used and whether the last user ask survived verbatim. Two last rows: five long
conversations built by rule (:func:`tests.bench.fidelity.conversation`: small talk, facts each side
states once), the facts memcli's compaction keeps at its default target and at a quarter of the
chat (``CONVERSATION_TARGET``), each against the lead baseline
(:func:`tests.bench.fidelity.lead_kept`) in as many characters (ratio lead / memcli at most 1).

``python tests/bench/run_all.py fidelity``
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
CORPORA = REPO.parent / "shared" / "corpora"
REDACTED_BUDGET = 3_000   # summary tokens for a session whose harness summary is redacted
CONVERSATION_TARGET = 3_000   # --target-tokens of the tighter conversation row (a quarter of the chat)
ROUNDS_SHAPES = ("worked-dense", "worked-terse", "worked-edited-only", "codex-handoff")   # compacted in rounds
ROUNDS_SEEDS = 8


# a spelling each harness's compaction leaves in its file (the splitter decides what is measurable)
SESSION_MARKS = (b'"compact_boundary"', b'"isCompactSummary"', b'"compacted"',
                 b"This session is being continued from a previous conversation",   # Claude Code
                 b"<state_snapshot>",                                               # Gemini CLI
                 b'"session.compaction_complete"',                                  # Copilot CLI
                 b"Your context was compacted")                                     # Goose


def sessions() -> list[Path]:
    """Corpus files that may hold a harness compaction (Claude Code, Codex, Gemini CLI, Copilot
    CLI, Goose: :func:`tests.bench.fidelity.compactions` finds them)."""
    if not CORPORA.is_dir():
        return []
    out = []
    for path in sorted(CORPORA.rglob("*.jsonl")):
        data = path.read_bytes()
        # any spelling a harness compaction leaves (split_session decides what is measurable)
        if any(mark in data for mark in SESSION_MARKS):
            out.append(path)
    return out


def run() -> list[dict]:
    sys.path.insert(0, str(REPO))
    from tests.bench.fidelity import (
        MANY_SEEDED,
        SEEDS,
        _split,
        measure,
        measure_conversation,
        measure_in_rounds,
        rule_session,
        seeded_shapes,
        split_session,
        worked_sessions,
    )

    rows = []
    found = []
    for path in sessions():
        session = split_session(path)
        if session is None:
            redacted = split_session(path, redacted=True)
            if redacted is None or not redacted.before:
                print(f"    fidelity: {path.name}: no readable harness summary (redacted or empty), not measured")
                continue
            # memcli alone, at a budget like a harness summary's: no ratio, a figure to watch
            r = measure(redacted, summary_tokens=REDACTED_BUDGET)
            if r.needed < 10:
                print(f"    fidelity: {path.name}: harness summary redacted, {r.needed} needed-later identifiers: "
                      "too few to measure")
            else:
                rows.append({"name": f"fidelity {redacted.name[:30]}: memcli recall only", "value": r.memcli_recall,
                             "baseline": 1.0, "unit": " ", "target": None,
                             "note": f"harness summary redacted; {r.needed} needed-later identifiers; memcli "
                                     f"{r.memcli_recall:.1%} in a {r.memcli_tokens:,}-token snapshot (target "
                                     f"{r.target_tokens:,}: {REDACTED_BUDGET:,} for the summary)"})
            continue
        found.append(session)
    found += [rule_session(seed) for seed in (1, 2, 3)]   # built by rule (tests/bench/fidelity.py)
    found += worked_sessions()   # the shapes harnesses compact in practice, built by rule
    for session in found:
        r = measure(session)
        if r.needed == 0:
            print(f"    fidelity: {session.name}: no identifier is used both before and after the boundary")
            continue
        if r.refused:   # memcli could not get down to the harness's size: a miss, whatever its recall
            print(f"    fidelity: {session.name}: memcli could not compact to {r.target_tokens:,} tokens ({r.refused})")
        rows.append({
            "name": f"fidelity {session.name[:30]}: harness/memcli recall", "value": r.harness_recall,
            "baseline": 1e-9 if r.refused else max(r.memcli_recall, 1e-9), "unit": " ", "target": 1.0,
            "note": (f"{r.needed} needed-later identifiers; recall harness {r.harness_recall:.1%} in "
                     f"{r.harness_tokens:,} tokens"
                     + (f" (its summary and {r.kept_tokens:,} tokens of messages it kept verbatim)" if r.kept_tokens
                        else "") + f", memcli {r.memcli_recall:.1%} in a {r.memcli_tokens:,}-token "
                     f"snapshot (target {r.target_tokens:,}); last ask verbatim: harness "
                     f"{'yes' if r.harness_last_ask else 'no'}, memcli {'yes' if r.memcli_last_ask else 'no'}")})
    shapes = seeded_shapes()
    for shape in MANY_SEEDED:
        make = shapes[shape]
        results = [measure(_split(f"{shape}-{seed}", make(seed).jsonl())) for seed in SEEDS]
        harness = sum(r.harness_recall for r in results) / len(results)
        memcli = sum(r.memcli_recall for r in results) / len(results)
        below = sum(r.memcli_recall < r.harness_recall for r in results)
        worst = min(r.memcli_recall - r.harness_recall for r in results)
        refused = sum(bool(r.refused) for r in results)
        first = (f"; the first ask (the request) verbatim in memcli's snapshot on {sum(r.memcli_first_ask for r in results)}, "
                 f"in the harness's summary on {sum(r.harness_first_ask for r in results)}")
        rows.append({
            "name": f"fidelity {shape} ×{len(results)} seeds: mean", "value": harness,
            "baseline": max(memcli, 1e-9), "unit": " ", "target": 1.0,
            "note": (f"mean recall harness {harness:.1%}, memcli {memcli:.1%}; memcli below the harness on {below} of "
                     f"{len(results)} (worst by {-worst:.1%})" if worst < 0 else
                     f"mean recall harness {harness:.1%}, memcli {memcli:.1%}; memcli at or above the harness on every "
                     f"seed") + first + (f"; {refused} could not compact to the harness's size" if refused else "")})
    # the same shapes arriving in eight parts, compacted after each (a hook's rhythm): the
    # summaries roll up on the way (their rollup merges them: one files line, each failure's
    # latest state), and the result is measured at the harness's size as above
    for shape in ROUNDS_SHAPES:
        make = shapes[shape]
        pairs = [measure_in_rounds(_split(f"{shape}-{seed}", make(seed).jsonl())) for seed in range(1, ROUNDS_SEEDS + 1)]
        memcli = sum(m for m, _ in pairs) / len(pairs)
        harness = sum(h for _, h in pairs) / len(pairs)
        below = sum(m < h for m, h in pairs)
        rows.append({"name": f"fidelity {shape} in 8 rounds ×{len(pairs)}: mean", "value": harness,
                     "baseline": max(memcli, 1e-9), "unit": " ", "target": 1.0,
                     "note": f"compacted after each of 8 parts, then to the harness's size: mean recall harness "
                             f"{harness:.1%}, memcli {memcli:.1%}; memcli below the harness on {below} of {len(pairs)}"})
    # a long conversation (no harness compacts it for comparison): the facts both sides state once
    # in small talk, kept by memcli's compaction at its default target, and by the lead baseline
    # (each message's head, or the asks' alone, in as many characters as memcli's summary)
    # (and the same chats as a multi-session conversation benchmark has them: over days, each
    # message beginning with its speaker's name)
    # (and both speakers piped in as `user`)
    for dated, one_role, target in ((False, False, None), (False, False, CONVERSATION_TARGET), (True, False, None),
                                    (True, False, CONVERSATION_TARGET), (True, True, CONVERSATION_TARGET)):
        counts = [measure_conversation(seed, target, dated, one_role) for seed in range(1, 6)]
        facts, memcli, lead = (sum(c[i] for c in counts) for i in range(3))
        at = "default target" if target is None else f"{target:,} tokens"
        shape = " dated, one role" if one_role else " dated" if dated else ""
        rows.append({"name": f"fidelity conversation{shape} ×5, {at}: lead/memcli facts",
                     "value": lead / facts, "baseline": max(memcli / facts, 1e-9), "unit": " ", "target": 1.0,
                     "note": f"{facts} facts stated once in 300-turn chats (~12,000 tokens"
                             f"{'; 15 days, speakers named' if dated else ''}{', both as user' if one_role else ''});"
                             f" kept: memcli "
                             f"{memcli / facts:.1%}, the lead baseline {lead / facts:.1%} (same characters)"})
    return rows
