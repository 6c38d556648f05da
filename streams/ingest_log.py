"""Structured log lines of the ingest worker: an ``IngestListener`` over stdlib ``logging``.

One line per batch commit (records, decisions, dead letters, lag, ms), per dead letter (partition,
offset, reason, field path; the first ``DEAD_LETTER_LINES`` of a batch, then one line counting the
rest), per restore and per rebalance, on the logger ``quotaledger.ingest``.
Every line has an ``event`` name and its fields; ``configure`` writes them to stderr as text
(``msg key=value ...``) or as one JSON object per line (orjson: ``time``, ``level``, ``logger``,
``event``, ``msg`` and the fields).

On a terminal with text logs, the batch lines are shown as ONE progress line rewritten in place
(records and decisions so far, records/s, lag) instead of a line per batch; the other lines are
printed above it.  JSON logs, or stderr not a terminal, get every batch line and no progress line.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Collection, Mapping, Sequence
from typing import IO, Any

import orjson

from statemodel.cluster import ClusterState
from statemodel.decisions import Decision
from streams.ingest_listener import BatchReport, DeadLetter, IngestListener

LOGGER = "quotaledger.ingest"
LOG_FORMATS = ("text", "json")
PROGRESS_EVERY = 0.5
"""Seconds between rewrites of the progress line."""
DEAD_LETTER_LINES = 10
"""Dead letters logged one by one per batch; the rest of a batch's are one line with their count
(a flood of garbage would otherwise write a line per record: every dead letter is in the
``dead_letters`` table and on the dead-letter topic anyway)."""


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: ``time`` (RFC 3339, UTC, ms), ``level``, ``logger``, ``msg``
    and the record's ``fields`` (a dict given as ``extra={"fields": ...}``)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        out.update(getattr(record, "fields", {}))
        return orjson.dumps(out, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class TextFormatter(logging.Formatter):
    """A record as ``LEVEL logger: msg key=value ...`` (the ``fields`` in their order)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", {})
        tail = " ".join(f"{k}={_text(v)}" for k, v in fields.items() if k != "event")
        return f"{record.levelname} {record.name}: {record.getMessage()}" + (f" {tail}" if tail else "")


def _text(value: object) -> str:
    if isinstance(value, str) and (not value or any(c.isspace() or c in '"=' for c in value)):
        return orjson.dumps(value).decode()
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items()) or "-"
    return str(value)


def configure(log_format: str, stream: IO[str] | None = None) -> logging.Logger:
    """Send the worker's lines (logger ``quotaledger.ingest``, INFO and up) to ``stream`` (stderr)
    in ``log_format`` (``text`` or ``json``); returns the logger.

    Raises:
        ValueError: an unknown format.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"--log-format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    logger = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


class IngestLog(IngestListener):
    """The logging listener (module docstring).

    Args:
        logger: where the lines go (``configure`` sets one up).
        progress: a terminal to show the progress line on instead of the batch lines, or ``None``.
    """

    def __init__(self, logger: logging.Logger, progress: IO[str] | None = None) -> None:
        self.logger = logger
        self.progress = progress
        self.records = 0
        self.decisions = 0
        self.started: float | None = None
        self.shown = 0.0
        self.progress_width = 0
        self.letters = 0
        """dead letters of the batch being reported"""

    def _line(self, level: int, msg: str, **fields: object) -> None:
        if self.progress_width:  # clear the progress line, the next rewrite puts it back
            self.progress.write("\r" + " " * self.progress_width + "\r")  # type: ignore[union-attr]
            self.progress_width = 0
        self.logger.log(level, msg, extra={"fields": fields})

    def partitions_assigned(self, partitions: Sequence[int]) -> None:
        self._line(logging.INFO, "partitions assigned", event="rebalance", change="assigned",
                   partitions=list(partitions))

    def partitions_revoked(self, partitions: Sequence[int], clusters: Sequence[str]) -> None:
        self._line(logging.INFO, "partitions revoked", event="rebalance", change="revoked",
                   partitions=list(partitions), clusters=len(clusters))

    def partitions_checked(self, partitions: Sequence[int]) -> None:
        self._line(logging.INFO, "ready", event="ready", partitions=list(partitions))

    def restored(self, cluster: str, partition: int, position: int, seconds: float) -> None:
        self._line(logging.INFO, "cluster restored", event="restore", cluster=cluster, partition=partition,
                   events=position, ms=round(seconds * 1000, 1))

    def dead_letter(self, letter: DeadLetter) -> None:
        self.letters += 1
        if self.letters > DEAD_LETTER_LINES:
            return
        self._line(logging.WARNING, "dead letter", event="dead_letter", partition=letter.partition,
                   offset=letter.offset, reason=letter.reason, field_path=letter.field_path)

    def batch_applied(self, report: BatchReport, states: Mapping[str, ClusterState],
                      decisions: Sequence[Decision], workloads: Mapping[str, Collection[str]]) -> None:
        if self.started is None:
            self.started = time.monotonic() - report.apply_seconds
        if self.letters > DEAD_LETTER_LINES:
            self._line(logging.WARNING, "more dead letters", event="dead_letters_not_shown",
                       count=self.letters - DEAD_LETTER_LINES)
        self.letters = 0

    def batch_committed(self, report: BatchReport) -> None:
        self.records += report.records
        self.decisions += report.decisions
        lag = sum(p.lag for p in report.partitions.values())
        ms = round((report.apply_seconds + report.commit_seconds) * 1000, 1)
        if self.progress is None:
            self._line(logging.INFO, "batch committed", event="batch", events=report.records,
                       decisions=report.decisions, dead_letters=report.dead_letters, lag=lag, ms=ms,
                       offsets={p: q.next_offset for p, q in sorted(report.partitions.items())})
            return
        now = time.monotonic()
        if now - self.shown < PROGRESS_EVERY and lag:
            return
        self.shown = now
        rate = self.records / (now - self.started) if self.started is not None and now > self.started else 0.0
        text = f"ingest: {self.records:,} events, {self.decisions:,} decisions, {rate:,.0f} events/s, lag {lag:,}"
        self.progress.write("\r" + text.ljust(self.progress_width))
        self.progress.flush()
        self.progress_width = len(text)

    def close(self) -> None:
        """End the progress line (the summary follows on a line of its own)."""
        if self.progress_width and self.progress is not None:
            self.progress.write("\n")
            self.progress.flush()
            self.progress_width = 0
