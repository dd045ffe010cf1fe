"""Which origins may call the API: parsing STEPLINE_CORS_ORIGINS, and the errors that name a bad one."""

from __future__ import annotations

import pytest

from stepline.api.cors import parse_origins
from stepline.aws.api import api_options
from stepline.aws.wiring import ConfigurationError, Settings
from stepline.local.dev import DevConfig, DevConfigError


def test_origins_are_split_trimmed_and_deduplicated() -> None:
    text = " https://app.example.com, http://localhost:3000,,https://app.example.com ,http://[::1]:5173,*"
    assert parse_origins(text) == ("https://app.example.com", "http://localhost:3000", "http://[::1]:5173", "*")
    assert parse_origins("") == ()


@pytest.mark.parametrize(
    "bad",
    ["app.example.com", "https://app.example.com/", "https://app.example.com/chat", "ftp://files.example", "https://"],
)
def test_a_value_that_is_not_an_origin_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match="is not an origin") as caught:
        parse_origins(f"http://localhost:3000,{bad}")
    assert repr(bad) in str(caught.value)


def test_the_dev_server_and_the_functions_refuse_a_bad_list_saying_which_variable() -> None:
    with pytest.raises(DevConfigError, match=r"STEPLINE_CORS_ORIGINS: 'https://a.example/x' is not an origin"):
        DevConfig.from_env({"STEPLINE_CORS_ORIGINS": "https://a.example/x"})
    assert DevConfig.from_env({"STEPLINE_CORS_ORIGINS": "https://a.example"}).cors_origins == ("https://a.example",)
    env = {
        "STEPLINE_AGENT_TABLE": "agent",
        "STEPLINE_EVENTS_TABLE": "events",
        "STEPLINE_BUCKET": "bucket",
        "STEPLINE_MODEL": "openai:gpt-5.1",
    }
    assert api_options(Settings.from_env(env)).cors_origins == ()
    assert api_options(Settings.from_env({**env, "STEPLINE_CORS_ORIGINS": "https://a.example"})).cors_origins == (
        "https://a.example",
    )
    with pytest.raises(ConfigurationError, match=r"STEPLINE_CORS_ORIGINS: 'a.example' is not an origin"):
        api_options(Settings.from_env({**env, "STEPLINE_CORS_ORIGINS": "a.example"}))
