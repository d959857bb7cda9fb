"""Layer 0, no I/O: names and identity (``ids``), the error tree (``errors``), escaping
(``html``), the client protocol and its values (``client``: ToolSpec, Result, which draws
itself), tool arguments checked once (``arguments``), server contents (``contents``), number
checks (``checks``), private files (``files``), and bounded schema checks (``schema/``).

May import the standard library and third-party packages only: no other toolbench layer.
Inside, the order is ``html`` < ``client`` < ``errors`` < ``arguments``.
"""
