"""Issue 13 (server part): serve() takes one frozen ServeOptions value instead of twelve
parameters, and its keywords keep working (applied onto the value)."""

from __future__ import annotations

import inspect

import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.server import A2AApplication, ServeOptions, ServerLimits, serve
from tests.server.agents import EchoAgent, card


def test_serve_has_at_most_ten_parameters() -> None:
    assert len(inspect.signature(serve).parameters) <= 10


def test_keywords_override_the_options_and_the_rest_are_waitress_settings() -> None:
    limits = ServerLimits(connection_limit=5)
    base = ServeOptions(grace=3.0, waitress={"ident": "a"})
    merged = base.merge({"limits": limits, "quiet": True, "trusted_proxy": "10.0.0.1"})
    assert merged.grace == 3.0
    assert merged.limits is limits
    assert merged.quiet
    assert merged.waitress == {"ident": "a", "trusted_proxy": "10.0.0.1"}
    assert base.merge({}) is base
    assert base.merge({"app_options": None}).app_options == {}


@pytest.mark.parametrize("how", ["options", "keyword"])
def test_serve_uses_the_options_threads(how: str) -> None:
    """threads=1 cannot serve an app with a stream cap of 32: RunningServer refuses it
    before binding, which shows the value reached it either way."""
    app = A2AApplication(card(), EchoAgent())
    kwargs: dict[str, object] = (
        {"options": ServeOptions(threads=1, quiet=True)}
        if how == "options"
        else {"threads": 1, "quiet": True}
    )
    try:
        with pytest.raises(ConfigurationError, match="threads=1 must exceed"):
            serve(app, port=0, **kwargs)  # type: ignore[arg-type]
    finally:
        app.close(0.0)
