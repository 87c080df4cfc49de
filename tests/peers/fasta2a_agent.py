"""A fasta2a 2.1 agent: a plain worker, or pydantic-ai's bridge on a scripted model.

Run: ``python fasta2a_agent.py --mode plain|pydantic [--port PORT]``. It binds 127.0.0.1
(port 0 picks a free port), prints ``PORT <n>`` once the socket is bound and serves until
terminated; start it through :mod:`tests.peers.third_party` rather than by hand. fasta2a
serves a 1.0 card (one JSON-RPC interface) and answers both the 1.0 and the 0.3 method
names on ``/``.

``--mode plain`` is a :class:`fasta2a.Worker` written the way fasta2a's docs show: it
publishes status and artifact chunks on the event bus while it runs and writes the task
(with its artifact) to storage only when done — so ``tasks/get`` and a resubscribe snapshot
lag the live stream until the end. ``--mode pydantic`` is ``agent_to_a2a`` on a
pydantic-ai ``FunctionModel`` that streams text without any network: every chunk is
published with ``append: true`` (the first one too) and the whole artifact follows as
a replacement before ``completed``.

What happens is chosen by the first text part of the user's message:

==============  ==================================================================
``chunks N``    N chunks ``"<i>,"`` of one artifact, then completed
``slow N``      like ``chunks N`` with 50 ms between chunks
``fail``        the worker (or model) raises: the task fails
anything else   one chunk: the text itself
==============  ==================================================================
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fasta2a import FastA2A, Worker
from fasta2a.broker import InMemoryBroker
from fasta2a.schema import Artifact, Message, Part, TaskIdParams, TaskSendParams
from fasta2a.storage import InMemoryStorage

#: Seconds between chunks of ``slow N``.
SLOW_DELAY = 0.05


def script(text: str) -> tuple[list[str], float]:
    """The chunks to write for a prompt and the delay between them (``fail`` raises)."""
    word, _, count = text.strip().partition(" ")
    if word == "fail":
        raise RuntimeError("the agent failed on purpose")
    if word in ("chunks", "slow") and count.isdigit():
        return [f"{i}," for i in range(int(count))], SLOW_DELAY if word == "slow" else 0.0
    return [text], 0.0


class PlainWorker(Worker[list[Message]]):  # type: ignore[misc]  # fasta2a is untyped
    """Publishes chunks while running; stores the task only at the end."""

    async def run_task(self, params: TaskSendParams) -> None:
        task_id, context_id = params["id"], params["context_id"]
        text = "".join(p.get("text", "") for p in params["message"]["parts"])
        await self.storage.update_task(task_id, state="working")
        await self.publish_status(task_id, context_id, "working")
        chunks, delay = script(text)
        artifact_id = "chunks"
        for index, piece in enumerate(chunks):
            if delay:
                await asyncio.sleep(delay)
            await self.publish_artifact(
                task_id,
                context_id,
                Artifact(artifact_id=artifact_id, parts=[Part(text=piece)]),
                append=index > 0,
                last_chunk=index == len(chunks) - 1,
            )
        whole = Artifact(
            artifact_id=artifact_id,
            parts=[Part(text=piece) for piece in chunks],
        )
        await self.storage.update_task(task_id, state="completed", new_artifacts=[whole])

    async def cancel_task(self, params: TaskIdParams) -> None:
        await self.storage.update_task(params["id"], state="canceled")

    def build_message_history(self, history: list[Message]) -> list[Any]:
        return list(history)

    def build_artifacts(self, result: Any) -> list[Artifact]:
        return []


def plain_app(url: str) -> FastA2A:
    storage: InMemoryStorage[list[Message]] = InMemoryStorage()
    broker = InMemoryBroker()
    worker = PlainWorker(broker=broker, storage=storage)

    @asynccontextmanager
    async def lifespan(app: FastA2A) -> AsyncIterator[None]:
        async with app.task_manager, worker.run():
            yield

    return FastA2A(storage=storage, broker=broker, name="fasta2a-plain", url=url, lifespan=lifespan)


def pydantic_app(url: str) -> FastA2A:
    from fasta2a.pydantic_ai import agent_to_a2a  # only in this mode
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        prompt = ""
        for part in getattr(messages[-1], "parts", []):
            content = getattr(part, "content", None)
            if isinstance(content, str):
                prompt = content
        chunks, delay = script(prompt)
        for piece in chunks:
            if delay:
                await asyncio.sleep(delay)
            yield piece

    agent = Agent(FunctionModel(stream_function=stream), name="fasta2a-pydantic-ai")
    return agent_to_a2a(agent, url=url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=["plain", "pydantic"], default="plain")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    app = plain_app(url) if args.mode == "plain" else pydantic_app(url)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    print(f"PORT {port}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
