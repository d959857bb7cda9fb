"""toolbench's benchmarks: ``python -m bench [--quick]`` runs them all (see BENCHMARKS.md)."""
