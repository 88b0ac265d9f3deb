"""The smaller points of issue 26, each as a daily user meets it (the terminal-safety point is
tests/test_neutral_output.py)."""

from __future__ import annotations

import sys
import tempfile

import pytest

from tests.events import U
from tests.helpers import REPO, proc_env

# ---------------------------------------------------------------- 8: a quiet MCP server

def _mcp_stderr(memory_dir, *extra) -> str:
    """What ``memcli mcp`` writes on stderr while a client lists its tools and searches twice."""
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, env=proc_env(), cwd=str(REPO),
                                   args=["-m", "memcli", "--dir", str(memory_dir), "mcp", "--agent", "a", *extra])
    with tempfile.TemporaryFile("w+") as errlog:
        async def main():
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()
                    for _ in range(2):
                        result = await session.call_tool("memory_search", {"query": "hello"})
                        assert not result.isError

        anyio.run(main)
        errlog.seek(0)
        return errlog.read()


def test_mcp_is_quiet_by_default_and_logs_requests_when_asked(cli, memory_dir):
    assert cli("ingest", "a", input=[U("hello there")]).exit_code == 0
    assert _mcp_stderr(memory_dir) == ""
    assert _mcp_stderr(memory_dir, "--log-level", "info").count("Processing request of type") >= 3  # list, 2 calls
