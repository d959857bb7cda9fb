"""Catalog cost and quality: what a tool's definition costs a model, and the rules it breaks.

Holds the bounded walk over a declared tool (``walk``), token counting (``tokens``), the rule
catalog (``rules``), the text scans for tool poisoning (``poisoning``), quoting a server's
text in a finding (``quote``), sharing the interpreter while a report runs (``pace``), the
per-tool checks (``checks``), the report frame (``report``) and its per-server and per-name
views (``groups``). It may import ``toolbench._core`` and pandas (lazily); it imports nothing
from the notebook or the command line, which render what it computes.
"""
