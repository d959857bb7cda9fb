"""Checking arguments against a tool's input schema, bounded: the validator, its fast path,
its limits, the early import.

May import ``_core`` (``html``, ``errors``, ``ids``) and jsonschema; nothing above the core.
"""
