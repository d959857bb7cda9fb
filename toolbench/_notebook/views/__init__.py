"""Escaped HTML of the bench's tables, results, compare and diff frames, and what a server says
about itself."""
