"""Models in the loop: ``tb.models.sampler`` (and the provider adapters).

toolbench ships no model and calls no provider by itself; these wrap what the user brings.
"""

from toolbench._bench.models.sampler import sampler

__all__ = ["sampler"]
