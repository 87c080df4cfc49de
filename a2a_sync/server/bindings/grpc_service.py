"""The rpc handlers of the gRPC binding: each ``A2AService`` rpc answered by the app.

See :mod:`a2a_sync.server.bindings.grpc` (:class:`GRPCServer` runs them). Needs the
``grpc`` extra.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Protocol

import attrs
import grpc
from google.protobuf.message import DecodeError

from ...a2a.codec import Codec, codec_for
from ...a2a.grpc.convert import (
    STATUS_DETAILS_KEY,
    from_message,
    grpc_status_of,
    status_details,
    to_message,
)
from ...a2a.grpc.messages import METHODS, SERVICE, Method
from ...a2a.methods import Operation, Revision, wire_name
from ...a2a.types import AgentCard
from ...errors import InternalError, InvalidRequest, RPCError
from .._streams import SSEBody
from .._wire import check_version, dump_result, extensions_of, headers_of, load_params
from ..auth import Principal
from ..context import CallContext

__all__ = ["A2AServiceHandlers", "GRPCHost", "GRPCStreamBody"]

logger = logging.getLogger(__name__)

_CODEC: Final = codec_for("1.0")


class GRPCHost(Protocol):
    """What the binding uses of the application (see :class:`A2AApplication`)."""

    card: AgentCard
    handler: Any
    max_body_bytes: int
    max_streams: int

    def _principal(self, environ: Mapping[str, Any]) -> Principal | None: ...

    def _challenge(self, environ: Mapping[str, Any]) -> str: ...

    def _refusal(self, principal: Principal, operation: Operation, method: str) -> str | None: ...

    def _admit(self) -> bool: ...

    def _release(self) -> None: ...

    def _check_extended_card(self) -> None: ...

    def _stream(
        self,
        start_response: Any,
        operation: Operation,
        params: Any,
        call: CallContext,
        codec: Codec,
        *,
        body_class: type[SSEBody] = ...,
    ) -> Any: ...

    @property
    def _cards(self) -> Any: ...


@attrs.frozen
class _Status(grpc.Status):
    """A call's final status (what ``context.abort_with_status`` takes)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, str | bytes], ...] = ()


class _Refused(Exception):
    """A call refused before the handler: the status to answer with."""

    def __init__(self, status: _Status) -> None:
        super().__init__(status.details)
        self.status = status


def _error_status(exc: RPCError) -> _Status:
    code = grpc_status_of(exc)
    return _Status(
        grpc.StatusCode[code],
        exc.message,
        ((STATUS_DETAILS_KEY, status_details(exc, code)),),
    )


#: Trailing metadata carrying the authenticator's ``WWW-Authenticate`` challenge on
#: UNAUTHENTICATED and PERMISSION_DENIED (the HTTP bindings send it as a header).
CHALLENGE_KEY: Final = "www-authenticate"


def _unauthenticated(challenge: str) -> _Status:
    return _Status(
        grpc.StatusCode.UNAUTHENTICATED,
        "authentication required",
        ((CHALLENGE_KEY, challenge),),
    )


_SHUTTING_DOWN: Final = _Status(grpc.StatusCode.UNAVAILABLE, "shutting down")
_BUSY: Final = _Status(grpc.StatusCode.UNAVAILABLE, "too many streams")
_EXPIRED: Final = _Status(
    grpc.StatusCode.DEADLINE_EXCEEDED, "the deadline passed before the call ran"
)


def _expired(context: grpc.ServicerContext) -> bool:
    """The caller gave up already (a call that waited for a pool thread past its
    deadline): such a call must not act."""
    remaining = context.time_remaining()
    return remaining is not None and remaining <= 0


class GRPCStreamBody(SSEBody):
    """A stream of the application whose items are the events themselves: the rpc's
    generator turns them into ``StreamResponse`` messages. Heartbeats are not needed
    (HTTP/2 keeps the connection); idle polls only check for shutdown."""

    @staticmethod
    def busy(start_response: Any) -> list[bytes]:
        raise _Refused(_BUSY)

    def __next__(self) -> Any:
        while True:
            if self._done:
                self.close()
                raise StopIteration
            poll = getattr(self._events, "poll", None)
            try:
                if poll is None:
                    return next(self._events)
                event = poll(self._heartbeat_interval)
            except BaseException:
                self.close()
                raise
            if event is not None:
                return event
            if self._closing():
                self.close()
                raise StopIteration


def _parse(method: Method, raw: bytes) -> Any:
    """The request message from its bytes (parsed here, not by grpcio, so that a
    malformed message is answered like any bad request: INVALID_ARGUMENT + ErrorInfo)."""
    try:
        return method.request.FromString(raw)
    except DecodeError as exc:
        raise InvalidRequest(
            f"{method.name}: the request is not a valid {method.request.DESCRIPTOR.name} message"
        ) from exc


def _no_start_response(status: str, headers: Any, exc_info: Any = None) -> None:
    """The binding answers with gRPC statuses, not HTTP ones."""


