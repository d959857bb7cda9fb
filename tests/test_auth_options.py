"""The auth= option's values (toolbench/_transports/auth/options.py): checked where they are
made, secrets never in a repr; a config file's "auth" is in test_config.py and, end to end,
test_auth_config.py."""

from __future__ import annotations

import pytest

import toolbench as tb
from toolbench._transports.auth.tokens import FileStore


def test_the_options_check_their_values_and_hide_secrets() -> None:
    secret = "very-secret-client-secret"
    option = tb.OAuth(client_id="me", client_secret=secret)
    assert secret not in repr(option)
    cc = tb.ClientCredentials("me", client_secret=secret)
    assert secret not in repr(cc) and secret not in str(cc)
    with pytest.raises(ValueError, match="exactly one of client_secret and private_key"):
        tb.ClientCredentials("me")
    with pytest.raises(ValueError, match="plain http only on a loopback"):
        tb.OAuth(redirect_uri="http://example.com/cb")
    with pytest.raises(ValueError, match="invalid auth 'basic'"):
        tb.McpClient("http://127.0.0.1:1/mcp", auth="basic")
    with pytest.raises(ValueError, match="auth is for an http"):
        tb.McpClient(["python", "-V"], auth="oauth")
    store = FileStore("/nonexistent/x")
    assert store.load("http://a/mcp") == []
