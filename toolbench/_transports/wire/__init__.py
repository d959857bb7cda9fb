"""Bounded bytes: the stdio transport, message and discovery limits, the tools/list precount, a
child's stderr."""
