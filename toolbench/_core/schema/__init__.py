"""Checking arguments against a tool's input schema, bounded: the validator, its fast path, its
limits, the early import."""
