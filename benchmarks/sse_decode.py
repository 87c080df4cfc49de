"""SSE decoding cost: a2a_sync's decoder against sseclient-py, on the same bytes.

The stream is what an A2A v1.0 server built on sse-starlette sends for a streamed task:
one Task event, then 1000 artifact-update JSON-RPC responses of 200-400 bytes, each as
``data: <json>`` CRLF CRLF. It is fed in 4 KiB chunks (a busy connection) and one event
per chunk (a server flushing each event). An operation is one event, decoded to a string;
the ``+json`` pair also runs ``json.loads`` on each event's data, to show what share of a
client's per-event cost the SSE layer is. No network: parsing cost alone.

Run from the repository root: ``.venv/bin/python -m benchmarks.sse_decode [--reps 7]``
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence

import sseclient

from a2a_sync._net.sse_decoder import SSEDecoder
from benchmarks.harness import Variant, run_cli

EVENTS = 1000
CHUNK = 4096


def a2a_stream(events: int = EVENTS, seed: int = 7) -> list[bytes]:
    """The wire bytes of one streamed A2A task, one element per SSE event."""
    rng = random.Random(seed)
    task_id, context_id = "4f9c2a4e-1b7e-4a55-9f1e-0c2d7a1b9e11", "ctx-8d1f6a0b"
    task = {"id": task_id, "contextId": context_id, "status": {"state": "TASK_STATE_WORKING"}}
    bodies: list[dict[str, object]] = [{"task": task}]
    for i in range(events):
        words = rng.choices(
            ["alpha", "beta", "gamma", "delta", "résumé", "naïve"], k=rng.randint(1, 16)
        )
        text = " ".join(words)
        artifact = {"artifactId": "a-1", "parts": [{"text": f"{i}: {text}"}]}
        update = {"taskId": task_id, "contextId": context_id, "artifact": artifact}
        bodies.append({"artifactUpdate": {**update, "append": i > 0, "lastChunk": False}})
    frames = []
    for body in bodies:
        rpc = {"jsonrpc": "2.0", "id": "req-1", "result": body}
        frames.append(b"data: " + json.dumps(rpc, separators=(",", ":")).encode() + b"\r\n\r\n")
    return frames


def _ours(chunks: Sequence[bytes], parse: bool) -> Callable[[int], int]:
    def run(n: int) -> int:
        done = 0
        while done < n:
            decoder = SSEDecoder()
            for chunk in chunks:
                for event in decoder.feed(chunk):
                    if parse:
                        json.loads(event.data)
                    done += 1
            decoder.finish()
        return done

    return run


def _sseclient(chunks: Sequence[bytes], parse: bool) -> Callable[[int], int]:
    def run(n: int) -> int:
        done = 0
        while done < n:
            for event in sseclient.SSEClient(iter(chunks)).events():
                if parse:
                    json.loads(event.data)
                done += 1
        return done

    return run


def _check_same_events(*chunkings: Sequence[bytes]) -> None:
    for chunks in chunkings:
        decoder = SSEDecoder()
        ours = [e.data for c in chunks for e in decoder.feed(c)]
        theirs = [e.data for e in sseclient.SSEClient(iter(chunks)).events()]
        if ours != theirs or len(ours) != EVENTS + 1:
            sys.exit("the decoders disagree on the benchmark stream")


def main(argv: Sequence[str] | None = None) -> None:
    frames = a2a_stream()
    raw = b"".join(frames)
    chunked = [raw[i : i + CHUNK] for i in range(0, len(raw), CHUNK)]
    _check_same_events(chunked, frames)
    variants = [
        Variant("sseclient 4KiB", _sseclient(chunked, parse=False)),
        Variant("ours 4KiB", _ours(chunked, parse=False)),
        Variant("sseclient 1ev/chunk", _sseclient(frames, parse=False)),
        Variant("ours 1ev/chunk", _ours(frames, parse=False), baseline="sseclient 1ev/chunk"),
        Variant("sseclient 4KiB+json", _sseclient(chunked, parse=True)),
        Variant("ours 4KiB+json", _ours(chunked, parse=True), baseline="sseclient 4KiB+json"),
    ]
    title = f"SSE decode: {len(frames)} A2A events, {len(raw) / len(frames):.0f} B average"
    run_cli(variants, baseline="sseclient 4KiB", default_n=20 * len(frames), title=title, argv=argv)


if __name__ == "__main__":
    main()
