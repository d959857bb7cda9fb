"""Cassettes: replaying a recording, and serving one as an MCP server."""
