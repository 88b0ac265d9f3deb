"""`memcli export --format markdown`: the golden files of the sample store, and the rules that keep
the document readable and its structure intact whatever the messages contain.

``MEMCLI_UPDATE_GOLDEN=1 pytest tests/test_export_markdown.py`` rewrites tests/golden/*.md — then
read the diff.
"""

from __future__ import annotations

import os
import re

import pytest

import memcli.export.markdown as markdown
from tests.export_fixtures import CALL, RES, A, U, archive_turns, copy_sample, write_memory
from tests.helpers import REPO

GOLDEN = REPO / "tests" / "golden"
UPDATE_GOLDEN = os.environ.get("MEMCLI_UPDATE_GOLDEN") == "1"  # read before conftest clears MEMCLI_*


def md(cli, agent="a", *args) -> str:
    result = cli("export", agent, "-f", "markdown", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("agent", ["coder", "support"])
def test_markdown_of_the_sample_store_matches_the_golden_file(cli, memory_dir, agent):
    copy_sample(memory_dir)
    text = md(cli, agent)
    golden = GOLDEN / f"export_{agent}.md"
    if UPDATE_GOLDEN:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), "MEMCLI_UPDATE_GOLDEN=1 rewrites it; read the diff"


def test_markdown_with_memory_and_an_archive(cli, memory_dir):
    copy_sample(memory_dir, ["coder"])
    archive_turns(memory_dir, "coder", 3)
    write_memory(memory_dir, "coder")
    text = md(cli, "coder", "--with-memory")
    head, _, history = text.partition("\n## turn_0001 ")
    assert "## Memory" in head
    assert "- **turn_0001 – turn_0004** (4 turns) · 2026-03-02 09:50 UTC  \n  Fixed the discount bug; tests pass." in head
    assert "Found the missing discount." not in head            # superseded: not shown...
    assert "*2 older summaries rolled up into these not shown.*" in head  # ...but counted
    assert "- Always run ruff before saying something is done. *(confidence 0.95; tags: preference; from turn_0004)*" in head
    assert "Run the linter before saying done." not in head
    # where the compacted history ends
    archived, marker, active = history.partition("*Active traces from here on; the ones above were compacted (archived).*")
    assert marker and "## turn_0003" in archived and active.lstrip().startswith("## turn_0004")
    assert "## Memory" not in md(cli, "coder")


def test_each_turn_has_a_heading_with_its_utc_time(cli, memory_dir):
    cli("ingest", "a", input=[U("hello", ts="2026-03-02T09:14:05Z"), A("hi", ts="2026-03-02T09:14:09Z"),
                              U("again", ts="2026-03-03T23:59:00+02:00")])
    text = md(cli)
    assert text.startswith("# a — memory export\n")
    assert "\n## turn_0001 · 2026-03-02 09:14 UTC\n\n**User** · 09:14:05\n\n> hello\n\n**Assistant** · 09:14:09\n\nhi\n" in text
    assert "\n## turn_0002 · 2026-03-03 21:59 UTC\n" in text
    assert text.endswith("\n---\n\n*3 traces in 2 turns · 0 tool calls*\n")


def test_a_result_that_arrives_after_the_next_user_message_is_placed_with_its_call(cli, memory_dir):
    cli("ingest", "a", input=[U("start the build"), CALL("c1", "build", {"target": "all"}), A("started"),
                              U("status?"), RES("c1", "BUILD OK"), A("done")])
    text = md(cli)
    turn1, turn2 = text.split("\n## turn_0002")
    assert "🔧 `build` `{\"target\": \"all\"}`" in turn1 and "BUILD OK" in turn1
    assert turn1.index("🔧 `build`") < turn1.index("BUILD OK") < turn1.index("started")
    assert "BUILD OK" not in turn2 and "> status?" in turn2


def test_parallel_calls_and_reused_ids_pair_first_in_first_out(cli, memory_dir):
    cli("ingest", "a", input=[U("go"), CALL("x", "read", {"p": 1}), CALL("x", "read", {"p": 2}),
                              RES("x", "result-one"), RES("x", "result-two")])
    text = md(cli)
    assert text.index('{"p": 1}') < text.index("result-one") < text.index('{"p": 2}') < text.index("result-two")


def test_errors_pending_calls_and_orphans_are_marked(cli, memory_dir):
    cli("ingest", "a", input=[U("go"), CALL("c1", "deploy"), RES("c1", None, tool_error="permission denied"),
                              CALL("c2", "wait"), RES("ghost", "who called me?", tool_name="mystery")])
    text = md(cli)
    assert "❌ **Error** · " in text and "permission denied" in text
    assert "⏳ **No result** — the call is still pending" in text
    assert "⚠️ **Result without a call** · `mystery` · `ghost`" in text and "who called me?" in text
    assert text.endswith("*5 traces in 1 turn · 2 tool calls · 1 error · 1 without a result · 1 result without a call*\n")
    filtered = md(cli, "a", "--turn", "1")
    assert "⏳ **No result in this export** (pending, or outside the selection)" in filtered


def test_long_results_and_arguments_are_folded(cli, memory_dir):
    long_output = "\n".join(f"line {i}" for i in range(40))
    cli("ingest", "a", input=[U("go"), CALL("c1", "cat", {"text": "x" * 300}), RES("c1", long_output),
                              CALL("c2", "short"), RES("c2", "tiny")])
    text = md(cli)
    assert "<details><summary>**Result** · " not in text  # no markdown inside <summary>
    assert re.search(r"<details><summary>Result · [\d.]+ s · 40 lines · \d+ B</summary>\n\n```text\nline 0\n", text)
    assert '```json\n{\n  "text": "xxxx' in text             # long arguments: a block...
    assert "**Result** · " in text and "```text\ntiny\n```" in text  # ...short results stay open


