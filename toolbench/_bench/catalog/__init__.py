"""The catalog following its servers, and ``bench.tools`` handles."""
