"""The closed loop the scale benchmarks generate their event files with: an engine fed one event at a
time, submissions queued by time, and every admission answered by the unit's finish after its run
time (``WorkloadFinished`` naming the admitted unit).  ``koordinator_scale.py``, ``volcano_scale.py``
and ``placement.py`` build their shapes with it; ``kueue_scale.py`` keeps its own, faster generator.

    loop = ClosedLoop()
    loop.emit({"type": "Applied", "object": cq}, 0)           # configuration, at once
    loop.submit(1000, {"type": "Applied", "object": wl}, "ns/wl", 200)
    counts = loop.run(path)                                     # events, admissions, hash
"""

from __future__ import annotations

import heapq
from pathlib import Path

import orjson

from kueue_scale import EPOCH_MS
from statemodel.decisions import Decision
from statemodel.engine import Engine
from statemodel.events.decode import decode_event


class ClosedLoop:
    """One benchmark history being generated.

    Attributes:
        engine: the engine every event is applied to as it is written.
        lines: the events written so far (JSON lines, ids ``e1``, ``e2``, …, times ``kueue_scale.EPOCH_MS`` + offset).
        order: the submissions and finishes queued so far (the queue's tie-break, in that order).
    """

    def __init__(self) -> None:
        self.engine = Engine()
        self.lines: list[bytes] = []
        self.order = 0
        self._pending: list[tuple[int, int, str, object]] = []
        self._runtimes: dict[str, int] = {}

    def emit(self, event: dict, at_ms: int) -> list[Decision]:
        """Write ``event`` at offset ``at_ms`` and apply it; returns its decisions."""
        line = orjson.dumps({"id": f"e{len(self.lines) + 1}", "time": EPOCH_MS + at_ms, **event})
        self.lines.append(line)
        return self.engine.apply(decode_event(line))

    def submit(self, at_ms: int, event: dict, unit: str, run_ms: int) -> None:
        """Queue ``event`` (the unit's submission) at offset ``at_ms``; once ``unit`` (``ns/name``) is
        admitted, it finishes ``run_ms`` later."""
        self.order += 1
        self._runtimes[unit] = run_ms
        heapq.heappush(self._pending, (at_ms, self.order, "submit", event))

    def run(self, path: Path) -> dict:
        """Replay the queue to its end (submissions, and a finish after each admission), write the
        lines to ``path``; returns ``{events, admissions, hash}``."""
        pending = self._pending
        admissions = 0
        while pending:
            at, _, what, payload = heapq.heappop(pending)
            event = payload if what == "submit" else {"type": "WorkloadFinished", "workload": payload}
            for decision in self.emit(event, at):  # type: ignore[arg-type]
                if decision.kind == "Admitted":
                    admissions += 1
                    self.order += 1
                    heapq.heappush(pending, (at + self._runtimes[decision.workload], self.order, "finish",
                                             decision.workload))
        path.write_bytes(b"\n".join(self.lines) + b"\n")
        return {"events": len(self.lines), "admissions": admissions, "hash": self.engine.hash}
