"""The repository documents itself: docs/cli.md is what the commands' --help says, and code and
tests cite the design in docs/, never a file outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_command_reference_is_current():
    done = subprocess.run([sys.executable, str(REPO / "docs" / "gen_cli_reference.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_reference_covers_every_command():
    from memcli.cli.app import COMMAND_MODULES

    text = (REPO / "docs" / "cli.md").read_text()
    assert [c for c in COMMAND_MODULES if f"## memcli {c}\n" not in text] == []


def test_nothing_cites_a_document_outside_the_repository():
    outside = re.compile(r"\.\./shared|(?<![\w/])DESIGN\.md|(?<![\w/])CLI\.md")
    found = [f"{path.relative_to(REPO)}:{number}"
             for folder in ("memcli", "tests", "docs")
             for path in sorted((REPO / folder).rglob("*"))
             if path.suffix in (".py", ".md")
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if outside.search(line) and "corpora" not in line]
    found += [f"README.md:{n}" for n, line in enumerate((REPO / "README.md").read_text().splitlines(), 1)
              if outside.search(line)]
    assert found == []


def test_design_sections_cited_in_the_code_exist():
    sections = set(re.findall(r"^## (\d+)\. ", (REPO / "docs" / "design.md").read_text(), re.M))
    cited = set()
    for path in list((REPO / "memcli").rglob("*.py")) + list((REPO / "tests").rglob("*.py")):
        for match in re.finditer(r"docs/design\.md §(\d+)(?:[–-]§?(\d+))?", path.read_text()):
            cited.update(n for n in match.groups() if n)
    assert cited and cited <= sections


def test_the_store_layout_section_is_current():
    done = subprocess.run([sys.executable, str(REPO / "docs" / "gen_store_layout.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_layout_lists_every_file_an_agent_gets(cli, memory_dir):
    """Ingest, compaction (ledger, breaker), search (index), remember, the memory tool and a
    token count leave only files the layout (and so docs/design.md §1) lists."""
    import memcli
    from memcli.store.layout import LAYOUT
    from tests.events import turns

    agent = memcli.Memory(memory_dir).agent("a")
    agent.ingest(turns(8))
    agent.compact(tail_turns=2, keep_steps=0)
    agent.search("question")
    agent.remember("uses pytest")
    agent.memory_tool({"command": "create", "path": "/memories/notes.md", "file_text": "hi"})
    agent.stats()
    listed = {path.strip().rstrip("/").split("/")[-1] for path, _ in LAYOUT}
    made = {p.name for p in (memory_dir / "agents" / "a").iterdir()}
    assert made - listed == set() and {"raw_traces_archive.jsonl", ".compactions.jsonl", ".search.sqlite",
                                       "memory_files.jsonl", ".token-counts"} <= made


def test_the_mcp_tool_table_lists_every_tool(memory_dir):
    import re

    import pytest

    pytest.importorskip("mcp")
    from memcli.mcp.server import _tool_specs
    from memcli.mcp.tools import MemoryTools

    names = [name for name, _, _ in _tool_specs(MemoryTools(memory_dir))]
    table = re.findall(r"^\| `(\w+)` \|", (REPO / "docs" / "memory-as-tools.md").read_text(), re.M)
    assert sorted(table) == sorted(names) and "memory" in names
