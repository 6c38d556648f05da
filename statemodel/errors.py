"""Errors raised by the pure core."""

from __future__ import annotations


class EventError(ValueError):
    """An event failed validation.

    Attributes:
        path: dotted field path of the offending value, e.g. ``object.spec.resourceGroups[0].flavors[1].name``
            (``""`` for the event as a whole).
        problem: what is wrong, in words.
        event_id: the envelope ``id`` when it could be read, else ``None``.
    """

    def __init__(self, path: str, problem: str, event_id: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.event_id = event_id
        super().__init__(f"{path}: {problem}" if path else problem)

    def detached(self) -> EventError:
        """This error without its traceback and chained context, to be kept as a value: a rejection
        returned instead of raised (``statemodel.driver``, ``streams.codec``) must not hold the frames
        it was raised through.  On CPython 3.11 a frame that outlives its call links to its caller's
        frame, whose locals hold the returned error (a list of decoded records, say): a reference
        cycle per rejected record, which only the cyclic collector frees, and every engine path
        pauses it (``statemodel.driver`` "GC note").  Measured: the ingest worker grew by about
        8 kB per rejected record (1 GB over 113,000) until this was done.  Returns ``self``."""
        self.__traceback__ = None
        self.__context__ = None
        return self
