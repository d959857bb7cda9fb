"""toolbench's version, written once: the package metadata (pyproject's ``[tool.hatch.version]``
reads this file), ``toolbench.__version__`` and the ``clientInfo`` sent to servers."""

__version__ = "0.1.0"
