"""toolbench's benchmarks: ``python -m benchmarks [--quick]`` runs them all (see BENCHMARKS.md)."""
