"""The ``grpc`` extra for test modules: skipped without it, a failure under ``CI=true``."""

from __future__ import annotations

from types import ModuleType

import pytest

from .postgres import _under_ci


def import_grpc() -> ModuleType:
    """``grpc``, for test modules that need the gRPC binding at import time."""
    try:
        import google.rpc.status_pb2  # noqa: F401 - part of the extra
        import grpc
    except ImportError:
        reason = "grpcio is not installed: pip install 'a2a-sync[grpc]'"
        if _under_ci():
            pytest.fail(f"gRPC tests cannot run under CI: {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return grpc
