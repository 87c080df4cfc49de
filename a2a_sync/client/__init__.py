"""The A2A client: one agent (:class:`A2AClient`), credentials, and streamed tasks."""

from __future__ import annotations

from .auth import APIKey, BasicAuth, BearerToken, Credentials
from .client import A2AClient
from .options import ClientOptions
from .resilient.client import ResilientA2AClient, ResilientTaskStream
from .stream import TaskStream

__all__ = [
    "A2AClient",
    "APIKey",
    "BasicAuth",
    "BearerToken",
    "ClientOptions",
    "Credentials",
    "ResilientA2AClient",
    "ResilientTaskStream",
    "TaskStream",
]
