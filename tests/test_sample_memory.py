"""The committed sample store is exactly what sample_memory/generate.py produces."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO, tree_digest


def test_committed_sample_memory_is_current(tmp_path):
    subprocess.run([sys.executable, str(REPO / "sample_memory" / "generate.py"), str(tmp_path)], check=True)
    committed = {k: v for k, v in tree_digest(REPO / "sample_memory" / "agents").items()
                 if not k.split("/")[-1].startswith(".")}
    assert tree_digest(tmp_path / "agents") == committed, "run: python sample_memory/generate.py"
    assert set(committed) >= {"coder/raw_traces.jsonl", "support/raw_traces.jsonl"}