def test_content_cannot_break_the_document(cli, memory_dir):
    nasty = ("# Big heading\n## Another\nsome `code` and ```` four ticks\n<details><summary>x</summary>\n"
             "<!-- comment\n```python\nprint('unclosed fence')")
    cli("ingest", "a", input=[U(nasty), A(nasty), CALL("c1", "sh", {"q": "```"}), RES("c1", "```\nfence in result\n````")])
    text = md(cli)
    headings = [line for line in text.splitlines() if re.match(r"#{1,3} ", line)]
    assert headings == ["# a — memory export", "## turn_0001 · " + headings[1].split(" · ", 1)[1]]
    assert "#### Big heading" in text and "> #### Big heading" in text
    assert "&lt;details>" in text and "&lt;!--" in text and "<details><summary>x" not in text
    # the unclosed fence is closed inside each message: the text after it is not code
    assert "> print('unclosed fence')\n> ```\n" in text and "\nprint('unclosed fence')\n```\n" in text
    # a result containing fences gets a longer fence
    assert "`````text\n```\nfence in result\n````\n`````" in text
    assert '🔧 `sh` ````{"q": "```"}```` · ' in text


def test_system_context_reasoning_and_subagents_are_folded_or_labelled(cli, memory_dir):
    cli("ingest", "a", input=[U("Be brief.", tags=["system"]), U("AGENTS.md says hi", tags=["context"]),
                              U("real question"), A("let me think", tags=["reasoning"]),
                              U("subtask", tags=["sidechain"]), A("sub answer", tags=["sidechain"]),
                              A("answer", tags=["important"])])
    text = md(cli)
    assert "<details><summary>System prompt · " in text and "<details><summary>Context · " in text
    assert "<details><summary>Reasoning · " in text and "let me think" in text
    assert "<details><summary>Subagent prompt · " in text and "**Subagent Assistant** · " in text
    assert "**Assistant** · " in text and "tags: important" in text


def test_a_result_far_behind_its_call_is_written_where_it_is_once_the_lookahead_is_full(cli, memory_dir, monkeypatch):
    monkeypatch.setattr(markdown, "LOOKAHEAD_TRACES", 3)
    events = [U("go"), CALL("slow", "long_job")] + [A(f"filler {i}") for i in range(6)] + [RES("slow", "finally")]
    cli("ingest", "a", input=events)
    text = md(cli)
    assert "⏳ **No result yet** — if one comes later in the history, it is shown there" in text
    assert "↩ Result of `long_job` · `slow` called at " in text
    assert text.index("filler 5") < text.index("finally")
    assert "without a result" not in text.splitlines()[-1]


def test_prose_helpers():
    assert markdown.fenced("a ``` b") == "````\na ``` b\n````"
    assert markdown.inline_code("`x`") == "`` `x` ``"
    assert markdown.prose("```\n# not a heading\n```\n# heading") == "```\n# not a heading\n```\n#### heading"
    assert markdown.prose("~~~\n<details>\n~~~") == "~~~\n<details>\n~~~"  # code is left alone
    assert markdown.quote("a\n\nb") == "> a\n>\n> b"


def test_memory_for_unanswered_calls_is_bounded(cli, memory_dir, monkeypatch):
    monkeypatch.setattr(markdown, "LOOKAHEAD_TRACES", 2)
    monkeypatch.setattr(markdown, "MAX_UNANSWERED", 3)
    events = [U("go")]
    for i in range(8):
        events += [CALL(f"c{i}", "never"), A(f"a{i}"), A(f"b{i}"), A(f"c{i}")]
    events.append(RES("c7", "late answer"))
    events.append(RES("c0", "too late"))
    cli("ingest", "a", input=events)
    seen = []
    original = markdown.MarkdownWriter._remember_unanswered

    def spy(self, call):
        original(self, call)
        seen.append(sum(len(q) for q in self._open_calls.values()))

    monkeypatch.setattr(markdown.MarkdownWriter, "_remember_unanswered", spy)
    text = md(cli)
    assert max(seen) <= 3 + 1  # the bound, plus the call just being written
    assert "↩ Result of `never` · `c7`" in text                  # a remembered call finds its result
    assert "⚠️ **Result without a call** · `c0`" in text          # a forgotten one is an orphan


def test_a_turn_the_history_goes_back_to_is_marked_continued(cli, memory_dir):
    cli("ingest", "a", input=[U("first", turn_id="turn_0001"), U("second", turn_id="turn_0002"),
                              A("late note", turn_id="turn_0001")])
    text = md(cli)
    assert "\n## turn_0001 · " in text and "\n## turn_0002 · " in text
    assert "\n## turn_0001 (continued) · " in text
    assert text.endswith("*3 traces in 2 turns · 0 tool calls*\n")


def test_foreign_records_with_odd_types_are_rendered_not_fatal(cli, memory_dir):
    from tests.helpers import agent_dir

    d = agent_dir(memory_dir, "a")
    d.mkdir(parents=True)
    (d / "raw_traces.jsonl").write_bytes(
        b'{"id":"x1","ts":1772442000,"turn_id":"turn_0001","seq":1,"trace_type":"user","source_event":"other",'
        b'"content":[{"type":"text","text":"hello"}],"tags":"context-ish","usage":[1,2],"media":"https://x/y.png"}\n'
        b'{"id":"x2","ts":1772442001,"turn_id":"turn_0001","seq":2,"trace_type":"assistant","source_event":"other",'
        b'"content":null,"extra_field":1}\n')
    text = md(cli)
    assert '"text": "hello"' in text and "https://x/y.png" in text
