"""Routing: which client serves a server (``router``), which name means which tool
(``pegboard``), and what a connect target opens (``connections``)."""
