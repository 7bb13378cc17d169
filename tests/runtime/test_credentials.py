"""Credentials: missing ones are a configuration error; the token never shows in a repr or an error
message.
"""

from __future__ import annotations

import pytest
from workers_ai import WorkersAI, errors

from tests._server import ScriptedServer
from tests.conftest import ACCOUNT, TOKEN
from tests.runtime._client import assert_token_absent, embed


def test_missing_credentials_are_a_configuration_error() -> None:
    with pytest.raises(errors.ConfigurationError, match="CLOUDFLARE_ACCOUNT_ID"):
        WorkersAI(api_token=TOKEN)
    with pytest.raises(errors.ConfigurationError, match="CLOUDFLARE_API_TOKEN"):
        WorkersAI(account_id=ACCOUNT)


def test_token_never_in_repr(server: ScriptedServer) -> None:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url)
    assert TOKEN not in repr(ai) and TOKEN not in str(ai)
    assert TOKEN not in repr(ai.model("@cf/baai/bge-m3"))


def test_token_with_a_line_break_is_refused_without_echoing_it() -> None:
    with pytest.raises(errors.ConfigurationError) as info:
        WorkersAI(account_id=ACCOUNT, api_token=TOKEN + "\n")
    assert TOKEN not in str(info.value)


def test_bad_extra_header_never_echoes_the_token(server: ScriptedServer) -> None:
    ai = WorkersAI(account_id=ACCOUNT, api_token=TOKEN, base_url=server.base_url, headers={"x-note": "a\nb"})
    with pytest.raises(errors.ConfigurationError) as info:
        embed(ai)
    assert_token_absent(info.value)
    assert server.requests == []
