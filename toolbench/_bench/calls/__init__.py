"""One call, read or prompt fetch through the bench."""
