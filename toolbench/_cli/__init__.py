"""Layer 5, the ``toolbench`` command: the parser and dispatch (``main``), what a command
module is (``command``), what the command prints (``terminal``), which servers it starts
(``servers``), and one module per group of commands (``catalog``, ``calls``, ``demo``,
``lab``, ``auth``, ``serve_recording``), each listed in ``main.COMMANDS``.

May import every layer below, the notebook ``Bench`` and the bundled ``demo``.
"""
