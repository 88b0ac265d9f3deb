"""``memcli view``: the page model, the file, and the page as a real browser draws it."""

from __future__ import annotations

import re

import orjson
import pytest

from memcli.api import Memory
from tests.browser import png_distinct_rows, render
from tests.compact_fixtures import conversation, long_turn
from tests.helpers import CORPORA, agent_dir, needs_corpora, store_digest

HOSTILE = '</script><script>document.title="pwned";window.PWNED=1</script><img src=x onerror="document.body.dataset.pwned=1">'


def _page_model(html: str) -> dict:
    data = re.search(r'<script id="memcli-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    return orjson.loads(data)


def _session(cli, name="s"):
    """A session with a failed call, a pending call, an orphan result, two parallel subagents, a
    compaction and a pinned fact."""
    events = conversation(6)
    events += [
        {"id": "u7", "trace_type": "user", "content": "Run the tests"},
        {"id": "c7", "trace_type": "tool_call", "tool_name": "bash", "tool_call_id": "k7", "tool_args": {"cmd": "pytest"}},
        {"id": "r7", "trace_type": "tool_result", "tool_name": "bash", "tool_call_id": "k7",
         "tool_result": "collected 3 items\n\nE   ImportError: cannot import name 'total' from 'app.api'\n1 failed",
         "tool_error": "exit status 1"},
        {"id": "sa1", "trace_type": "assistant", "content": "subagent A looks at api.py", "tags": ["sidechain"], "agent_id": "a1"},
        {"id": "sb1", "trace_type": "assistant", "content": "subagent B looks at tests", "tags": ["sidechain"], "agent_id": "b2"},
        {"id": "o7", "trace_type": "tool_result", "tool_name": "grep", "tool_call_id": "nobody", "tool_result": "x"},
        {"id": "c8", "trace_type": "tool_call", "tool_name": "bash", "tool_call_id": "k8", "tool_args": {"cmd": "ls"}},
    ]
    assert cli("ingest", name, input=events).exit_code == 0
    assert cli("compact", name, "--tail-turns", "3").exit_code == 0
    assert cli("remember", name, "Always run the linter", "--pin").exit_code == 0


def test_page_model_holds_every_turn_status_lane_and_compaction(cli, memory_dir, tmp_path):
    _session(cli)
    result = Memory(memory_dir).agent("s").view(tmp_path / "s.html")
    model = _page_model((tmp_path / "s.html").read_text())
    assert [t["id"] for t in model["turns"]] == [f"turn_{i:04d}" for i in range(1, 8)]
    assert result.turns == 7 and result.compactions == 1 and result.bytes == (tmp_path / "s.html").stat().st_size
    items = {i["id"]: i for t in model["turns"] for i in t["items"]}
    assert items["c7"]["status"] == "error" and items["c7"]["line"].endswith("ImportError: cannot import name 'total' from 'app.api'")
    assert "r7" not in items                       # the result is folded into its call
    assert items["c8"]["status"] == "pending" and items["o7"]["k"] == "orphan"
    assert (items["sa1"]["lane"], items["sb1"]["lane"]) == ("a1", "b2")
    assert items["t-1-c"]["status"] == "success" and items["t-1-c"]["a"] == 1
    [compaction] = model["compactions"]
    assert compaction["summary"] and compaction["last_turn"] == "turn_0004"
    assert {t["id"]: t["compaction"] for t in model["turns"]}["turn_0003"] == compaction["id"]
    assert all(t["tokens"] > 0 for t in model["turns"])
    assert [f["text"] for f in model["facts"]] == ["Always run the linter"] and model["facts"][0]["pinned"]


def test_view_writes_a_file_prints_its_path_and_changes_nothing_in_the_store(cli, memory_dir, tmp_path, monkeypatch):
    _session(cli)
    before = store_digest(memory_dir)
    monkeypatch.chdir(tmp_path)
    done = cli("view", "s")
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "s.html\n"
    assert re.fullmatch(r"memcli: s: 7 turns, \d+ traces, 1 compaction -> s\.html \([\d,]+ bytes\)\n", done.stderr)
    assert (tmp_path / "s.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "s.html").stat().st_mode & 0o777 == 0o600
    assert store_digest(memory_dir) == before
    streamed = cli("view", "s", "-o", "-")
    assert streamed.stdout.startswith("<!DOCTYPE html>") and "s.html" not in streamed.stdout


def test_view_refuses_what_it_cannot_draw(cli, memory_dir, tmp_path):
    assert cli("view", "ghost", "-o", tmp_path / "g.html").exit_code == 3
    assert not (tmp_path / "g.html").exists()
    _session(cli)
    inside = agent_dir(memory_dir, "s") / "page.html"
    assert cli("view", "s", "-o", inside).exit_code == 2      # never inside the store
    assert not inside.exists()


def test_stored_markup_is_data_in_the_file(cli, memory_dir, tmp_path):
    cli("ingest", "x", input=[{"trace_type": "user", "content": HOSTILE},
                              {"trace_type": "tool_call", "tool_name": HOSTILE, "tool_call_id": "1", "tool_args": {"q": HOSTILE}}])
    html = Memory(memory_dir).agent("x").view(tmp_path / "x.html") and (tmp_path / "x.html").read_text()
    assert html.count("</script>") == 2 and "<img" not in html and "onerror=\"document" not in html
    assert _page_model(html)["turns"][0]["items"][0]["text"] == HOSTILE   # the text itself is kept, as data


def test_page_without_traces_says_so(cli, memory_dir, tmp_path):
    assert cli("remember", "empty", "a fact before any trace").exit_code == 0
    Memory(memory_dir).agent("empty").view(tmp_path / "e.html")
    dom, _ = render(tmp_path / "e.html")
    assert "This agent has no traces yet" in dom and "a fact before any trace" in dom


def test_the_html_stays_within_three_times_its_jsonl(cli, memory_dir, tmp_path):
    cli("ingest", "big", input=long_turn(2000))
    Memory(memory_dir).agent("big").view(tmp_path / "big.html")
    jsonl = sum(p.stat().st_size for p in agent_dir(memory_dir, "big").glob("raw_traces*.jsonl"))
    assert (tmp_path / "big.html").stat().st_size <= 3 * jsonl


def test_a_real_browser_draws_every_turn_status_compaction_and_the_chart(cli, memory_dir, tmp_path):
    _session(cli)
    Memory(memory_dir).agent("s").view(tmp_path / "s.html")
    dom, png = render(tmp_path / "s.html")
    assert 'data-ready="1"' in dom
    for i in range(1, 8):
        assert f'id="turn_{i:04d}"' in dom
    assert dom.count('class="status success"') == 6 and dom.count('class="status error"') == 1
    assert dom.count('class="status pending"') == 1 and dom.count('class="status orphan"') == 1
    assert "ImportError: cannot import name 'total' from 'app.api'" in dom
    assert 'data-lane="a1"' in dom and 'data-lane="b2"' in dom
    assert dom.count('class="compaction"') == 1 and "summary written in place of the archived range" in dom
    assert "the 3 archived turns it covers" in dom
    assert "<svg" in dom and dom.count('class="bar"') == 7 and 'class="cpt"' in dom
    assert "Always run the linter" in dom
    assert png_distinct_rows(png) > 50          # not a blank page


def test_no_script_or_markup_from_a_transcript_runs_in_the_browser(cli, memory_dir, tmp_path):
    cli("ingest", "x", input=[{"trace_type": "user", "content": HOSTILE},
                              {"trace_type": "tool_call", "tool_name": HOSTILE, "tool_call_id": "1", "tool_args": {"q": HOSTILE}},
                              {"trace_type": "tool_result", "tool_call_id": "1", "tool_result": HOSTILE, "tool_error": HOSTILE}])
    cli("remember", "x", HOSTILE)
    Memory(memory_dir).agent("x").view(tmp_path / "x.html")
    dom, _ = render(tmp_path / "x.html")
    assert 'data-ready="1"' in dom
    assert re.search(r"<title>(.*?)</title>", dom).group(1) == "memcli · x"   # no injected script ran
    assert "data-pwned" not in dom and "<img" not in dom
    assert "&lt;/script&gt;&lt;script&gt;" in dom      # shown as text


@needs_corpora
def test_a_real_claude_code_session_with_subagents_draws(cli, memory_dir, tmp_path):
    path = CORPORA / "claude-code" / "ccviewer_fe5e1c67_todo-app_438ev.jsonl"
    assert cli("ingest", "cc", path, "--from", "claude-code").exit_code == 0
    Memory(memory_dir).agent("cc").view(tmp_path / "cc.html")
    model = _page_model((tmp_path / "cc.html").read_text())
    lanes = {i["lane"] for t in model["turns"] for i in t["items"] if i["lane"]}
    assert len(lanes) == 5                                   # five parallel subagents stay apart
    dom, png = render(tmp_path / "cc.html")
    assert 'data-ready="1"' in dom and dom.count('class="status error"') >= 1
    assert png_distinct_rows(png) > 50


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def test_an_undone_compaction_is_a_marked_boundary_and_the_live_one_owns_what_it_archived(cli, memory_dir, tmp_path):
    assert cli("ingest", "u", input=conversation(6)).exit_code == 0
    assert cli("compact", "u", "--tail-turns", "2").exit_code == 0      # turns 1-4 archived ...
    assert cli("uncompact", "u").exit_code == 0                         # ... and back
    assert cli("compact", "u", "--tail-turns", "4").exit_code == 0      # turns 1-2 archived again
    Memory(memory_dir).agent("u").view(tmp_path / "u.html")
    model = _page_model((tmp_path / "u.html").read_text())
    undone, live = model["compactions"]
    assert undone["undone"] and not live["undone"]
    assert (undone["first_turn"], undone["last_turn"]) == ("turn_0001", "turn_0004")
    assert (live["first_turn"], live["last_turn"]) == ("turn_0001", "turn_0002")
    owners = {t["id"]: t["compaction"] for t in model["turns"]}
    assert owners == {"turn_0001": live["id"], "turn_0002": live["id"], "turn_0003": None, "turn_0004": None,
                      "turn_0005": None, "turn_0006": None}
    dom, _ = render(tmp_path / "u.html")
    assert dom.count('class="compaction undone"') == 1 and dom.count('class="compaction"') == 1
    assert "undone (memcli uncompact): the turns it had archived are back in the timeline below" in dom
    assert "the 1 archived turn it covers" in dom                 # turn_0002 (turn_0001 keeps its system prompt)
    assert dom.count('class="cpt undone"') == 1 and dom.count('class="cpt"') == 1
    assert dom.index('id="compaction-' + undone["id"]) < dom.index('id="turn_0003"')


RUN = "document.body.dataset['pw'+'ned']=1"     # leaves data-pwned on <body> only if it runs
VECTORS = [f'</SCRIPT><script>{RUN}</script>', f'</script\t><img src=x onerror="{RUN}">', '<!--<script>',
           f'\u2028\u2029 line separators <svg onload="{RUN}">', f'" onmouseover="{RUN}" x="',
           f"' autofocus onfocus='{RUN}"]


def test_markup_in_ids_lane_names_tool_names_and_every_text_stays_text_in_the_browser(cli, memory_dir, tmp_path):
    events = []
    for i, v in enumerate(VECTORS):
        events += [{"id": f"u{i}{v}", "trace_type": "user", "content": v},
                   {"id": f"c{i}{v}", "trace_type": "tool_call", "tool_name": v, "tool_call_id": f"k{i}{v}",
                    "tool_args": {v: v}},
                   {"id": f"r{i}{v}", "trace_type": "tool_result", "tool_call_id": f"k{i}{v}", "tool_result": v,
                    "tool_error": v},
                   {"id": f"s{i}{v}", "trace_type": "assistant", "content": v, "tags": ["sidechain"], "agent_id": v}]
    assert cli("ingest", "x", input=events).exit_code == 0, "ids with markup are accepted as data"
    Memory(memory_dir).agent("x").view(tmp_path / "x.html")
    html = (tmp_path / "x.html").read_text()
    assert html.lower().count("</script") == 2 and "<!--" not in html
    model = _page_model(html)
    assert {i["lane"] for t in model["turns"] for i in t["items"]} == {None, *VECTORS}
    dom, _ = render(tmp_path / "x.html")
    assert 'data-ready="1"' in dom and "data-pwned" not in dom
    assert re.search(r"<title>(.*?)</title>", dom).group(1) == "memcli · x"
    assert "<img" not in dom and "<svg onload" not in dom and dom.lower().count("</script>") == 2
    for v in VECTORS:
        if '"' in v:
            assert f'data-lane="{v}"' not in dom        # a quote in a value is escaped by the DOM, never closes it


def test_printing_opens_every_call_with_its_arguments_and_result_before_the_page_is_laid_out(cli, memory_dir, tmp_path):
    _session(cli)
    Memory(memory_dir).agent("s").view(tmp_path / "s.html")
    # what the browser does on print: "beforeprint", then layout at once (no task runs in between)
    probe = ('<script>window.dispatchEvent(new Event("beforeprint"));document.body.dataset.printed = '
             'document.querySelectorAll(".call details").length + "/" + '
             'document.querySelectorAll(".call details[open] .who").length;</script>')
    page = (tmp_path / "s.html").read_text().replace("</body>", probe + "</body>")
    (tmp_path / "print.html").write_text(page)
    dom, _ = render(tmp_path / "print.html")
    calls, filled = map(int, re.search(r'data-printed="(\d+)/(\d+)"', dom).groups())
    assert calls == 9 and filled >= calls       # every call: its "arguments" / "result" headings are there


CONTRAST_PROBE = """<script>(function () {
  function rgb(s) { var m = s.match(/[\\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; }
  function lum(c) { return [c.r, c.g, c.b].map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce(function (s, v, i) { return s + v * [0.2126, 0.7152, 0.0722][i]; }, 0); }
  var worst = 99, where = "";
  document.querySelectorAll("body *").forEach(function (node) {
    if (!node.offsetParent || !Array.prototype.some.call(node.childNodes, function (t) { return t.nodeType === 3 && t.data.trim(); })) return;
    var fg = rgb(getComputedStyle(node).color), bg = null, alpha = 1;
    for (var n = node; n && n.nodeType === 1; n = n.parentElement) {
      var st = getComputedStyle(n); alpha *= Number(st.opacity);
      var b = rgb(st.backgroundColor); if (!bg && b.a > 0) bg = b;
    }
    bg = bg || {r: 255, g: 255, b: 255};
    var seen = {r: bg.r + (fg.r - bg.r) * alpha * fg.a, g: bg.g + (fg.g - bg.g) * alpha * fg.a, b: bg.b + (fg.b - bg.b) * alpha * fg.a};
    var l1 = lum(seen), l2 = lum(bg), ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    if (ratio < worst) { worst = ratio; where = node.tagName + "." + node.className + ": " + node.textContent.slice(0, 40); }
  });
  document.body.dataset.contrast = worst.toFixed(2);
  document.body.dataset.contrastAt = where;
})();</script>"""


def test_every_text_on_the_page_has_aa_contrast_archived_and_undone_parts_too(cli, memory_dir, tmp_path):
    _session(cli)
    assert cli("uncompact", "s").exit_code == 0 and cli("compact", "s", "--tail-turns", "2").exit_code == 0
    Memory(memory_dir).agent("s").view(tmp_path / "s.html")
    page = (tmp_path / "s.html").read_text()
    page = page.replace("</body>", CONTRAST_PROBE + "</body>")
    (tmp_path / "contrast.html").write_text(page)
    dom, _ = render(tmp_path / "contrast.html")
    ratio = float(re.search(r'data-contrast="([\d.]+)"', dom).group(1))
    assert ratio >= 4.5, re.search(r'data-contrast-at="([^"]*)"', dom).group(1)     # WCAG AA, normal text


def _search_probe(query: str) -> str:
    return ('<script>(function () { var input = document.getElementById("search"); input.value = ' + orjson.dumps(query).decode()
            + '; input.dispatchEvent(new Event("input")); setTimeout(function () { var b = document.body.dataset;'
            ' b.found = document.getElementById("search-count").textContent;'
            ' b.shown = Array.prototype.map.call(document.querySelectorAll(".item:not(.hidden)"), function (n) { return n.dataset.id; }).join(" ");'
            ' b.turns = Array.prototype.map.call(document.querySelectorAll(".turn:not(.hidden)"), function (n) { return n.id; }).join(" ");'
            ' b.opened = document.querySelectorAll("details.archived[open]").length; }, 1000); })();</script>')


@pytest.mark.parametrize("query, found, shown, turns, opened", [
    ("importerror", "1 match", "c7", "turn_0007", "0"),                     # in a result, any case
    ("A-1002", "3 matches", "t-2-u t-2-c t-2-a", "turn_0002", "1"),        # inside an archived range: opened
    ("nothing like this", "0 matches", "", "", "0")])
def test_the_search_box_keeps_only_matching_entries_and_opens_archived_ranges(cli, memory_dir, tmp_path, query, found,
                                                                              shown, turns, opened):
    _session(cli)
    Memory(memory_dir).agent("s").view(tmp_path / "s.html")
    page = (tmp_path / "s.html").read_text().replace("</body>", _search_probe(query) + "</body>")
    (tmp_path / "search.html").write_text(page)
    dom, _ = render(tmp_path / "search.html")
    body = re.search(r"<body[^>]*>", dom).group(0)
    got = {k: re.search(rf'data-{k}="([^"]*)"', body).group(1) for k in ("found", "shown", "turns", "opened")}
    assert got == {"found": found, "shown": shown, "turns": turns, "opened": opened}
