"""Kafka topic names (DESIGN.md "Data flow").

- ``<prefix>.events``: input, EVENTS.md JSON values, key = cluster (one cluster's events stay in
  one partition, in order);
- ``<prefix>.decisions``: output, decision JSON values, key = cluster, header ``cause`` = the
  causing event id;
- ``<prefix>.events.dlq``: records that could not be applied, with the reason in headers.

The prefix defaults to ``quotaledger`` and is configurable (``--topic-prefix`` /
``$QUOTALEDGER_TOPIC_PREFIX``), so several installations can share a Kafka cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "quotaledger"

PREFIX_ENV = "QUOTALEDGER_TOPIC_PREFIX"
"""Environment variable giving the prefix when ``--topic-prefix`` is not given."""


@dataclass(frozen=True, slots=True)
class Topics:
    """The three topic names for one ``prefix``."""

    prefix: str = DEFAULT_PREFIX

    @property
    def events(self) -> str:
        return f"{self.prefix}.events"

    @property
    def decisions(self) -> str:
        return f"{self.prefix}.decisions"

    @property
    def dlq(self) -> str:
        return f"{self.prefix}.events.dlq"
