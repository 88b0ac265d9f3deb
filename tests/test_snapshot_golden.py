"""Golden files: the exact stdout of ``memcli snapshot`` on the fixture store, per provider.

The fixture (tests/snapshot_fixtures.py) has parallel calls answered out of order, an error result,
a pending call, an orphan, a reused id, an id no provider accepts, a result stored after the next
user message, images (URL and data:), a tool result with an image, audio, reasoning, a sidechain
and memory with superseded items. ``MEMCLI_UPDATE_GOLDEN=1 pytest tests/test_snapshot_golden.py``
rewrites the files; read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.snapshot_fixtures import AGENT, make_fixture_store
from tests.snapshot_validation import check_payload

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("MEMCLI_UPDATE_GOLDEN") == "1"  # read at import: conftest clears MEMCLI_*

CASES = [
    ("snapshot_openai-chat.json", "openai-chat", []),
    ("snapshot_openai-responses.json", "openai-responses", []),
    ("snapshot_anthropic.json", "anthropic", []),
    ("snapshot_gemini.json", "gemini", []),
    ("snapshot_text.txt", "text", []),
    # an older Gemini: no call ids, no thought signatures, tool media after the responses
    ("snapshot_gemini_legacy.json", "gemini", ["--model", "gemini-2.5-flash"]),
    # the budget views at work: a clipped log and stubs (5000); the first turn dropped, a stub restored (3000)
    ("snapshot_text_budget.txt", "text", ["--max-tokens", "5000", "--max-tool-result-chars", "300"]),
    ("snapshot_anthropic_budget.json", "anthropic", ["--max-tokens", "3000", "--max-tool-result-chars", "300"]),
]


@pytest.mark.parametrize("name,provider,args", CASES, ids=[c[0] for c in CASES])
def test_snapshot_matches_golden_file(cli, memory_dir, name, provider, args):
    make_fixture_store(memory_dir)
    result = cli("snapshot", AGENT, "--provider", provider, *args)
    assert result.exit_code == 0, result.stderr
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(result.stdout, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with MEMCLI_UPDATE_GOLDEN=1"
    assert result.stdout == path.read_text(encoding="utf-8")
    payload = result.stdout if provider == "text" else orjson.loads(result.stdout)
    check_payload(provider, payload)
