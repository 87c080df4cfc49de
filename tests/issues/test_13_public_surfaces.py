"""Issue 13: the remaining public import paths (``a2a_sync.errors``, ``.policies``, ``.signing``,
``.auth``, ``.auth.oauth``) pinned to exact ``__all__`` lists, like the package root,
``.types``, ``.client``, ``.server``, ``.testing`` (tests/issues/test_13_a2a_house.py) and
``.mcp`` (tests/issues/test_13_mcp_house.py): adding or removing a name changes this test.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

ERRORS_ALL = frozenset(
    {
        "A2AError",
        "A2ASyncError",
        "AllAgentsFailed",
        "AuthRequired",
        "AuthorizationError",
        "AuthorizationRequired",
        "Cancelled",
        "ConfigurationError",
        "ConnectError",
        "ConnectTimeout",
        "ConnectionClosed",
        "ConnectionLost",
        "ContentTypeNotSupported",
        "DeadlineExceeded",
        "EXCERPT_LIMIT",
        "EmptyToolContent",
        "ExtendedAgentCardNotConfigured",
        "ExtensionSupportRequired",
        "HTTPStatusError",
        "HeaderMismatch",
        "InputRequired",
        "InsufficientScope",
        "InternalError",
        "InvalidAgentResponse",
        "InvalidParams",
        "InvalidRequest",
        "MCPError",
        "MethodNotFound",
        "MissingRequiredClientCapability",
        "NoTextContent",
        "OutcomeUnknown",
        "ParseError",
        "ProtocolError",
        "PushNotificationNotSupported",
        "RPCError",
        "ReadTimeout",
        "RedirectRefused",
        "RequestTimeout",
        "ResourceNotFound",
        "ResponseTooLarge",
        "ServerProcessError",
        "SessionExpired",
        "SignatureError",
        "StreamInterrupted",
        "TaskCanceled",
        "TaskError",
        "TaskFailed",
        "TaskNotCancelable",
        "TaskNotFound",
        "TaskRejected",
        "TaskWaitTimeout",
        "TokenEndpointError",
        "ToolOutputError",
        "ToolOutputParseError",
        "TransportError",
        "URLElicitationRequired",
        "UnsupportedOperation",
        "UnsupportedProtocolVersion",
        "VersionNotSupported",
        "excerpt",
        "install_hint",
    }
)

POLICIES_ALL = frozenset(
    {
        "PollPolicy",
        "ReconnectPolicy",
        "ResilienceConfig",
        "RetryPolicy",
        "Timeout",
        "parse_retry_after",
    }
)

SIGNING_ALL = frozenset(
    {
        "HMAC_ALGORITHMS",
        "KeyProvider",
        "PUBLIC_KEY_ALGORITHMS",
        "canonicalize",
        "card_verifier",
        "parse_json",
        "sign_card",
        "signing_payload",
        "verify_card",
    }
)

AUTH_ALL = frozenset({"ChallengeAuth"})
OAUTH_ALL = frozenset(
    {
        "AuthorizationHandler",
        "ClientInfo",
        "FileTokenStore",
        "Grant",
        "GrantKey",
        "HeadlessHandler",
        "LoopbackListener",
        "MemoryTokenStore",
        "NotebookHandler",
        "OAuth",
        "OAuthOptions",
        "ScriptHandler",
        "Token",
        "TokenStore",
    }
)
SURFACES = {
    "a2a_sync.errors": ERRORS_ALL,
    "a2a_sync.policies": POLICIES_ALL,
    "a2a_sync.signing": SIGNING_ALL,
    "a2a_sync.auth": AUTH_ALL,
    "a2a_sync.auth.oauth": OAUTH_ALL,
}


@pytest.mark.parametrize("path", sorted(SURFACES))
def test_the_public_surface_is_exactly_the_list(path: str) -> None:
    if path == "a2a_sync.auth.oauth":
        pytest.importorskip("authlib")
    module = importlib.import_module(path)
    assert len(module.__all__) == len(set(module.__all__)), "duplicate names in __all__"
    assert set(module.__all__) == SURFACES[path]
    for name in module.__all__:
        assert getattr(module, name) is not None, name


@pytest.mark.parametrize("path", ["a2a_sync.errors", "a2a_sync.policies", "a2a_sync.auth"])
def test_import_star_works_on_a_base_install(path: str) -> None:
    # A fresh interpreter, so nothing imported by other tests helps the star import.
    code = (
        f"from {path} import *\n"
        "import json as _json\n"
        "print(_json.dumps(sorted(k for k in dir() if not k.startswith('_'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert set(json.loads(out.stdout)) == SURFACES[path]
