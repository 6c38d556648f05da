"""A record too large to be an event, read only in part: its first bytes and its size.

A reader that bounds what it holds (the NDJSON file reader, ``replay.ndjson``) does not read a line
longer than the event limit (``statemodel.limits.MAX_EVENT_BYTES``) whole: it keeps the line's
first bytes and skips the rest, counting it.  What it hands on in place of the line is an
``OversizedRecord``: ``bytes`` (those first bytes, what a dead letter keeps of the record) that also
carries the full size.  ``statemodel.events.decode.decode_event`` rejects it as too large, naming
that size and the limit, exactly as it rejects an over-long text it was given whole; nothing else
reads it.

Not compiled with mypyc (a subclass of ``bytes``); it is only ever built for a rejected record.
"""

from __future__ import annotations


class OversizedRecord(bytes):
    """The first bytes of a record (an NDJSON line without its line break) that exceeds the event
    limit; ``size``: the record's full size in bytes.

    Semantics: docs/events.md "Limits" (one event ≤ 4 MiB, checked before the JSON is parsed); the
    bytes kept are ``replay.store.sanitize.OVERSIZED_RAW_BYTES`` as chosen by the reader.
    """

    size: int

    def __new__(cls, head: bytes, size: int) -> OversizedRecord:
        """``head``: the first bytes of the record; ``size``: its full size in bytes (≥ ``len(head)``).

        Raises:
            ValueError: ``size`` is smaller than ``head``.
        """
        if size < len(head):
            raise ValueError(f"size {size} is smaller than the {len(head)} bytes kept")
        record = super().__new__(cls, head)
        record.size = size
        return record
