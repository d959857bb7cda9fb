"""Signing in to a protected server: the SDK's OAuth providers, the person's step (loopback, pasted
address), the token store."""
