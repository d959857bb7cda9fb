"""The bench: connect, catalog, call, compare, map, records, the journal and configuration."""
