"""The `toolbench` command: its parser and entry point (main), and one module per group of
commands. May import every layer below it."""
