"""Transports: one ``ToolClient`` per kind of server (MCP over stdio, HTTP or in process;
typed Python functions; a many-tools Toolset), each purely async."""
