"""The bench over time: ``History`` (listings, snapshots), ``PinGuard`` (pins and the check
every use passes), the pins file, snapshots, their store and diffs, and the faces.

It may import ``toolbench._bench.servers``, ``journal``, and the layers below ``_bench``.
"""
