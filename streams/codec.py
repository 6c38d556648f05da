"""Kafka record → validated event, or the reason it goes to the dead-letter topic.

The value is decoded by ``statemodel.events.decode_event``, the very decoder of the NDJSON file
replay (``statemodel.driver.decode_line``), so a record is accepted or rejected exactly as the same
line in a file would be.  In front of it, two checks that only a record can fail: a missing value
(a tombstone) and a value larger than the configured limit (never parsed).  A value that is not
JSON because it is not UTF-8 is reported as such.

Dead-letter records keep the original key and value (a value over ``DLQ_VALUE_LIMIT`` bytes is cut
to that many; the ``dead_letters`` table keeps the whole value, or the first ``DLQ_VALUE_LIMIT``
bytes of one over the event size limit, ``replay.store.sanitize.raw_bytes``) and carry their
reason in headers: ``reason``, ``field_path``, ``event_id`` (bounded and NUL-free as in the SQL
store, ``replay.store.sanitize``: a 1 MB id does not make a dead letter larger than its record),
``source_topic``, ``source_partition``, ``source_offset`` and, when cut, ``original_size``.
"""

from __future__ import annotations

from replay.store.sanitize import OVERSIZED_RAW_BYTES, key_text, message_text
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.events.decode import decode_event
from statemodel.limits import MAX_EVENT_BYTES

DEFAULT_MAX_RECORD_BYTES = MAX_EVENT_BYTES
"""Largest record value the worker parses (bytes); larger ones are dead-lettered unread.  The event
size limit of the contract (docs/events.md "Limits"), so that by default a record is accepted or
rejected as the same line of a file is."""

DLQ_VALUE_LIMIT = OVERSIZED_RAW_BYTES
"""Bytes of an oversized value copied to the dead-letter topic."""


def decode_record(value: bytes | None, max_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Event | EventError:
    """The event in a record value, or the ``EventError`` that rejects it (path ``""`` for the record
    as a whole: no value, too large, not UTF-8, not JSON; else the offending field's path)."""
    if value is None:
        return EventError("", "record has no value (tombstone)")
    if len(value) > max_bytes:
        return EventError("", f"event too large: {len(value)} bytes, at most {max_bytes}")  # the decoder's words
    try:
        return decode_event(value)
    except EventError as err:
        if not err.path and err.problem.startswith("invalid JSON"):
            try:
                value.decode()
            except UnicodeDecodeError as exc:
                return EventError("", f"value is not valid UTF-8 ({exc.reason} at byte {exc.start})")
        return err.detached()  # no frames kept alive by a dead letter (``EventError.detached``)


def key_cluster(key: bytes | None) -> str | None:
    """The cluster named by a record key (producers key events by cluster), ``None`` if unreadable."""
    if not key:
        return None
    try:
        return key.decode()
    except UnicodeDecodeError:
        return None


def dead_letter(value: bytes | None, err: EventError, topic: str, partition: int,
                offset: int) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """``(value, headers)`` of the dead-letter record for a rejected record (see the module docstring)."""
    headers = [("reason", (message_text(err.problem) or "").encode()),
               ("field_path", (message_text(err.path) or "").encode()),
               ("event_id", (key_text(err.event_id) or "").encode()), ("source_topic", topic.encode()),
               ("source_partition", str(partition).encode()), ("source_offset", str(offset).encode())]
    if value is not None and len(value) > DLQ_VALUE_LIMIT:
        headers.append(("original_size", str(len(value)).encode()))
        value = value[:DLQ_VALUE_LIMIT]
    return value, headers
