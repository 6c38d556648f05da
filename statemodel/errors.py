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
