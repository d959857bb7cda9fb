"""``bench.explore()``: the explorer widget and its sections (tools, resources, prompts,
changes), suggestions and forms.

May import the layers below the notebook, ``ask/`` (forms) and ``views/`` (HTML).
"""
