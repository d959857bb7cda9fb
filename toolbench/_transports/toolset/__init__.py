"""A many-tools provider at one address: the ``help`` manifest, caps, lanes, locks, and serving
it."""
