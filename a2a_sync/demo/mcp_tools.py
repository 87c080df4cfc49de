"""The demo's MCP tool server: ``factorize`` over stdio, with no MCP framework.

Run it as ``python -m a2a_sync.demo.mcp_tools`` (the demo agent starts it through
:meth:`~a2a_sync.mcp.MCPConnection.stdio`), or try it from a shell::

    a2a-sync mcp call factorize '{"n": 360}' --stdio python -m a2a_sync.demo.mcp_tools

It is the scripted test server of :mod:`a2a_sync.testing.mcp_server` with one tool
implemented in Python.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from .._version import __version__
from ..testing.mcp_server import ScriptedMCPServer

__all__ = ["LARGEST", "SCRIPT", "factorize", "main", "prime_factors"]

#: Largest number the tool factors: trial division stays under a few milliseconds.
LARGEST: Final = 10**13

SCRIPT: Final[dict[str, Any]] = {
    "name": "a2a-sync-demo-tools",
    "version": __version__,
    "instructions": "Arithmetic tools for the a2a_sync demo agent.",
    "tools": {
        "factorize": {
            "description": "The prime factors of a whole number (2 .. 10^13), smallest first",
            "input_schema": {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 2, "maximum": LARGEST}},
                "required": ["n"],
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "factors": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["n", "factors"],
            },
        }
    },
}


def prime_factors(n: int) -> list[int]:
    """The prime factors of ``n`` (>= 2), smallest first, with repetition."""
    factors: list[int] = []
    divisor = 2
    while divisor * divisor <= n:
        while n % divisor == 0:
            factors.append(divisor)
            n //= divisor
        divisor += 1 if divisor == 2 else 2
    if n > 1:
        factors.append(n)
    return factors


def factorize(arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``factorize`` tool: ``{"n": 360}`` → ``{"n": 360, "factors": [2, 2, 2, 3, 3, 5]}``.

    Raises:
        ValueError: ``n`` is not a whole number in 2 .. :data:`LARGEST` (a failed call).
    """
    n = arguments.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= LARGEST:
        raise ValueError(f"n must be a whole number from 2 to {LARGEST}, got {n!r}")
    return {"n": n, "factors": prime_factors(n)}


def main() -> int:
    """Serve the tools on stdin/stdout until end of input."""
    server = ScriptedMCPServer(SCRIPT, handlers={"factorize": factorize})
    server.serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
