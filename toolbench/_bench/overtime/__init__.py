"""The bench over time: snapshots, diffs and pins."""
