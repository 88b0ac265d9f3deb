"""Memory as MCP tools (``memcli mcp``): :mod:`memcli.mcp.tools` is what each tool does, as plain
functions over the store (no SDK); :mod:`memcli.mcp.server` wires them into the official MCP
SDK's server. Importing this package does not import the SDK."""
