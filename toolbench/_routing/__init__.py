"""Layer 2, routing: which client serves a server (``router``), which name means which tool
(the pegboard: ``pegboard`` its behaviour, ``pegboard_board`` its snapshot and the changes to
it, ``pegboard_names`` the naming rules), and what a connect target opens (``connections``).

May import ``_core`` and ``_transports``; never the loop, the bench or anything above.
"""
