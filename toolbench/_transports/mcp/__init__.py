"""One MCP connection (``McpClient``): its owner task and lifecycle, calls, listings, resources,
completions, subscriptions, tasks, events and the error mapping."""
