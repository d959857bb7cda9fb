"""Records and the SQLite journal: intents before a send, outcomes after, the writer thread,
reading files back."""
