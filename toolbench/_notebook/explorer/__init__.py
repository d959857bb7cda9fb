"""``bench.explore()``: the explorer widget and its sections (tools, resources, prompts, changes),
suggestions and forms."""
