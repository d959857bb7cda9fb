"""What a notebook shows: HTML tables and cells, the explorer and its forms, the compare
view, the ``df.tb`` accessor."""
