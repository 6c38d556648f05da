"""What a rejected record may put into the SQL store's text columns: one rule for SQLite and
PostgreSQL.

A record that failed validation can say anything: a NUL (PostgreSQL ``text`` cannot hold one,
SQLite can), a 1 MB id (a PostgreSQL btree entry holds at most about 2.7 kB: ``index row size ...
exceeds`` aborts the transaction), text that is not UTF-8.  Its exact bytes always go to
``dead_letters.raw`` (``BYTEA`` / ``BLOB``, any bytes).  Its id, type, reason and field path go to
text columns — some indexed — only through ``bounded_text``: NUL replaced by U+FFFD, anything
that is not valid UTF-8 replaced likewise, cut to a fixed number of characters with a mark.  Both
stores therefore receive the very same values, and a rejected record's text never reaches a
btree index unbounded.  Its JSON payload goes to ``events.payload`` only when it holds no
``\\u0000`` escape (``payload_text``): PostgreSQL's ``json`` keeps one, but ``->>`` on it fails, and
the documented queries read ``payload ->> ...``.

A record over the event size limit (``statemodel.limits.MAX_EVENT_BYTES``) was never parsed and,
read from a file, never held whole (``replay.ndjson``): ``dead_letters.raw`` keeps its first
``OVERSIZED_RAW_BYTES`` bytes on every channel (``raw_bytes``), its reason gives its size.

The limits are the store's, not validation's: a valid event's names are checked by the decoder
(``statemodel.events``); these only bound what an invalid one can cost.
"""

from __future__ import annotations

from statemodel.limits import MAX_EVENT_BYTES

KEY_TEXT_LIMIT = 253
"""Characters of a rejected record's id or type kept in ``events`` / ``ingest_offsets`` (the
Kubernetes name limit, DNS subdomain): at most 1,012 bytes of UTF-8, well inside a PostgreSQL
btree entry."""

MESSAGE_TEXT_LIMIT = 4096
"""Characters of a rejection's reason or field path kept (not indexed; bounded all the same)."""

OVERSIZED_RAW_BYTES = 65_536
"""Bytes kept in ``dead_letters.raw`` of a record larger than ``MAX_EVENT_BYTES`` (its first ones;
as many as the ingest worker copies to the dead-letter topic)."""

CUT_MARK = "…"
"""Appended to a text that was cut (it counts in the limit)."""


def bounded_text(value: str | None, limit: int) -> str | None:
    """``value`` as both stores accept it: NUL and text that is not UTF-8 (lone surrogates) replaced by
    U+FFFD, at most ``limit`` characters (a cut one ends with ``CUT_MARK``); ``None`` stays ``None``.

    Args:
        value: any text from a rejected record (id, type) or about it (reason, field path).
        limit: the most characters kept, at least 2.
    """
    if value is None:
        return None
    if len(value) > limit:
        value = value[:limit - 1] + CUT_MARK
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode()
    except UnicodeEncodeError:
        value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def key_text(value: str | None) -> str | None:
    """``bounded_text`` of an id, type or cluster name (``KEY_TEXT_LIMIT``)."""
    return bounded_text(value, KEY_TEXT_LIMIT)


def message_text(value: str | None) -> str | None:
    """``bounded_text`` of a reason or field path (``MESSAGE_TEXT_LIMIT``)."""
    return bounded_text(value, MESSAGE_TEXT_LIMIT)


def payload_text(text: str | None) -> str | None:
    """A rejected record's JSON text for ``events.payload``, or ``None`` when it holds a ``\\u0000``
    escape (module docstring; the record's bytes are in ``dead_letters.raw`` either way)."""
    if text is None or "\\u0000" in text:
        return None
    return text


def raw_bytes(record: bytes) -> bytes:
    """What ``dead_letters.raw`` holds of a rejected record (``bytes`` as received): all of it, or the
    first ``OVERSIZED_RAW_BYTES`` of one longer than ``MAX_EVENT_BYTES`` (module docstring).  A reader
    that did not hold such a record whole hands on only that prefix already
    (``statemodel.events.oversized.OversizedRecord``); it is returned as plain ``bytes``."""
    if len(record) > MAX_EVENT_BYTES:
        return bytes(record[:OVERSIZED_RAW_BYTES])
    return bytes(record)
