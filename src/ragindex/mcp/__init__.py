"""The MCP server of ragindex (``ragindex mcp``): the index's tools and documents for MCP clients.

Nothing here is imported by ``import ragindex``. The ``mcp`` extra provides the official MCP SDK (``mcp``);
:mod:`ragindex.mcp.schemas`, :mod:`ragindex.mcp.paths` and :mod:`ragindex.mcp.tools` do not need it.
This package is ``ragindex.mcp``; ``import mcp`` inside it still names the SDK (imports are absolute).
"""
