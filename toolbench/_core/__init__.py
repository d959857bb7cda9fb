"""Layers 0 and 1, no I/O: names and identity (``ids``), the error tree (``errors``),
escaping (``html``), the client protocol (``client``) and bounded schema checks (``validate``)."""
