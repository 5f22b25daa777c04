"""Serving edges: the REST API (http), the MCP server (mcp), access control and metrics."""
