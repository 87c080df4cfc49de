"""The SSE decoder against WHATWG HTML §9.2.6, for every way a stream can be chunked.

Oracles: the spec vectors below (reliability-cases §2.3 and S-01), a literal transcription
of the spec's parsing steps over the whole decoded stream (``_spec_parse``), and
sseclient-py on the well-formed input where it is known to agree. S-02 (chunking), S-10
(size cap) and S-12 (MCP priming event) are covered here too.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Sequence

import pytest
import sseclient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_sync._net.sse_decoder import DEFAULT_MAX_EVENT_BYTES, ServerSentEvent, SSEDecoder
from a2a_sync.errors import ConfigurationError, ProtocolError, ResponseTooLarge

Ev = ServerSentEvent
Result = tuple[list[ServerSentEvent], str, "float | None"]

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def decode(chunks: Iterable[bytes], **options: object) -> Result:
    """Feed ``chunks`` then finish; return (events, last_event_id, retry)."""
    decoder = SSEDecoder(**options)  # type: ignore[arg-type]
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.finish()
    return events, decoder.last_event_id, decoder.retry


def one_byte_chunks(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


def every_two_way_split(stream: bytes) -> Iterable[list[bytes]]:
    for i in range(len(stream) + 1):
        yield [stream[:i], stream[i:]]


def _spec_parse(stream: bytes, last_event_id: str = "") -> Result:
    """WHATWG HTML §9.2.6 transcribed line by line over the whole decoded text."""
    text = stream.decode("utf-8", "replace")  # "UTF-8 decode": replacement, one BOM stripped
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split("\r\n|\n|\r", text)
    lines.pop()  # what follows the last line end is not a line: discarded at end of file
    data = event_type = ""
    id_buffer = last_id = last_event_id
    retry: float | None = None
    block_retry: float | None = None
    events: list[ServerSentEvent] = []
    for line in lines:
        if line == "":
            last_id = id_buffer
            if data:
                events.append(Ev(data[:-1], event_type or "message", last_id or None, block_retry))
            data = event_type = ""
            block_retry = None
            continue
        if line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            event_type = value
        elif field == "data":
            data += value + "\n"
        elif field == "id" and "\0" not in value:
            id_buffer = value
        elif field == "retry" and value and all(c in "0123456789" for c in value):
            retry = block_retry = int(value) / 1000
    return events, last_id, retry


def _sseclient_events(chunks: Sequence[bytes]) -> list[sseclient.Event]:
    return list(sseclient.SSEClient(iter(chunks)).events())


# --- spec vectors -----------------------------------------------------------------------------

# (id, chunks, events, last_event_id, retry). The first block is reliability-cases §2.3 row by
# row, the rest S-01 and S-12.
VECTORS: list[tuple[str, list[bytes], list[ServerSentEvent], str, float | None]] = [
    ("truncated-final-event-discarded", [b"data: a\n\ndata: trunc"], [Ev("a")], "", None),
    ("lf-then-crlf-ends-event", [b"data: a\n\r\n", b"data: b\n\n"], [Ev("a"), Ev("b")], "", None),
    ("cr-then-crlf-ends-event", [b"data: a\r\r\n", b"data: b\n\n"], [Ev("a"), Ev("b")], "", None),
    ("cr-only", [b"data: a\r\r"], [Ev("a")], "", None),
    (
        "id-persists-across-events",
        [b"id: 1\ndata: a\n\ndata: b\n\n"],
        [Ev("a", id="1"), Ev("b", id="1")],
        "1",
        None,
    ),
    ("id-only-block", [b"id: 7\n\n", b"data: b\n\n"], [Ev("b", id="7")], "7", None),
    ("retry-only-block", [b"retry: 5000\n\n"], [], "", 5.0),
    ("retry-not-digits", [b"retry: 5000x\n\n"], [], "", None),
    ("retry-negative", [b"retry: -1\n\n"], [], "", None),
    ("id-with-nul-ignored", [b"id: 1\x002\ndata: a\n\n"], [Ev("a")], "", None),
    ("invalid-utf8-replaced", [b"data: \xff\n\n"], [Ev("\ufffd")], "", None),
    ("bom-stripped", [b"\xef\xbb\xbfdata: a\n\n"], [Ev("a")], "", None),
    (
        "utf8-split-and-unicode-separators-intact",
        [b"data: \xe2\x80", b"\xa8 \xc2", b"\x85 \xe2\x80\xa9\n\n"],
        [Ev("\u2028 \x85 \u2029")],
        "",
        None,
    ),
    ("comment-lines-ignored", [b": hello\n:\ndata: a\n: bye\n\n"], [Ev("a")], "", None),
    ("comment-only-block-no-event", [b": keepalive\n\n"], [], "", None),
    ("data-without-colon", [b"data\n\n"], [Ev("")], "", None),
    ("data-without-colon-twice", [b"data\ndata\n\n"], [Ev("\n")], "", None),
    ("data-colon-no-space", [b"data:a\n\n"], [Ev("a")], "", None),
    ("only-one-space-stripped", [b"data:  a \n\n"], [Ev(" a ")], "", None),
    ("tab-not-stripped", [b"data:\ta\n\n"], [Ev("\ta")], "", None),
    ("value-colons-kept", [b"data: a:b: c\n\n"], [Ev("a:b: c")], "", None),
    ("multi-line-data-joined-by-lf", [b"data: a\ndata:\ndata: b\n\n"], [Ev("a\n\nb")], "", None),
    ("one-trailing-lf-removed", [b"data: a\ndata:\n\n"], [Ev("a\n")], "", None),
    (
        "event-type-reset-after-dispatch",
        [b"event: add\ndata: 1\n\ndata: 2\n\n"],
        [Ev("1", event="add"), Ev("2")],
        "",
        None,
    ),
    (
        "event-type-reset-without-dispatch",
        [b"event: add\n\ndata: 2\n\n"],
        [Ev("2")],
        "",
        None,
    ),
    ("empty-event-type-is-message", [b"event:\ndata: 1\n\n"], [Ev("1")], "", None),
    ("field-names-case-sensitive", [b"Data: x\nDATA: y\ndata: z\n\n"], [Ev("z")], "", None),
    ("unknown-fields-ignored", [b"foo: bar\nfoo\ndata: a\nbaz:\n\n"], [Ev("a")], "", None),
    ("space-before-colon-is-unknown-field", [b"data : a\ndata: b\n\n"], [Ev("b")], "", None),
    (
        "empty-id-resets",
        [b"id: 1\ndata: a\n\nid\ndata: b\n\nid: 2\nid:\ndata: c\n\n"],
        [Ev("a", id="1"), Ev("b"), Ev("c")],
        "",
        None,
    ),
    ("last-id-in-block-wins", [b"id: 1\nid: 2\ndata: a\n\n"], [Ev("a", id="2")], "2", None),
    ("id-keeps-spaces", [b"id:  7 \ndata: a\n\n"], [Ev("a", id=" 7 ")], " 7 ", None),
    ("retry-leading-zeros", [b"retry: 03000\ndata: a\n\n"], [Ev("a", retry=3.0)], "", 3.0),
    ("retry-suffix-ignored", [b"retry: 1000x\ndata: a\n\n"], [Ev("a")], "", None),
    ("retry-empty-ignored", [b"retry\nretry:\ndata: a\n\n"], [Ev("a")], "", None),
    ("retry-space-inside-ignored", [b"retry: 1 0\ndata: a\n\n"], [Ev("a")], "", None),
    ("retry-non-ascii-digits-ignored", ["retry: \u0661\u0660\n\n".encode()], [], "", None),
    ("retry-zero", [b"retry: 0\n\n"], [], "", 0.0),
    (
        "retry-is-per-block-on-events",
        [b"retry: 1500\ndata: a\n\ndata: b\n\n"],
        [Ev("a", retry=1.5), Ev("b")],
        "",
        1.5,
    ),
    ("crlf-line-ends", [b"data: a\r\ndata: b\r\n\r\n"], [Ev("a\nb")], "", None),
    ("cr-line-ends", [b"data: a\rdata: b\r\r"], [Ev("a\nb")], "", None),
    ("mixed-line-ends", [b"data: a\rdata: b\ndata: c\r\n\n"], [Ev("a\nb\nc")], "", None),
    ("leading-blank-lines", [b"\n\r\n\rdata: a\n\n"], [Ev("a")], "", None),
    ("bom-only-at-start", [b"data: a\n\n\xef\xbb\xbfdata: b\n\n"], [Ev("a")], "", None),
    (
        "second-bom-kept-in-data",
        [b"\xef\xbb\xbfdata: \xef\xbb\xbfa\n\n"],
        [Ev("\ufeffa")],
        "",
        None,
    ),
    ("two-boms-second-is-field-name", [b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n"], [], "", None),
    (
        "incomplete-id-not-committed",
        [b"id: 1\ndata: a\n\nid: 2\ndata: b\n"],
        [Ev("a", id="1")],
        "1",
        None,
    ),
    ("unterminated-retry-line-ignored", [b"data: a\n\nretry: 5"], [Ev("a")], "", None),
    ("mcp-priming-event-empty-data", [b"id: p1\ndata:\n\n"], [Ev("", id="p1")], "p1", None),
    ("mcp-priming-event-no-data-line", [b"id: p1\r\n\r\n"], [], "p1", None),
    (
        "a2a-style-crlf-json",
        [b'data: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n'],
        [Ev('{"jsonrpc":"2.0","id":1,"result":{}}')],
        "",
        None,
    ),
]


@pytest.mark.parametrize(
    ("chunks", "events", "last_event_id", "retry"),
    [pytest.param(*row[1:], id=row[0]) for row in VECTORS],
)
def test_spec_vector_gives_the_spec_result_for_every_chunking(
    chunks: list[bytes], events: list[ServerSentEvent], last_event_id: str, retry: float | None
) -> None:
    expected = (events, last_event_id, retry)
    assert decode(chunks) == expected
    stream = b"".join(chunks)
    assert decode([stream]) == expected
    assert decode(one_byte_chunks(stream)) == expected
    for split in every_two_way_split(stream):
        assert decode(split) == expected, split


@pytest.mark.parametrize(("row"), [pytest.param(row, id=row[0]) for row in VECTORS])
def test_spec_transcription_agrees_with_every_vector(row: tuple[object, ...]) -> None:
    # Guards the oracle the property tests rely on.
    _, chunks, events, last_event_id, retry = row
    assert _spec_parse(b"".join(chunks)) == (events, last_event_id, retry)  # type: ignore[arg-type]


# --- behaviour that needs more than one call ---------------------------------------------------


def test_cr_ending_a_chunk_dispatches_before_the_next_chunk_arrives() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [Ev("a")]


def test_lf_after_a_chunk_ending_in_cr_does_not_end_another_line() -> None:
    # "data: a" CR | LF "data: b": the CRLF ends one line, so a and b are one event.
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\ndata: b\n\n") == [Ev("a\nb")]


def test_cr_then_empty_chunk_then_lf_is_still_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\n") == [Ev("a")]


def test_bom_split_across_chunks_is_stripped() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\xbb") == []
    assert decoder.feed(b"\xbfdata: a\n\n") == [Ev("a")]


def test_partial_bom_followed_by_other_bytes_is_kept_as_data() -> None:
    assert decode([b"\xef\xbb", b"data: a\n\n"])[0] == []  # "\ufffd" + "data" is another field
    assert decode([b"\xef\xbbx", b"\n\ndata: a\n\n"])[0] == [Ev("a")]


def test_last_event_id_is_committed_only_when_an_event_is_dispatched() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b\n")
    assert decoder.last_event_id == "1"
    decoder.feed(b"\n")
    assert decoder.last_event_id == "2"


def test_retry_takes_effect_as_soon_as_its_line_ends() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"retry: 2500\n")
    assert decoder.retry == 2.5


def test_huge_retry_is_kept_for_the_caller_to_cap() -> None:
    events, _, retry = decode([b"retry: " + b"9" * 5000 + b"\ndata: a\n\n"])
    assert retry == float("inf")
    assert events == [Ev("a", retry=float("inf"))]


def test_finish_discards_the_incomplete_event_and_keeps_id_and_retry() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"retry: 1000\nid: 5\ndata: a\n\nid: 6\nevent: x\ndata: partial\n")
    assert decoder.finish() == []
    assert (decoder.last_event_id, decoder.retry) == ("5", 1.0)
    # The next stream starts clean (a BOM is stripped again) and inherits the id.
    assert decoder.feed(b"\xef\xbb\xbfdata: b\n\n") == [Ev("b", id="5")]


def test_finish_discards_an_unterminated_line() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\ndata: b")
    decoder.finish()
    assert decoder.feed(b"\n\n") == []


def test_initial_last_event_id_is_carried_by_events_without_an_id() -> None:
    decoder = SSEDecoder(last_event_id="41")
    assert decoder.last_event_id == "41"
    assert decoder.feed(b"data: a\n\nid: 42\ndata: b\n\n") == [Ev("a", id="41"), Ev("b", id="42")]


def test_mcp_priming_event_is_dispatched_with_empty_data_and_records_its_id() -> None:
    decoder = SSEDecoder()
    (priming,) = decoder.feed(b"id: p1\ndata:\n\n")
    assert priming.data == ""
    assert decoder.last_event_id == "p1"
    with pytest.raises(ProtocolError):
        priming.json()  # the reader must recognise it before parsing JSON


def test_json_parses_event_data() -> None:
    assert Ev('{"jsonrpc": "2.0", "id": 1, "result": [1]}').json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": [1],
    }


def test_json_on_invalid_data_raises_protocol_error_with_excerpt() -> None:
    with pytest.raises(ProtocolError) as info:
        Ev('{"jsonrpc": "2.0", "id": 1, "res').json()
    assert info.value.excerpt
    assert isinstance(info.value.__cause__, ValueError)


def test_repr_of_a_large_event_is_bounded() -> None:
    text = repr(Ev("x" * 1_000_000, event="artifact", id="9"))
    assert len(text) < 400
    assert "artifact" in text
    assert "'9'" in text


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "1024"])
def test_max_event_bytes_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigurationError):
        SSEDecoder(max_event_bytes=bad)  # type: ignore[arg-type]


# --- size cap (S-10) --------------------------------------------------------------------------


def _feed_until_too_large(decoder: SSEDecoder, piece: bytes, budget: int) -> tuple[int, int]:
    """Feed ``piece`` repeatedly; return (bytes fed when ResponseTooLarge came, its limit)."""
    fed = 0
    while fed < budget:
        fed += len(piece)
        try:
            decoder.feed(piece)
        except ResponseTooLarge as exc:
            return fed, exc.limit
    pytest.fail(f"no ResponseTooLarge after {fed} bytes")


def test_event_over_the_default_cap_raises_before_it_is_all_buffered() -> None:
    # A 50 MB event in 64 KiB data lines: the error must come as soon as the cap is passed.
    line = b"data: " + b"x" * (64 * 1024 - 7) + b"\n"
    fed, limit = _feed_until_too_large(SSEDecoder(), line, 50_000_000)
    assert limit == DEFAULT_MAX_EVENT_BYTES
    assert DEFAULT_MAX_EVENT_BYTES < fed <= DEFAULT_MAX_EVENT_BYTES + len(line)


def test_endless_line_without_newline_raises_once_over_the_cap() -> None:
    cap = 1024 * 1024
    piece = b"data: " + b"y" * (64 * 1024)
    fed, limit = _feed_until_too_large(SSEDecoder(max_event_bytes=cap), piece, 50 * cap)
    assert limit == cap
    assert cap < fed <= cap + len(piece)


@pytest.mark.parametrize("chunking", ["whole", "bytes"])
def test_cap_counts_data_lines_as_received(chunking: str) -> None:
    def run(stream: bytes) -> list[ServerSentEvent]:
        chunks = [stream] if chunking == "whole" else one_byte_chunks(stream)
        return decode(chunks, max_event_bytes=20)[0]

    # "data: " + 13 bytes + line end = 20 bytes: at the cap, accepted.
    assert run(b"data: " + b"a" * 13 + b"\n\n") == [Ev("a" * 13)]
    with pytest.raises(ResponseTooLarge):
        run(b"data: " + b"a" * 14 + b"\n\n")
    # Two lines of 10 each: 20, accepted; a third line trips it.
    assert run(b"data: abc\ndata: def\n\n") == [Ev("abc\ndef")]
    with pytest.raises(ResponseTooLarge):
        run(b"data: abc\ndata: def\ndata\n\n")


@pytest.mark.parametrize("line", [b": " + b"c" * 30, b"event: " + b"e" * 30, b"x" * 30])
@pytest.mark.parametrize("chunking", ["whole", "bytes"])
def test_any_line_over_the_cap_raises_however_it_is_chunked(line: bytes, chunking: str) -> None:
    stream = line + b"\ndata: a\n\n"
    chunks = [stream] if chunking == "whole" else one_byte_chunks(stream)
    with pytest.raises(ResponseTooLarge):
        decode(chunks, max_event_bytes=20)


def test_cap_is_per_event_not_per_stream() -> None:
    event = b"data: " + b"z" * 100 + b"\n\n"
    events, _, _ = decode([event * 1000], max_event_bytes=200)
    assert len(events) == 1000


def test_decoder_stays_failed_after_the_cap_until_finish() -> None:
    decoder = SSEDecoder(max_event_bytes=16)
    with pytest.raises(ResponseTooLarge):
        decoder.feed(b"data: 0123456789abcdef\n")
    with pytest.raises(ResponseTooLarge):
        decoder.feed(b"\n")
    decoder.finish()
    assert decoder.feed(b"data: ok\n\n") == [Ev("ok")]


# --- properties (S-02) ------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12)
_NAMES = st.sampled_from([b"data", b"event", b"id", b"retry", b"foo", b"Data", b"data ", b""])


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    """One line without its end: any field the spec distinguishes, plus comments."""
    kind = draw(st.sampled_from(["data", "data", "data", "field", "comment", "id", "retry"]))
    value = draw(_TEXT).encode()
    if kind == "data":
        return b"data" + draw(st.sampled_from([b"", b":", b": ", b":  "])) + value
    if kind == "comment":
        return b":" + value
    if kind == "id":
        return b"id: " + draw(st.sampled_from([value, b"", b"a\x00b"]))
    if kind == "retry":
        digits = str(draw(st.integers(0, 10**9))).encode()
        return b"retry: " + draw(st.sampled_from([digits, b"0" + digits, digits + b"x", b"-1"]))
    return draw(_NAMES) + draw(st.sampled_from([b"", b":", b": "])) + value


_ENDINGS = st.sampled_from([b"\n", b"\r", b"\r\n"])


@st.composite
def _streams(draw: st.DrawFn, endings: st.SearchStrategy[bytes] = _ENDINGS) -> bytes:
    """Blocks of lines, each closed by a blank line, with random line ends; maybe a BOM,
    maybe an unterminated tail."""
    out = [b"\xef\xbb\xbf"] if draw(st.booleans()) else []
    for block in draw(st.lists(st.lists(_lines(), max_size=4), max_size=5)):
        for line in [*block, b""]:
            out += [line, draw(endings)]
    out.append(draw(st.sampled_from([b"", b"data: tail", b"id: 99\ndata: x\n"])))
    return b"".join(out)


@st.composite
def _splits(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


@_SETTINGS
@given(st.one_of(_streams(), st.binary(max_size=300)), st.data())
def test_random_stream_gives_the_same_result_however_it_is_split(
    stream: bytes, data: st.DataObject
) -> None:
    whole = decode([stream])
    assert whole == _spec_parse(stream)
    assert decode(data.draw(_splits(stream))) == whole


@settings(max_examples=40, deadline=None)
@given(_streams())
def test_small_stream_gives_the_same_result_at_every_split_point(stream: bytes) -> None:
    whole = decode([stream])
    assert decode(one_byte_chunks(stream)) == whole
    for split in every_two_way_split(stream):
        assert decode(split) == whole


@_SETTINGS
@given(_streams(), st.data(), st.integers(8, 60))
def test_whether_the_cap_trips_does_not_depend_on_chunking(
    stream: bytes, data: st.DataObject, cap: int
) -> None:
    def outcome(chunks: list[bytes]) -> object:
        try:
            return decode(chunks, max_event_bytes=cap)
        except ResponseTooLarge:
            return ResponseTooLarge

    assert outcome(data.draw(_splits(stream))) == outcome([stream])


# --- sseclient-py as a differential oracle -----------------------------------------------------


def _is_id(line: bytes) -> bool:
    return line.partition(b":")[0] == b"id"


@st.composite
def _well_formed_stream(draw: st.DrawFn) -> tuple[bytes, list[bool]]:
    """LF-only, valid UTF-8, no BOM, every block has data and ends in a blank line.

    Returns the stream and, per event, whether its block sets an id (sseclient-py only
    reports an id sent in the event's own block).
    """
    out: list[bytes] = []
    has_id: list[bool] = []
    for block in draw(st.lists(st.lists(_lines(), max_size=4), min_size=1, max_size=6)):
        # No blank line inside a block; and sseclient-py accepts an id containing NUL (the
        # spec ignores it): leave those out.
        lines = [line for line in block if line and not (_is_id(line) and b"\x00" in line)]
        lines = draw(st.permutations([*lines, b"data: " + draw(_TEXT).encode()]))
        has_id.append(any(_is_id(line) for line in lines))
        out += [line + b"\n" for line in lines] + [b"\n"]
    return b"".join(out), has_id


@_SETTINGS
@given(_well_formed_stream(), st.data())
def test_agrees_with_sseclient_on_well_formed_streams(
    sample: tuple[bytes, list[bool]], data: st.DataObject
) -> None:
    stream, has_id = sample
    chunks = data.draw(_splits(stream))
    ours = decode(chunks)[0]
    theirs = _sseclient_events(chunks)
    assert [(e.event, e.data) for e in ours] == [(e.event, e.data) for e in theirs]
    for own, other, block_sets_id in zip(ours, theirs, has_id, strict=True):
        if block_sets_id:
            assert own.id == (other.id or None)


@pytest.mark.parametrize(
    ("chunks", "sseclient_result"),
    [
        pytest.param(
            [b"data: a\n\ndata: trunc"], [("a", None), ("trunc", None)], id="dispatches-truncated"
        ),
        pytest.param([b"data: a\n\r\n", b"data: b\n\n"], [("a\nb", None)], id="merges-lf-crlf"),
        pytest.param([b"data: a\r\r\n", b"data: b\n\n"], [("a\nb", None)], id="merges-cr-crlf"),
        pytest.param([b"\xef\xbb\xbfdata: a\n\n"], [], id="loses-event-after-bom"),
        pytest.param([b"id: 7\n\n", b"data: b\n\n"], [("b", None)], id="drops-id-only-block"),
        pytest.param(
            [b"id: 1\ndata: a\n\ndata: b\n\n"], [("a", "1"), ("b", None)], id="forgets-last-id"
        ),
        pytest.param([b"id: 1\x002\ndata: a\n\n"], [("a", "1\x002")], id="accepts-nul-in-id"),
    ],
)
def test_sseclient_py_still_diverges_from_the_spec_as_documented(
    chunks: list[bytes], sseclient_result: list[tuple[str, str | None]]
) -> None:
    # Pins the evidence in reliability-cases §2.3. If this fails, sseclient-py changed.
    theirs = [(e.data, e.id) for e in _sseclient_events(chunks)]
    assert theirs == sseclient_result
    assert theirs != [(e.data, e.id) for e in decode(chunks)[0]]


def test_sseclient_py_raises_on_invalid_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        _sseclient_events([b"data: \xff\n\n"])
    assert decode([b"data: \xff\n\n"])[0] == [Ev("\ufffd")]


def test_realistic_a2a_stream_matches_sseclient() -> None:
    events = [
        {"jsonrpc": "2.0", "id": 1, "result": {"n": i, "text": "é ✓ \u2028"}} for i in range(50)
    ]
    stream = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
    chunks = [stream[i : i + 97] for i in range(0, len(stream), 97)]
    assert [e.json() for e in decode(chunks)[0]] == events
    assert [json.loads(e.data) for e in _sseclient_events(chunks)] == events
