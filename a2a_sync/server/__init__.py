"""The A2A server: a WSGI application serving an agent from plain threads."""

from __future__ import annotations
