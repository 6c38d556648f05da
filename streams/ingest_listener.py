"""What the ingest worker tells its observers: the listener interface (metrics and logs implement it).

The worker (``streams.ingest``) calls an ``IngestListener`` at a few points — a batch applied, a
batch committed, a dead letter, a cluster restored, a rebalance, the partitions checked — and
knows nothing of what a listener does with it (``streams.ingest_metrics`` exports Prometheus
metrics, ``streams.ingest_log`` writes log lines), as faust's sensors observe a faust app.
A listener only reads what it is given; it must not change the engines nor keep them past the call.

Threads: ``restored`` is called from the thread that applies a batch, everything else from the
worker's event loop.  Calls are cheap for the worker (the data is what it has at hand anyway);
what a listener spends is its own cost, so a listener does O(what changed) per call.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from statemodel.cluster import ClusterState
from statemodel.decisions import Decision


@dataclass(slots=True)
class PartitionProgress:
    """Where one partition of the events topic stands after a batch.

    Attributes:
        next_offset: the next offset to read (the batch's last record + 1): committed with the batch.
        lag: records in the partition past ``next_offset`` (fetch high watermark − ``next_offset``;
            0 when the broker gave no watermark).
        event_time_ms: the ``time`` (epoch ms) of the last valid event the partition has given so far,
            ``None`` before the first.
    """

    next_offset: int
    lag: int
    event_time_ms: int | None


@dataclass(slots=True)
class BatchReport:
    """One batch (one SQL transaction) of the worker.

    Attributes:
        records: records consumed (valid, duplicate and rejected).
        decisions: decisions the batch's events caused.
        dead_letters: records of the batch sent to the dead-letter topic.
        partitions: partition → its progress after the batch (only the partitions the batch read).
        apply_seconds: wall time from the fetch of the batch to its rows handed to the committer.
        commit_seconds: wall time from the hand-over to the committer's acknowledgement of the
            commit (0.0 until committed; ``batch_committed`` gets it filled).
    """

    records: int
    decisions: int
    dead_letters: int
    partitions: dict[int, PartitionProgress] = field(default_factory=dict)
    apply_seconds: float = 0.0
    commit_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One record that went to the dead-letter topic (its headers, ``streams.codec.dead_letter``).

    Attributes:
        partition / offset: where it was in the events topic.
        reason: why it was rejected.  field_path: the JSON path of the offending field ("" when none).
    """

    partition: int
    offset: int
    reason: str
    field_path: str


class IngestListener:
    """Observer of the ingest worker; every method does nothing here (override what you need).

    The methods, in the order a run calls them: ``partitions_assigned`` / ``partitions_revoked``
    (a consumer-group rebalance), ``partitions_checked`` (the log under the stored offsets checked:
    the worker is ready), then per batch ``restored`` (a cluster's engine rebuilt from SQL, first
    sight of the cluster), ``dead_letter`` (each rejected record), ``batch_applied`` (the engines as
    the batch left them) and later ``batch_committed``.
    """

    def partitions_assigned(self, partitions: Sequence[int]) -> None:
        """The group gave this worker ``partitions`` (sorted); not ready until they are checked."""

    def partitions_revoked(self, partitions: Sequence[int], clusters: Sequence[str]) -> None:
        """``partitions`` (sorted) were taken away after the batch in flight committed; ``clusters``
        (sorted) are the clusters of those partitions whose engines the worker dropped."""

    def partitions_checked(self, partitions: Sequence[int]) -> None:
        """The log under the stored offsets of ``partitions`` (sorted) was checked
        (``streams.log_check``): every assigned partition is now consumed."""

    def restored(self, cluster: str, partition: int, position: int, seconds: float) -> None:
        """``cluster``'s engine was rebuilt from the store (newest snapshot + archived tail) up to
        archive ``position`` (its archived event count, > 0) in ``seconds``, on the first record of
        the cluster since the worker started or got its partition back.  A cluster without archived
        events is not restored (no call).  Called from the applying thread."""

    def dead_letter(self, letter: DeadLetter) -> None:
        """A record was rejected and sent to the dead-letter topic (after the broker acknowledged it)."""

    def batch_applied(self, report: BatchReport, states: Mapping[str, ClusterState],
                      decisions: Sequence[Decision], workloads: Mapping[str, Collection[str]]) -> None:
        """A batch was applied and handed to the committer.  ``states``: cluster → its engine state
        for every cluster whose events the batch applied (read-only, valid during the call only);
        ``decisions``: the batch's decisions in order; ``workloads``: cluster → keys
        (``namespace/name``) of the workloads the batch's events and decisions named (some may be
        gone from the state: deleted)."""

    def batch_committed(self, report: BatchReport) -> None:
        """The batch's transaction is committed (``report.commit_seconds`` filled)."""


class Listeners(IngestListener):
    """Several listeners called in turn (the worker holds one listener)."""

    def __init__(self, listeners: Sequence[IngestListener]) -> None:
        self.listeners = tuple(listeners)

    def partitions_assigned(self, partitions: Sequence[int]) -> None:
        for listener in self.listeners:
            listener.partitions_assigned(partitions)

    def partitions_revoked(self, partitions: Sequence[int], clusters: Sequence[str]) -> None:
        for listener in self.listeners:
            listener.partitions_revoked(partitions, clusters)

    def partitions_checked(self, partitions: Sequence[int]) -> None:
        for listener in self.listeners:
            listener.partitions_checked(partitions)

    def restored(self, cluster: str, partition: int, position: int, seconds: float) -> None:
        for listener in self.listeners:
            listener.restored(cluster, partition, position, seconds)

    def dead_letter(self, letter: DeadLetter) -> None:
        for listener in self.listeners:
            listener.dead_letter(letter)

    def batch_applied(self, report: BatchReport, states: Mapping[str, ClusterState],
                      decisions: Sequence[Decision], workloads: Mapping[str, Collection[str]]) -> None:
        for listener in self.listeners:
            listener.batch_applied(report, states, decisions, workloads)

    def batch_committed(self, report: BatchReport) -> None:
        for listener in self.listeners:
            listener.batch_committed(report)
