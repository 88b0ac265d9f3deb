// memcli view: draws the page model (memcli/view/data.py) held in <script id="memcli-data">.
// Stored text only ever enters the page through textContent / createTextNode: no innerHTML, no
// attribute built from data except data-* and id values set through the DOM API, so nothing a
// transcript holds can run or become markup.
(function () {
  "use strict";
  var started = performance.now();
  var model = JSON.parse(document.getElementById("memcli-data").textContent);
  var CLIP = 600;          // characters of a long text shown before "show all"

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function plural(n, one, many) { return n.toLocaleString("en") + " " + (n === 1 ? one : (many || one + "s")); }
  function when(ts) {
    if (!ts) return "";
    return new Date(ts * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  // a long text: the first CLIP characters, and a button that shows the rest when asked (lazy)
  function longText(text, cls) {
    var pre = el("pre", cls);
    if (text.length <= CLIP) { pre.textContent = text; return pre; }
    pre.textContent = text.slice(0, CLIP) + " …";
    var wrap = el("div");
    var more = el("button", "more", "show all " + text.length.toLocaleString("en") + " characters");
    more.type = "button";
    more.addEventListener("click", function () {
      pre.textContent = text;
      more.remove();
    });
    wrap.appendChild(pre);
    wrap.appendChild(more);
    return wrap;
  }

  var WHO = { ask: "user", ctx: "context", say: "assistant", think: "reasoning" };
  var MARK = { success: "✓ success", error: "✗ error", pending: "… pending", orphan: "? orphan result" };

  var harnessByTrace = Object.create(null);   // keyed by stored ids: no inherited keys (constructor, toString)
  (model.harness || []).forEach(function (h) { harnessByTrace[h.trace] = h; });

  // the harness's own compaction (imported): a marked box around its summary trace
  function harnessHead(h) {
    var head = el("div", "harness-head");
    var what = (h.harness || "harness") + "'s own compaction";
    var parts = [];
    if (h.trigger) parts.push(h.trigger);
    if (typeof h.pre_tokens === "number") parts.push(h.pre_tokens.toLocaleString("en") + " tokens before");
    if (parts.length) what += " (" + parts.join(", ") + ")";
    head.appendChild(el("span", "who", "harness compaction"));
    head.appendChild(document.createTextNode(what + " · " + (h.first_turn ? "covered " + h.first_turn +
      (h.last_turn !== h.first_turn ? "–" + h.last_turn : "") : "covered nothing in this agent") + " · memory item " + h.id));
    return head;
  }

  function itemNode(item) {
    var node = el("div", "item " + item.k + (item.a ? " a" : ""));
    node.dataset.id = item.id;
    var h = harnessByTrace[item.id];
    if (h) {
      node.classList.add("harness");
      node.dataset.harness = h.id;
      node.appendChild(harnessHead(h));
    }
    if (item.k === "call" || item.k === "orphan") {
      node.classList.add("call", item.status);
      var head = el("div", "head");
      head.appendChild(el("span", "status " + item.status, MARK[item.status] || item.status));
      head.appendChild(document.createTextNode(" " + (item.name || "(unnamed tool)")));
      node.appendChild(head);
      if (item.line) node.appendChild(el("div", "errline", item.line));
      var details = el("details");
      details.appendChild(el("summary", "muted", "arguments and result · " + item.id));
      details._fill = function fill() {   // built on first open: long results cost nothing until read
        details.removeEventListener("toggle", fill);
        details._fill = null;
        if (item.text) details.appendChild(longText(item.text));
        if (item.args) { details.appendChild(el("div", "who", "arguments")); details.appendChild(longText(item.args)); }
        if (item.err) { details.appendChild(el("div", "who", "error")); details.appendChild(longText(item.err, "errline")); }
        if (item.result) { details.appendChild(el("div", "who", "result")); details.appendChild(longText(item.result)); }
      };
      details.addEventListener("toggle", details._fill);
      node.appendChild(details);
    } else {
      node.appendChild(el("span", "who", WHO[item.k] || item.k));
      node.appendChild(longText(item.text || ""));
    }
    node._haystack = [item.text, item.name, item.args, item.result, item.err].join("\n").toLowerCase();
    return node;
  }

  function turnNode(turn) {
    var node = el("section", "turn " + turn.tier);
    node.id = turn.id;
    node.dataset.tier = turn.tier;
    var h = el("h3");
    h.appendChild(el("span", null, turn.id));
    h.appendChild(el("span", "muted", when(turn.ts)));
    if (turn.tier !== "active") h.appendChild(el("span", "badge", turn.tier === "split" ? "older steps archived" : "archived"));
    h.appendChild(el("span", "badge", plural(turn.tokens, "token")));
    if (turn.prompt) h.appendChild(el("span", "badge", "prompt " + turn.prompt.toLocaleString("en") + " (provider)"));
    node.appendChild(h);
    var lane = null, laneName = null;
    turn.items.forEach(function (item) {
      if (item.lane !== laneName) {
        laneName = item.lane;
        lane = null;
        if (laneName) {
          lane = el("div", "lane");
          lane.dataset.lane = laneName;
          lane.appendChild(el("div", "lane-name", "subagent " + laneName));
          node.appendChild(lane);
        }
      }
      (lane || node).appendChild(itemNode(item));
    });
    return node;
  }

  function compactionNode(c) {
    var box = el("details", "compaction" + (c.undone ? " undone" : ""));
    box.id = "compaction-" + c.id;
    box.dataset.compaction = c.id;
    var tokens = (c.before != null && c.after != null) ? " · tokens " + c.before.toLocaleString("en") + " → " + c.after.toLocaleString("en") : "";
    box.appendChild(el("summary", null, "Compaction " + c.id + " · " + when(c.ts) + " · " + c.moved + tokens + " · " + c.model + (c.undone ? " · undone" : "")));
    var summary = el("div", "compaction-summary");
    summary.appendChild(el("div", "who", "summary written in place of the archived range"));
    summary.appendChild(longText(c.summary || "(no summary stored)"));
    box.appendChild(summary);
    var archived = el("details", "archived");
    var label = el("summary");
    archived.appendChild(label);
    box.appendChild(archived);
    box.open = true;
    box._archived = archived;
    box._label = label;
    box._count = 0;
    return box;
  }

  // Turns in order; each compaction is one box, placed where its range starts, holding the turns
  // it archived whole (closed until clicked); a turn whose older steps it archived stays in the
  // timeline, after the box.
  function drawTimeline() {
    var root = document.getElementById("timeline");
    if (!model.turns.length) {
      root.appendChild(el("p", "empty", "This agent has no traces yet: ingest or sync a session, then draw the page again."));
      return;
    }
    var byId = {}, boxes = {}, undoneAt = {};
    model.compactions.forEach(function (c) {
      byId[c.id] = c;
      if (c.undone && c.first_turn) (undoneAt[c.first_turn] = undoneAt[c.first_turn] || []).push(c);
    });
    model.turns.forEach(function (turn) {
      (undoneAt[turn.id] || []).forEach(function (u) {   // undone: a boundary that was, its turns active again below
        if (!boxes[u.id]) { boxes[u.id] = compactionNode(u); root.appendChild(boxes[u.id]); }
      });
      var c = turn.compaction && byId[turn.compaction];
      if (!c) { root.appendChild(turnNode(turn)); return; }
      var box = boxes[c.id];
      if (!box) { box = boxes[c.id] = compactionNode(c); root.appendChild(box); }
      if (turn.tier === "archive") {
        box._archived.appendChild(turnNode(turn));
        box._count++;
      } else {
        root.appendChild(turnNode(turn));
      }
    });
    Object.keys(boxes).forEach(function (id) {
      var box = boxes[id];
      box._label.textContent = byId[id].undone ? "undone (memcli uncompact): the turns it had archived are back in the timeline below"
        : box._count ? "the " + plural(box._count, "archived turn") + " it covers (click to expand)"
        : "no whole turn archived: older steps of the turns below";
    });
  }

  function svg(tag, attrs, text) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function drawChart() {
    var turns = model.turns, root = document.getElementById("chart");
    var legend = document.getElementById("chart-legend");
    if (!turns.length) { legend.textContent = "No turns to draw."; return; }
    var W = 960, H = 260, L = 64, R = 12, T = 12, B = 34;
    var cum = [], total = 0, top = 1;
    turns.forEach(function (t) { total += t.tokens; cum.push(total); top = Math.max(top, total, t.prompt || 0); });
    var thr = model.chart.threshold, showThr = thr <= top * 2;
    if (showThr) top = Math.max(top, thr);
    var n = turns.length, step = (W - L - R) / n;
    function x(i) { return L + step * (i + 0.5); }
    function y(v) { return T + (H - T - B) * (1 - v / top); }
    var s = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": "chart-title" });
    s.appendChild(svg("line", { "class": "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    s.appendChild(svg("line", { "class": "axis", x1: L, y1: T, x2: L, y2: H - B }));
    [0, 0.5, 1].forEach(function (f) {
      s.appendChild(svg("text", { x: L - 6, y: y(top * f) + 4, "text-anchor": "end" }, Math.round(top * f).toLocaleString("en")));
    });
    s.appendChild(svg("text", { x: L, y: H - 8 }, turns[0].id));
    s.appendChild(svg("text", { x: W - R, y: H - 8, "text-anchor": "end" }, turns[n - 1].id));
    var bars = svg("g", { "class": "bars" });
    turns.forEach(function (t, i) {
      var bar = svg("rect", { "class": "bar", x: x(i) - Math.max(step * 0.35, 0.5), width: Math.max(step * 0.7, 1), y: y(t.tokens), height: Math.max(H - B - y(t.tokens), 0) });
      bar.appendChild(svg("title", {}, t.id + ": " + t.tokens.toLocaleString("en") + " tokens"));
      bars.appendChild(bar);
    });
    s.appendChild(bars);
    s.appendChild(svg("polyline", { "class": "cum", points: cum.map(function (v, i) { return x(i) + "," + y(v); }).join(" ") }));
    turns.forEach(function (t, i) {
      if (t.prompt) {
        var dot = svg("circle", { "class": "prov", cx: x(i), cy: y(t.prompt), r: 3 });
        dot.appendChild(svg("title", {}, t.id + ": provider prompt_tokens " + t.prompt.toLocaleString("en")));
        s.appendChild(dot);
      }
    });
    if (showThr) s.appendChild(svg("line", { "class": "thr", x1: L, x2: W - R, y1: y(thr), y2: y(thr) }));
    var index = Object.create(null);   // turn ids are stored text
    turns.forEach(function (t, i) { index[t.id] = i; });
    model.compactions.forEach(function (c) {
      if (c.last_turn in index) {
        var at = x(index[c.last_turn]) + step / 2;
        var line = svg("line", { "class": c.undone ? "cpt undone" : "cpt", x1: at, x2: at, y1: T, y2: H - B });
        line.setAttribute("data-compaction", c.id);
        line.appendChild(svg("title", {}, "compaction " + c.id + " after " + c.last_turn + (c.undone ? " (undone)" : "")));
        s.appendChild(line);
      }
    });
    (model.harness || []).forEach(function (h) {
      if (h.turn in index) {
        var at = x(index[h.turn]);
        var line = svg("line", { "class": "hcpt", x1: at, x2: at, y1: T, y2: H - B });
        line.setAttribute("data-harness", h.id);
        line.appendChild(svg("title", {}, (h.harness || "harness") + " compaction in " + h.turn));
        s.appendChild(line);
      }
    });
    root.appendChild(s);
    legend.textContent = "Bars: memcli's token count of each turn (" + model.counter + "); line: the running total " +
      "(the context without compaction); dots: provider-reported prompt_tokens; dashed: the compaction trigger (" +
      thr.toLocaleString("en") + " tokens" + (showThr ? "" : ", above this chart") + "); purple: compactions (dotted: undone)" +
      ((model.harness || []).length ? "; orange: the harness's own compactions (imported)." : ".");
  }

  function drawMemory() {
    var facts = document.getElementById("facts"), files = document.getElementById("files");
    if (!model.facts.length && !model.files.length) {
      facts.appendChild(el("p", "muted", "No facts and no working-memory files."));
      return;
    }
    model.facts.forEach(function (f) {
      var p = el("div", "fact" + (f.pinned ? " pinned" : ""), f.text);
      p.title = f.id;
      facts.appendChild(p);
    });
    model.files.forEach(function (f) {
      var box = el("details", "file");
      box.appendChild(el("summary", null, f.path + " · " + plural(f.text.length, "character")));
      box.appendChild(longText(f.text));
      files.appendChild(box);
    });
  }

  function wireSearch() {
    var input = document.getElementById("search"), count = document.getElementById("search-count");
    var timer = null;
    function run() {
      var q = input.value.trim().toLowerCase(), hits = 0;
      document.querySelectorAll(".item").forEach(function (node) {
        var hit = !q || node._haystack.indexOf(q) >= 0;
        node.classList.toggle("hidden", !hit);
        if (q && hit) hits++;
      });
      document.querySelectorAll(".turn").forEach(function (turn) {
        turn.classList.toggle("hidden", !!q && !turn.querySelector(".item:not(.hidden)"));
      });
      document.querySelectorAll("details.compaction, details.archived").forEach(function (d) {
        if (q && d.querySelector(".item:not(.hidden)")) d.open = true;
      });
      count.textContent = q ? plural(hits, "match", "matches") : "";
    }
    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(run, 120); });
    window.addEventListener("beforeprint", function () {
      document.querySelectorAll("details").forEach(function (d) {   // built now: the toggle event would come after printing
        d.open = true;
        if (d._fill) d._fill();
      });
    });
  }

  document.getElementById("agent-name").textContent = model.agent;
  document.title = "memcli · " + model.agent;
  var items = 0, calls = 0, errors = 0;
  model.turns.forEach(function (t) {
    t.items.forEach(function (it) { items++; if (it.k === "call") { calls++; if (it.status === "error") errors++; } });
  });
  document.getElementById("summary").textContent = plural(model.turns.length, "turn") + " · " + plural(items, "entry", "entries") +
    " · " + plural(calls, "tool call") + " (" + plural(errors, "error") + ") · " + plural(model.compactions.length, "compaction") +
    ((model.harness || []).length ? " · " + plural(model.harness.length, "harness compaction") : "") +
    " · drawn " + when(model.generated);
  drawChart();
  drawMemory();
  drawTimeline();
  wireSearch();
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
  document.body.dataset.ready = "1";
})();