class A2AServiceHandlers:
    """The rpc handlers of one application (A2A 1.0; 0.3's subclass overrides the
    service, the revision and the four conversion hooks below)."""

    service: str = SERVICE
    revision: Revision = "1.0"
    codec: Codec = _CODEC
    methods: Mapping[Operation, Method] = METHODS

    def __init__(self, app: GRPCHost, address: Callable[[], str]) -> None:
        self._app = app
        self._address = address

    # -- conversion hooks -------------------------------------------------------------------

    def _params(self, method: Method, message: Any) -> Any:
        """The request message as the params dict :attr:`codec` loads."""
        return from_message(message)

    def _result(self, method: Method, answer: Any) -> Any:
        """The response message of a result the codec dumped."""
        return to_message(method.response, answer, method.name)

    def _event(self, method: Method, event: Any) -> Any:
        """The response message of one stream event the codec dumped."""
        return to_message(method.response, event, method.name)

    def _error(self, exc: RPCError) -> _Status:
        """The status answering ``exc``."""
        return _error_status(exc)

    def handler(self) -> grpc.GenericRpcHandler:
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
        for method in self.methods.values():
            if method.streaming:
                handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                    self._streaming(method),
                    response_serializer=method.response.SerializeToString,
                )
            else:
                handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                    self._unary(method),
                    response_serializer=method.response.SerializeToString,
                )
        return grpc.method_handlers_generic_handler(self.service, handlers)

    # -- one call ---------------------------------------------------------------------------

    def _environ(self, context: grpc.ServicerContext, method: Method) -> dict[str, Any]:
        """The call as a WSGI-style environ: what the authenticator and the header
        helpers read (metadata ``authorization`` -> ``HTTP_AUTHORIZATION``)."""
        host, _, port = self._address().rpartition(":")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": method.path,
            "SCRIPT_NAME": "",
            "SERVER_NAME": host,
            "SERVER_PORT": port,
            "SERVER_PROTOCOL": "HTTP/2",
            "wsgi.url_scheme": "grpc",
            "REMOTE_ADDR": context.peer(),
            "a2a_sync.grpc_context": context,
        }
        for key, value in context.invocation_metadata():
            if key.endswith("-bin") or key.startswith(":") or not isinstance(value, str):
                continue
            name = "HTTP_" + key.upper().replace("-", "_")
            environ[name] = f"{environ[name]},{value}" if name in environ else value
        return environ

    def _begin(
        self, request: Any, context: grpc.ServicerContext, method: Method
    ) -> tuple[Any, CallContext, dict[str, Any]]:
        """Authenticate, check the version and load the params (raising RPCError/_Refused)."""
        environ = self._environ(context, method)
        principal = self._app._principal(environ)
        if principal is None:
            raise _Refused(_unauthenticated(self._app._challenge(environ)))
        check_version(environ, self.revision)
        operation = method.operation
        params = load_params(self.codec, operation, self._params(method, _parse(method, request)))
        if operation is Operation.GET_EXTENDED_CARD:
            self._app._check_extended_card()
            if principal.is_anonymous:
                raise _Refused(_unauthenticated(self._app._challenge(environ)))
        name = wire_name(operation, self.revision) or ""
        refused = self._app._refusal(principal, operation, name)
        if refused is not None:
            raise _Refused(
                _Status(
                    grpc.StatusCode.PERMISSION_DENIED,
                    "insufficient scope",
                    ((CHALLENGE_KEY, refused),),
                )
            )
        call = CallContext(
            principal=principal,
            revision=self.revision,
            method=name,
            operation=operation,
            extensions=extensions_of(environ, self.revision),
            headers=headers_of(environ),
            environ=environ,
        )
        return params, call, environ

    def _unary(self, method: Method) -> Callable[[Any, grpc.ServicerContext], Any]:
        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            if not self._app._admit():
                context.abort_with_status(_SHUTTING_DOWN)
            try:
                outcome = self._answer(method, request, context)
            finally:
                self._app._release()
            if isinstance(outcome, _Status):
                context.abort_with_status(outcome)
            return outcome

        return handle

    def _answer(self, method: Method, request: Any, context: grpc.ServicerContext) -> Any:
        operation = method.operation
        try:
            params, call, environ = self._begin(request, context, method)
            if _expired(context):
                return _EXPIRED
            result = self._app.handler.dispatch(operation, params, call)
            if operation is Operation.GET_EXTENDED_CARD:
                result = self._app._cards.extended(result, environ)
            return self._result(method, dump_result(self.codec, operation, result))
        except _Refused as refused:
            return refused.status
        except RPCError as exc:
            return self._error(exc)
        except Exception:  # the call's top level: log, answer without details
            logger.exception("internal error answering gRPC %s", method.name)
            return self._error(InternalError())

    def _streaming(self, method: Method) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
        def handle(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            body: Any = None
            failure: _Status | None = None
            try:
                params, call, _ = self._begin(request, context, method)
                if _expired(context):
                    raise _Refused(_EXPIRED)
                body = self._app._stream(
                    _no_start_response,
                    method.operation,
                    params,
                    call,
                    self.codec,
                    body_class=GRPCStreamBody,
                )
            except _Refused as refused:
                failure = refused.status
            except RPCError as exc:
                failure = self._error(exc)
            except Exception:  # the call's top level
                logger.exception("internal error opening gRPC %s", method.name)
                failure = self._error(InternalError())
            if failure is not None:
                context.abort_with_status(failure)
            # The client going away (cancel, closed channel, deadline) ends the stream now,
            # not at the next event; a call that ended already is interrupted at once.
            if not context.add_callback(body.interrupt):
                body.interrupt()
            yield from self._events(body, method, context)

        return handle

    def _events(self, body: Any, method: Method, context: grpc.ServicerContext) -> Iterator[Any]:
        failure: _Status | None = None
        try:
            for event in body:
                if not context.is_active():
                    return
                yield self._event(method, self.codec.dump_stream_event(event))
        except RPCError as exc:
            failure = self._error(exc)
        except Exception:  # the stream's top level: log, one error status, end
            logger.exception("internal error in gRPC %s", method.name)
            failure = self._error(InternalError())
        finally:
            body.close()
        if failure is not None:
            context.abort_with_status(failure)
