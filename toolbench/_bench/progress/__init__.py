"""What long work and a call show while they run: progress bars, handed to the kernel's
thread, and the ``bench.logs`` table.

It may import only the layers below ``_bench``.
"""
