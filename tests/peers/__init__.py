"""Peer processes shared by the A2A suites (client, resilience, server interop).

:mod:`tests.peers.a2a_sdk_agent` is a scripted agent on the official a2a-sdk 1.3;
:mod:`tests.peers.fixtures` starts it once per test session.
"""

from __future__ import annotations

from pathlib import Path

PEERS = Path(__file__).parent
A2A_SDK_AGENT = str(PEERS / "a2a_sdk_agent.py")
