"""``FakeAgent``: a scriptable A2A agent for tests.

Say what the agent does with each message, run it with
:func:`~a2a_sync.testing.agent_server`, and point the code under test at the URL::

    from a2a_sync import A2AClient
    from a2a_sync.testing import FakeAgent, agent_server

    agent = FakeAgent()
    agent.on("hello", reply="hi there")                          # one direct message
    agent.on("report", chunks=["part 1, ", "part 2"], delay=0.1)  # a streamed artifact
    agent.on("city?", ask="Which city?")                          # input_required
    agent.on("nope", state="failed", message="cannot do that")
    agent.on(lambda text: text.startswith("sum "), run=my_execute)

    with agent_server(agent) as url, A2AClient.from_url(url) as client:
        assert client.send_message("hello").text == "hi there"
    assert agent.messages[0].text == "hello"

The first rule that matches a message's text decides (a string matches exactly, a
compiled pattern with ``search``, a callable by returning true, ``None`` matches
everything); a message no rule matches is echoed (``echo: <text>``, completed). It is a
real :class:`~a2a_sync.server.AgentExecutor`: the server, the task store and the
protocol are the real ones; only the agent's behaviour is scripted.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs

from ..a2a.types import AgentCapabilities, AgentCard, AgentSkill, Message, TaskState
from ..errors import ConfigurationError
from ..server.executor import AgentExecutor, ExecuteFunction, RequestContext, TaskUpdater

__all__ = ["DEFAULT_HOLD_TIMEOUT", "FakeAgent", "Script", "agent_card"]

#: Longest a ``hold=True`` rule waits for :meth:`FakeAgent.release`: longer than any test
#: should take, short enough that a forgotten release does not hang a suite.
DEFAULT_HOLD_TIMEOUT: Final = 30.0

Match = str | re.Pattern[str] | Callable[[str], bool] | None


def agent_card(
    name: str = "Fake agent",
    *,
    description: str = "A scripted agent for tests",
    streaming: bool = True,
    skills: Sequence[AgentSkill] = (),
) -> AgentCard:
    """A minimal valid card (no interfaces listed: the server advertises its own URL).

    Args:
        name: The agent's name.
        description: What it does.
        streaming: Whether it declares streaming.
        skills: Its skills (one ``echo`` skill by default).
    """
    return AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=list(skills)
        or [AgentSkill(id="echo", name="Echo", description="Echoes the message", tags=["test"])],
    )


def _state(value: TaskState | str) -> TaskState:
    try:
        return TaskState(value)
    except ValueError as exc:
        raise ConfigurationError(f"unknown task state {value!r}") from exc


def _chunks(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _hold(value: bool | float) -> float:
    return DEFAULT_HOLD_TIMEOUT if value is True else float(value)


@attrs.frozen(kw_only=True)
class Script:
    """What :class:`FakeAgent` does with a message: the value :meth:`FakeAgent.on` builds
    from its keywords (or takes as is). Immutable; derive variants with :meth:`evolve`.

    In order: ``run`` (if given, nothing else), else raise ``error``, else ``reply``, else
    ``working``, each chunk of the artifact after ``delay`` seconds, wait while ``hold``,
    then the final ``state`` with ``message``. ``{text}`` in ``reply``, ``chunks`` and
    ``message`` is replaced by the user's text.

    Args:
        reply: Answer with this direct message instead of a task.
        chunks: The task's artifact in chunks, streamed one by one.
        state: The task's final state (``"completed"``, ``"failed"``,
            ``"input_required"`` ...).
        message: The agent's message with the final state (a failure's reason, say).
        error: Raise this from the agent (an :class:`~a2a_sync.errors.RPCError` reaches
            the client with its code; anything else as an internal error).
        delay: Seconds before each chunk.
        hold: Before the final state, wait for :meth:`FakeAgent.release` (or
            cancellation); ``True`` waits up to :data:`DEFAULT_HOLD_TIMEOUT`, a number
            that long.
        run: ``execute(context, updater)`` of your own (nothing else may be given).

    Raises:
        ConfigurationError: Conflicting behaviour, a negative delay, an unknown state.
    """

    reply: str | None = None
    chunks: tuple[str, ...] = attrs.field(default=(), converter=_chunks)
    state: TaskState = attrs.field(default=TaskState.completed, converter=_state)
    message: str | None = None
    error: Exception | None = None
    delay: float = 0.0
    hold: float = attrs.field(default=0.0, converter=_hold)
    run: ExecuteFunction | None = None

    def __attrs_post_init__(self) -> None:
        exclusive = {
            "run": self.run is not None,
            "error": self.error is not None,
            "reply": self.reply is not None,
        }
        chosen = [name for name, given in exclusive.items() if given]
        shaping = bool(self.chunks) or self.message is not None or bool(self.hold)
        if len(chosen) > 1 or (chosen and (shaping or self.delay > 0)):
            raise ConfigurationError(
                f"{' and '.join(chosen) or 'this'} cannot be combined with other behaviour"
            )
        if self.delay < 0:
            raise ConfigurationError("delay must be >= 0")

    def evolve(self, **changes: Any) -> Script:
        """A copy with ``changes``: attributes of this class by name, and two shorthands,
        ``artifact="text"`` (one chunk) and ``ask="question"`` (``state="input_required",
        message=ask``).

        Raises:
            ConfigurationError: An unknown name (the message names the closest), both a
                shorthand and what it stands for, or a script that conflicts.
        """
        for name in changes:
            if name not in _NAMES:
                close = difflib.get_close_matches(name, sorted(_NAMES), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigurationError(
                    f"unknown FakeAgent.on option {name!r}{hint}; the options are: "
                    f"{', '.join(sorted(_NAMES))}"
                )
        artifact = changes.pop("artifact", None)
        if artifact is not None:
            if changes.get("chunks"):
                raise ConfigurationError("give artifact or chunks, not both")
            changes["chunks"] = (artifact,)
        ask = changes.pop("ask", None)
        if ask is not None:
            if changes.get("message") is not None:
                raise ConfigurationError("give ask or message, not both")
            changes.update(state=TaskState.input_required, message=ask)
        return attrs.evolve(self, **changes) if changes else self


_NAMES: Final = frozenset(a.name for a in attrs.fields(Script)) | {"artifact", "ask"}
_DEFAULT_SCRIPT: Final = Script()


@attrs.define
class _Run:
    """One execution of a script; :class:`FakeAgent` flips the flags under its condition."""

    task_id: str
    released: bool = False
    stopped: bool = False


class FakeAgent(AgentExecutor):
    """A scriptable agent: rules map message texts to scripted behaviour.

    Thread-safe: rules may be added and messages inspected while the server runs it.

    Args:
        name: The card's name.
        streaming: Whether the card declares streaming.
        card: A card of your own (``name`` and ``streaming`` are then ignored).

    Attributes:
        card: The agent's card (used by :func:`~a2a_sync.testing.agent_server`).
    """

    def __init__(
        self, name: str = "Fake agent", *, streaming: bool = True, card: AgentCard | None = None
    ) -> None:
        self.card = card if card is not None else agent_card(name, streaming=streaming)
        self._rules: list[tuple[Match, Script]] = []
        self._messages: list[Message] = []
        self._canceled: list[str] = []
        self._runs: list[_Run] = []
        self._cond = threading.Condition()  # guards everything above; runs wait on it

    # -- scripting -----------------------------------------------------------------------------

    def on(self, match: Match, script: Script | None = None, /, **behaviour: Any) -> FakeAgent:
        """Add a rule; returns the agent, so rules chain.

        Args:
            match: The message text (exact), a compiled pattern (``search``), a predicate,
                or ``None`` for every message.
            script: What to do, as a :class:`Script` value (default: complete the task).
            **behaviour: :class:`Script` attributes by name, applied onto ``script``
                (``reply=``, ``chunks=``, ``state=``, ``message=``, ``error=``, ``delay=``,
                ``hold=``, ``run=``), and the shorthands ``artifact="text"`` (one chunk)
                and ``ask="question"`` (``state="input_required", message=ask``).

        Raises:
            ConfigurationError: An unknown option, or conflicting ones.
        """
        resolved = (script or _DEFAULT_SCRIPT).evolve(**behaviour)
        with self._cond:
            self._rules.append((match, resolved))
        return self

    def release(self) -> None:
        """Let every run held now (``hold=``) go on to its final state."""
        with self._cond:
            for run in self._runs:
                run.released = True
            self._cond.notify_all()

    def interrupt(self) -> None:
        """End every run now, without a final state (``agent_server`` does this on exit)."""
        with self._cond:
            for run in self._runs:
                run.stopped = True
            self._cond.notify_all()

    # -- inspection ----------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """Every message received, in order (a copy)."""
        with self._cond:
            return list(self._messages)

    @property
    def canceled(self) -> list[str]:
        """Ids of the tasks clients canceled, in order."""
        with self._cond:
            return list(self._canceled)

    def wait_for_messages(self, count: int, timeout: float) -> bool:
        """Block until ``count`` messages arrived (True) or ``timeout`` seconds passed."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._messages) >= count, timeout)

    def application(self, **options: Any) -> Any:
        """This agent as an :class:`~a2a_sync.server.A2AApplication` (``options`` go to it)."""
        from ..server.app import A2AApplication  # noqa: PLC0415 - the server imports this

        return A2AApplication(self.card, self, **options)

    # -- the executor --------------------------------------------------------------------------

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Run the first matching rule (see :class:`Script`)."""
        text = context.text
        with self._cond:
            self._messages.append(context.message)
            self._cond.notify_all()
            script = self._script_for(text)
        if script.run is not None:
            script.run(context, updater)
            return
        if script.error is not None:
            raise script.error
        if script.reply is not None:
            updater.reply(script.reply.replace("{text}", text))
            return
        run = _Run(context.task_id)
        with self._cond:
            self._runs.append(run)
        try:
            self._perform(script, run, context, updater)
        finally:
            with self._cond:
                self._runs.remove(run)

    def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Mark the task canceled and stop its run."""
        updater.cancel()
        with self._cond:
            self._canceled.append(context.task_id)
            for run in self._runs:
                if run.task_id == context.task_id:
                    run.stopped = True
            self._cond.notify_all()

    def _script_for(self, text: str) -> Script:
        for match, script in self._rules:
            if _matches(match, text):
                return script
        return Script(chunks=("echo: {text}",))

    def _perform(
        self, script: Script, run: _Run, context: RequestContext, updater: TaskUpdater
    ) -> None:
        text = context.text
        updater.start_work()
        artifact_id: str | None = None
        last = len(script.chunks) - 1
        for index, chunk in enumerate(script.chunks):
            if script.delay and self._wait(run, script.delay, released_too=False):
                return
            artifact_id = updater.add_artifact(
                chunk.replace("{text}", text),
                artifact_id=artifact_id,
                name="answer",
                append=index > 0,
                last_chunk=index == last,
            )
        if script.hold and self._wait(run, script.hold, released_too=True) and run.stopped:
            return
        message = script.message.replace("{text}", text) if script.message is not None else None
        updater.update_status(
            script.state, updater.new_agent_message(message) if message is not None else None
        )

    def _wait(self, run: _Run, timeout: float, *, released_too: bool) -> bool:
        """Wait ``timeout`` seconds; True if the run was stopped (or released, if asked)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: run.stopped or (released_too and run.released), timeout
            )

    def __repr__(self) -> str:
        return f"<FakeAgent {self.card.name!r} rules={len(self._rules)}>"


def _matches(match: Match, text: str) -> bool:
    if match is None:
        return True
    if isinstance(match, str):
        return match == text
    if isinstance(match, re.Pattern):
        return match.search(text) is not None
    return bool(match(text))
