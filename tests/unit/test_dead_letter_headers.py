"""A dead-letter record's headers are bounded and NUL-free however large or odd the rejected record's
id and reason are (``streams.codec.dead_letter``), so a 1 MB id cannot make the dead letter larger
than the broker accepts."""

from __future__ import annotations

from streams.codec import DLQ_VALUE_LIMIT, dead_letter, decode_record


def test_headers_of_a_record_with_a_1_mb_id_are_bounded() -> None:
    value = b'{"id":"' + b"j" * 1_000_000 + b'\\u0000","cluster":"c","type":"Nope"}'
    err = decode_record(value, 2_000_000)
    out, headers = dead_letter(value, err, "t.events", 3, 17)
    h = dict(headers)
    assert err.path == "id" and h["event_id"] == b""  # an over-long id is the rejection: no id is named
    assert h["reason"] and len(h["reason"].decode()) <= 4096 and b"\x00" not in h["reason"]
    assert (h["source_topic"], h["source_partition"], h["source_offset"]) == (b"t.events", b"3", b"17")
    assert out == value[:DLQ_VALUE_LIMIT] and h["original_size"] == str(len(value)).encode()
    assert sum(len(k) + len(v) for k, v in headers) < 6000
