"""Models in the loop: ``tb.models.openai`` and ``tb.models.anthropic`` (model functions over
the official clients, optional extras ``toolbench[openai]`` and ``toolbench[anthropic]``),
``tb.models.sampler`` (a model answering a server's sampling requests) and
``tb.models.ProviderError`` (what an adapter raises when its provider fails).

toolbench ships no model and calls no provider by itself; these wrap what the user brings.
"""

from toolbench._bench.models.adapters import ProviderError, anthropic, openai
from toolbench._bench.models.sampler import sampler

__all__ = ["ProviderError", "anthropic", "openai", "sampler"]
