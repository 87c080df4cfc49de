"""Multi-round tool requests (2026-07-28 ``input_required`` results, "MRTR").

A modern server may answer a call with ``resultType: "input_required"``: it needs the
client to fulfil ``inputRequests`` (sampling, elicitation, roots) or just to come back
later with the opaque ``requestState``. :class:`InputRounds` runs that loop: fulfil the
requests through the same callbacks that answer legacy server→client requests, retry with
a fresh id, and back off (through the injected ``sleep``) when a round carries only state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..errors import ProtocolError
from . import types as t
from ._correlator import PendingRequest

__all__ = ["DEFAULT_INPUT_REQUIRED_MAX_ROUNDS", "NOT_ANSWERED", "InputRounds"]

#: Rounds of ``input_required`` answers before a call gives up (the TypeScript, C# and Go
#: SDKs use the same cap): a server that keeps asking is broken or looping.
DEFAULT_INPUT_REQUIRED_MAX_ROUNDS: Final = 10
#: First pause before retrying an ``input_required`` result that only carries state.
STATE_ONLY_BACKOFF: Final = 0.05
#: Longest such pause.
STATE_ONLY_BACKOFF_MAX: Final = 0.25
#: ``answered`` when the first round's answer is not known yet.
NOT_ANSWERED: Final[Any] = object()

#: ``(method, params, progress) -> PendingRequest``: send one round.
Begin = Callable[[str, dict[str, Any], "Callable[[t.Progress], None] | None"], PendingRequest]
#: ``(method, params) -> result``: fulfil one input request through the user's callbacks.
Answer = Callable[[str, Any], Any]


class InputRounds:
    """Runs one call's ``input_required`` rounds until a complete result.

    Args:
        begin: Sends one round and returns its pending request.
        answer: Fulfils one input request (raises ``RPCError`` to refuse it).
        sleep: Waits between rounds that carry only ``requestState`` (tests inject a
            recorder, as for every other wait).
    """

    __slots__ = ("_answer", "_begin", "_sleep")

    def __init__(self, begin: Begin, answer: Answer, sleep: Callable[[float], None]) -> None:
        self._begin = begin
        self._answer = answer
        self._sleep = sleep

    def run(
        self,
        method: str,
        params: dict[str, Any],
        *,
        wait: Callable[[PendingRequest], Any],
        operation: str | None = None,
        progress: Callable[[t.Progress], None] | None = None,
        max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
        on_pending: Callable[[PendingRequest], None] | None = None,
        first: PendingRequest | None = None,
        answered: Any = NOT_ANSWERED,
    ) -> Any:
        """The complete result of ``method``; ``wait`` waits for one round's answer
        (``answered``: what ``first`` answered already, ``on_pending`` saw it then).

        Raises:
            ProtocolError: More than ``max_rounds`` rounds, or an unknown ``resultType``.
            RPCError: A callback refused an input request (its error propagates).
        """
        rounds = 0
        delay = STATE_ONLY_BACKOFF
        current = params
        while True:
            if answered is not NOT_ANSWERED:
                result, answered, first = answered, NOT_ANSWERED, None
            else:
                if first is not None:
                    pending, first = first, None
                else:
                    pending = self._begin(method, current, progress)
                if on_pending is not None:
                    on_pending(pending)
                result = wait(pending)
            kind = result.get("resultType") if isinstance(result, dict) else None
            if kind is None or kind == "complete":
                return result
            if kind != "input_required":
                raise ProtocolError(f"{method} returned unknown resultType {kind!r}")
            rounds += 1
            if rounds > max_rounds:
                raise ProtocolError(
                    f"{operation or method}: server still asked for input after {max_rounds} rounds"
                )
            requests = result.get("inputRequests") or {}
            current = {
                k: v for k, v in params.items() if k not in ("inputResponses", "requestState")
            }
            if requests:
                delay = STATE_ONLY_BACKOFF
                current["inputResponses"] = {
                    key: self._answer(str(req.get("method")), req.get("params"))
                    for key, req in requests.items()
                    if isinstance(req, dict)
                }
            else:
                self._sleep(delay)
                delay = min(delay * 2, STATE_ONLY_BACKOFF_MAX)
            if "requestState" in result:
                current["requestState"] = result["requestState"]
