"""Default values, each with the reason it has that value. Durations are seconds."""

from __future__ import annotations

from typing import Final

#: Connecting to a healthy peer takes milliseconds; 5 s covers a slow DNS answer or a
#: SYN retransmit (the first one comes after 1 s) without hiding a dead host for long.
DEFAULT_CONNECT_TIMEOUT: Final = 5.0

#: Longest silence between two received bytes of a response. A2A agents may think for a
#: while before answering a blocking SendMessage, so this is generous; streams use
#: DEFAULT_STREAM_IDLE_TIMEOUT instead.
DEFAULT_READ_TIMEOUT: Final = 60.0

#: Wall clock for one whole call: connect, every retry and its backoff, and reading the
#: body. requests has no such limit; a2a_sync always has one.
DEFAULT_CALL_TIMEOUT: Final = 120.0

#: Longest silence on an SSE stream before it counts as dead. Servers are told to send
#: a comment "every 15 seconds or so" (WHATWG HTML §9.2.7); 60 s allows three misses.
DEFAULT_STREAM_IDLE_TIMEOUT: Final = 60.0

#: Largest response body read into memory (JSON-RPC answers, agent cards). Big enough
#: for tasks carrying inline files, small enough that a hostile peer cannot exhaust memory.
DEFAULT_MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024

#: Connections kept per host. Sized for a client shared by many threads (each blocking
#: call holds one connection for its duration); more are opened when needed and closed
#: afterwards rather than waited for, so a call never blocks on the pool.
DEFAULT_POOL_MAXSIZE: Final = 32

#: Retries after the first attempt for failures that are safe to retry.
DEFAULT_MAX_RETRIES: Final = 2

#: First backoff delay; doubles per consecutive failure (0.25, 0.5, 1, 2 ...).
DEFAULT_BACKOFF_BASE: Final = 0.25

#: Ceiling for one backoff delay.
DEFAULT_BACKOFF_MAX: Final = 8.0

#: Fraction of a delay removed at random, so clients that failed together do not retry
#: together (the openai SDKs use up to 25 %).
DEFAULT_JITTER: Final = 0.25

#: Longest Retry-After honoured. A longer one means "not within this call": the call fails
#: at once with the wait in the error instead of sleeping for hours (urllib3 would honour
#: up to 6 h; the openai SDKs stop at 60 s).
DEFAULT_RETRY_AFTER_MAX: Final = 60.0

#: HTTP statuses that mean "try again later" and are retried for idempotent operations.
RETRYABLE_STATUSES: Final = frozenset({429, 502, 503, 504})

#: SSE reconnection time before the server sets one with `retry:` ("a few seconds").
DEFAULT_RECONNECT_DELAY: Final = 1.0

#: Consecutive failed reconnects before a stream gives up.
DEFAULT_MAX_RECONNECTS: Final = 5

#: Ceiling for the delay between reconnects.
DEFAULT_RECONNECT_DELAY_MAX: Final = 30.0

#: Events buffered between the reader thread and a slow consumer before the reader
#: stops reading (back-pressure instead of unbounded memory).
DEFAULT_STREAM_QUEUE_SIZE: Final = 256

#: How long close() waits for a reader thread to finish. shutdown() on the socket makes
#: this instant in practice; the bound only guards against a wedged interpreter.
THREAD_JOIN_TIMEOUT: Final = 5.0
