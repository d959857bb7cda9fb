"""The bench layer: ``BaseBench`` (``bench.py``), a few collaborators that each own their
state, and the stateless faces that give them their public names.

Rooms, bottom-up (an import only goes down this list): ``journal`` and ``progress``;
``servers``; ``overtime``; ``catalog``; ``calls``; ``many``; ``replay``; then ``tables.py``,
``bench.py`` and ``signin_commands.py``. It may import ``_loop``, ``_routing``,
``_transports`` and ``_core``, never ``_notebook`` or ``_cli``.
"""
