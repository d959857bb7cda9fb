"""Connecting servers to a bench, configuration files, the rest of the client, hiding secrets."""
