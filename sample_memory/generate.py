"""Regenerate the sample store: ``python sample_memory/generate.py [OUT_DIR]``.

Two agents, written through memcli's own ingest with fixed ids and timestamps so the output is
byte-for-byte reproducible (``tests/test_sample_memory.py`` checks the committed files are
current):

* ``coder`` — a coding agent fixing a bug in a small Python service over 40 turns: file reads,
  test runs that fail and then pass, edits, parallel calls, a tool call that errors, one id reused
  for two calls, a user preference ("always run the linter..."), and a last command still
  running (a pending call).
* ``support`` — a customer-support chat agent looking up orders, searching a knowledge base and
  issuing a refund that the payment system rejects.

Only the data files are kept (``raw_traces.jsonl`` etc.); memcli's hidden caches are rebuilt from
them on first use.
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memcli.ingest.pipeline import ingest_events  # noqa: E402
from memcli.store.agent import AgentStore  # noqa: E402
from memcli.store.layout import DATA_FILES  # noqa: E402

BASE_TS = 1772442000.0  # 2026-03-02T09:00:00Z


class Transcript:
    def __init__(self, agent: str, seed: int, start: float):
        self.agent = agent
        self.rng = random.Random(seed)
        self.ts = start
        self.n = 0
        self.events: list[dict] = []

    def _add(self, event: dict, gap: tuple[float, float]) -> dict:
        self.n += 1
        self.ts += round(self.rng.uniform(*gap), 3)
        event = {"id": f"{self.agent}-{self.n:04d}", "ts": round(self.ts, 3), **event}
        self.events.append(event)
        return event

    def user(self, text: str, **kw) -> None:
        self._add({"trace_type": "user", "content": text, **kw}, (20, 240))

    def assistant(self, text: str, prompt_tokens: int | None = None, **kw) -> None:
        extra = {}
        if prompt_tokens is not None:
            extra["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": self.rng.randint(40, 400)}
        self._add({"trace_type": "assistant", "content": text, **extra, **kw}, (2, 15))

    def call(self, call_id: str, name: str, args: dict) -> None:
        self._add({"trace_type": "tool_call", "tool_name": name, "tool_call_id": call_id, "tool_args": args}, (1, 6))

    def result(self, call_id: str, name: str, result=None, error: str | None = None) -> None:
        event = {"trace_type": "tool_result", "tool_name": name, "tool_call_id": call_id}
        if error is not None:
            event["tool_error"] = error
        else:
            event["tool_result"] = result
        self._add(event, (0.2, 20))


SOURCE = {
    "app/orders.py": "def total(order):\n    return sum(i.price * i.qty for i in order.items)\n",
    "app/discounts.py": "def apply(total, code):\n    if code == 'SPRING10':\n        return total * 0.9\n    return total\n",
    "app/api.py": "from app.orders import total\n\n@route('/orders/<id>/total')\ndef order_total(id):\n    return {'total': total(load(id))}\n",
    "tests/test_orders.py": "def test_total_with_discount():\n    assert apply(total(ORDER), 'SPRING10') == 90.0\n",
}
FILES = sorted(SOURCE)
ASKS = [
    "The order total endpoint returns 100.0 for order 1042 but the customer used SPRING10. Can you find out why?",
    "Run the test suite and tell me what fails.",
    "Check how discounts are applied in app/discounts.py.",
    "Please fix the discount bug and keep the change small.",
    "Add a regression test for order 1042.",
    "What does `git diff` look like now?",
    "Rename `apply` to `apply_discount` everywhere.",
    "Does anything else call app.discounts.apply?",
    "Update the CHANGELOG with the fix.",
    "Run the linter.",
    "Why is test_total_rounding flaky?",
    "Pin the rounding to two decimals with Decimal.",
    "Show me the final version of app/orders.py.",
    "Open a PR description for this change.",
]


def coder() -> Transcript:
    t = Transcript("coder", seed=7, start=BASE_TS)
    t.user("You are working in the repository acme/shop-api. Be concise.", tags=["system"])
    call = 0
    prompt = 1800
    for turn in range(40):
        ask = ASKS[turn % len(ASKS)]
        if turn == 3:
            ask = "I prefer small commits, and always run the linter before you tell me something is done."
        t.user(ask)
        prompt += t.rng.randint(300, 1500)
        steps = t.rng.randint(1, 4)
        for step in range(steps):
            kind = t.rng.choice(["read", "read", "test", "grep"] + (["edit"] if turn > 3 else []))
            if step == 0 and (turn < 4 or turn % 6 == 0):
                kind = "test"
            call += 1
            cid = f"call_{call:03d}"
            if turn == 5 and step == 0:
                # parallel calls, answered out of order
                t.assistant("Reading both files.", prompt)
                t.call(cid + "a", "read_file", {"path": "app/orders.py"})
                t.call(cid + "b", "read_file", {"path": "app/discounts.py"})
                t.result(cid + "b", "read_file", SOURCE["app/discounts.py"])
                t.result(cid + "a", "read_file", SOURCE["app/orders.py"])
                continue
            if turn == 8 and step == 0:
                # the same call id used twice in one turn (as real transcripts do)
                t.call("call_reused", "grep", {"pattern": "apply(", "path": "app"})
                t.result("call_reused", "grep", "app/api.py:7: total = apply(total(order), code)")
                t.call("call_reused", "grep", {"pattern": "apply(", "path": "tests"})
                t.result("call_reused", "grep", "tests/test_orders.py:2: assert apply(total(ORDER), 'SPRING10') == 90.0")
                continue
            if kind == "read":
                path = "app/missing.py" if (turn in (2, 11) and step == 1) else t.rng.choice(FILES)
                t.call(cid, "read_file", {"path": path})
                if path == "app/missing.py":
                    t.result(cid, "read_file", error="FileNotFoundError: [Errno 2] No such file or directory: 'app/missing.py'")
                else:
                    t.result(cid, "read_file", SOURCE[path])
            elif kind == "test":
                t.call(cid, "run_command", {"command": "pytest -q tests/test_orders.py"})
                if turn < 4:
                    t.result(cid, "run_command", error=(
                        "exit status 1\nFAILED tests/test_orders.py::test_total_with_discount - "
                        "assert 100.0 == 90.0\n1 failed, 11 passed in 0.84s"))
                else:
                    t.result(cid, "run_command", {"exit_code": 0, "stdout": "12 passed in 0.81s"})
            elif kind == "grep":
                t.call(cid, "grep", {"pattern": "SPRING10", "path": "."})
                t.result(cid, "grep", "app/discounts.py:2:    if code == 'SPRING10':\ntests/test_orders.py:2: ...")
            else:
                t.call(cid, "edit_file", {"path": "app/api.py", "old": "total(load(id))",
                                          "new": "apply(total(load(id)), load(id).discount_code)"})
                t.result(cid, "edit_file", "Applied 1 edit to app/api.py")
        if turn < 4:
            t.assistant("The endpoint never applies the discount: app/api.py calls total() but not "
                        "app.discounts.apply(). tests/test_orders.py::test_total_with_discount fails "
                        "with 100.0 != 90.0.", prompt)
        else:
            t.assistant(f"Done: {ask.rstrip('?.').lower()}. All 12 tests pass and ruff reports no issues.", prompt)
    # a long command still running when the transcript was recorded
    t.user("Run the full integration suite against staging.")
    t.assistant("Starting the integration suite; it takes a few minutes.", prompt + 900)
    t.call("call_pending", "run_command", {"command": "make integration ENV=staging", "timeout": 900})
    return t


def support() -> Transcript:
    t = Transcript("support", seed=11, start=BASE_TS + 3600)
    t.user("You are the support assistant of Acme Shop. Never promise delivery dates.", tags=["system"])
    orders = ["A-1042", "A-1043", "B-2001", "B-2002", "C-3100"]
    topics = [
        ("Hi, where is my order {o}? It was supposed to arrive yesterday.", "lookup_order"),
        ("Can I change the shipping address for {o}?", "lookup_order"),
        ("How do returns work for sale items?", "search_kb"),
        ("I want a refund for {o}, the blender arrived broken.", "refund_order"),
        ("Do you ship to Norway?", "search_kb"),
        ("My discount code SPRING10 did not work on {o}.", "lookup_order"),
    ]
    call = 0
    for turn in range(24):
        text, tool = topics[turn % len(topics)]
        order = orders[turn % len(orders)]
        t.user(text.format(o=order))
        call += 1
        cid = f"toolu_{call:03d}"
        if tool == "lookup_order":
            t.call(cid, "lookup_order", {"order_id": order})
            t.result(cid, "lookup_order", {"order_id": order, "status": t.rng.choice(["shipped", "in transit", "delayed"]),
                                           "carrier": "DHL", "tracking": f"JD0146{turn:04d}"})
            t.assistant(f"Order {order} is with DHL (tracking JD0146{turn:04d}). I cannot promise a delivery date, "
                        "but you can follow it on the carrier's site.", 900 + 150 * turn)
        elif tool == "search_kb":
            t.call(cid, "search_kb", {"query": text})
            t.result(cid, "search_kb", [{"title": "Returns policy", "url": "https://help.acme.example/returns"}])
            t.assistant("Sale items can be returned within 30 days: https://help.acme.example/returns", 900 + 150 * turn)
        else:
            t.call(cid, "refund_order", {"order_id": order, "reason": "damaged"})
            if turn == 3:
                t.result(cid, "refund_order", error="PaymentGatewayError: refund window closed for card payments (code R-17)")
                t.assistant(f"The payment system rejected the refund for {order} (code R-17). I have escalated it "
                            "to a human colleague who will email you within one business day.", 900 + 150 * turn)
            else:
                t.result(cid, "refund_order", {"refund_id": f"RF-{turn:05d}", "amount": 89.0})
                t.assistant(f"Refund RF-{turn:05d} of 89.00 EUR is on its way.", 900 + 150 * turn)
    return t


def generate(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for transcript in (coder(), support()):
            store = AgentStore(tmp, transcript.agent)
            ingest_events(store, ((i + 1, e) for i, e in enumerate(transcript.events)), source_event="sample")
            target = out / "agents" / transcript.agent
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            for name in DATA_FILES:
                src = Path(tmp) / "agents" / transcript.agent / name
                if src.exists():
                    shutil.copyfile(src, target / name)


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
