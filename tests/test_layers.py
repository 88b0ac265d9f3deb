"""The layers of docs/design.md ("Layers"), read from the code's own imports.

Every ``import`` / ``from ... import`` under ``memcli/`` — at module level or inside a function
(a lazy import is still a dependency) — is parsed, and each module is mapped to its unit: the
package right under ``memcli`` (``memcli.store.agent`` → ``store``) or the top-level module
(``memcli.models`` → ``models``). The units are ranked bottom up; a unit may import its own rank
or lower ranks, never a higher one, and no two units may depend on each other, directly or
through others (no package cycles). A new package or top-level module must be placed in
``LAYERS`` below: the test fails until it is, so the place is decided, not drifted into.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "memcli"

LAYERS = [
    # 0: leaves — data types, errors, ids, token counting, the native event format, JSON as
    #    harnesses write it (json_input), the canonical message model, the shared call/result pairing, secret redaction, stored text
    #    made harmless for human views (neutral), bulk passes without the cyclic collector (bulk)
    {"models", "errors", "ids", "tokens", "events", "json_input", "messages", "tool_interactions", "pairing", "filters", "redact", "sizes",
     "neutral", "bulk"},
    # 1: the store — the only code that writes the memory directory
    {"store"},
    # 2: features over the store
    {"ingest", "importers", "compaction", "snapshot", "renderers", "search", "inspect", "export",
     "working_memory", "memory_tool",
     # agent homes (sync), harness hooks, the shared PostgreSQL replica, the HTML view
     "sync", "hooks", "remote", "view"},
    # 3: the Python API (memcli.Memory); the package's own __init__ exports it lazily
    {"api", "facade", "<root>"},
    # 4: entry points
    {"cli", "mcp", "__main__"},
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
# third-party packages only these units may import (start-up time; optional dependencies)
RESTRICTED = {"typer": {"cli"}, "rich": {"cli"}, "click": {"cli"}, "mcp": {"mcp"}}


def _module_name(path: Path) -> str:
    parts = ("memcli",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module or ``module.name``) of every import in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
    return found


def _edges() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, "file:line") for every import between memcli units."""
    edges = []
    for path in sorted(ROOT.rglob("*.py")):
        source = _unit(_module_name(path))
        for line, target in _imports(path):
            if target == "memcli" or target.startswith("memcli."):
                imported = _unit(target)
                if imported != source:
                    edges.append((source, imported, f"{path.relative_to(ROOT.parent)}:{line}"))
    return edges


def test_every_unit_has_a_layer():
    units = {_unit(_module_name(p)) for p in ROOT.rglob("*.py")}
    assert not units - RANK.keys(), (
        f"place {sorted(units - RANK.keys())} in LAYERS of tests/test_layers.py (and docs/design.md)")


def test_no_unit_imports_a_higher_layer():
    upward = [f"{where}: {src} (layer {RANK.get(src)}) imports {dst} (layer {RANK.get(dst)})"
              for src, dst, where in _edges()
              if src in RANK and dst in RANK and RANK[dst] > RANK[src]]
    assert upward == []


def test_no_package_cycles():
    graph: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for src, dst, at in _edges():
        graph.setdefault(src, set()).add(dst)
        where.setdefault((src, dst), at)
    cycles = []
    for start in sorted(graph):
        # a path from one of start's imports back to start is a cycle through start
        stack = [(dst, [start, dst]) for dst in sorted(graph[start])]
        seen = set()
        while stack:
            node, trail = stack.pop()
            if node == start:
                cycles.append(" -> ".join(f"{a} ({where[(a, b)]})" for a, b in zip(trail, trail[1:])) + " (cycle)")
                break
            if node in seen:
                continue
            seen.add(node)
            stack += [(nxt, trail + [nxt]) for nxt in sorted(graph.get(node, ()))]
    assert cycles == []


@pytest.mark.parametrize("package", sorted(RESTRICTED))
def test_restricted_third_party_imports_stay_in_their_units(package):
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        unit = _unit(_module_name(path))
        for line, target in _imports(path):
            if target.split(".")[0] == package and unit not in RESTRICTED[package]:
                offenders.append(f"{path.relative_to(ROOT.parent)}:{line}")
    assert offenders == []


def test_the_checker_sees_relative_and_lazy_imports(tmp_path):
    """The parser the tests above rely on: a lazy import inside a function and a relative
    import are both found (a checker that found nothing would pass everything)."""
    imports = dict((target, line) for line, target in _imports(ROOT / "store" / "agent.py"))
    assert "memcli.store.journal" in imports            # lazy, inside WriteSession.open
    assert any(src == "store" and dst == "errors" for src, dst, _ in _edges())


# What the CLI and the MCP server may import of memcli (issue 21: the Python API is the seam):
# the API, errors and models, the two formatting leaves a terminal needs, and their own package.
CLIENT_UNITS = {"cli", "mcp"}
CLIENT_MAY_IMPORT = {"memcli", "memcli.api", "memcli.errors", "memcli.models", "memcli.sizes", "memcli.ids"}
# Imports that still go around the API, by file: this list only shrinks. A new command reaches
# the library through a method of memcli.api (and is not added here).
NOT_YET_THROUGH_THE_API: dict[str, set[str]] = {}


def _client_imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if _unit(_module_name(path)) not in CLIENT_UNITS:
            continue
        for _, target in _imports(path):
            # the CLI's `memcli mcp` runs the server: clients may use each other
            if (target == "memcli" or target.startswith("memcli.")) and not (
                    target in CLIENT_MAY_IMPORT or _unit(target) in CLIENT_UNITS):
                found.setdefault(str(path.relative_to(ROOT.parent)), set()).add(target)
    return found


def test_the_cli_and_the_mcp_server_reach_the_library_through_the_api():
    found = _client_imports()
    new = {f: sorted(m - NOT_YET_THROUGH_THE_API.get(f, set())) for f, m in found.items()}
    assert {f: m for f, m in new.items() if m} == {}, "call a memcli.api method instead"
    # the list shrinks: an entry no longer needed must go
    stale = {f: sorted(m - found.get(f, set())) for f, m in NOT_YET_THROUGH_THE_API.items()}
    assert {f: m for f, m in stale.items() if m} == {}
