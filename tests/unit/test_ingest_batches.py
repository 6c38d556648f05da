"""The ingest worker's batches are bounded by bytes as well as by records (``streams.ingest._cut``):
a batch takes records in partition order until the next one would pass the byte bound (at least one
record, however large), and the rest of the fetch is the start of the next batch, each partition's
records in offset order.  Expected cuts worked out from the sizes (key + value bytes) below."""

from __future__ import annotations

from aiokafka.structs import ConsumerRecord, TopicPartition

from streams.ingest import _cut

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _recs(tp: TopicPartition, sizes: list[int]) -> list[ConsumerRecord]:
    return [ConsumerRecord(tp.topic, tp.partition, n, 0, 0, b"k", b"v" * (size - 1), None, 1, size - 1, ())
            for n, size in enumerate(sizes)]


def _offsets(data: dict) -> dict:
    return {tp.partition: [r.offset for r in recs] for tp, recs in data.items()}


def test_a_batch_ends_before_the_record_that_passes_the_bound() -> None:
    data = {P0: _recs(P0, [10, 10, 10]), P1: _recs(P1, [10, 10])}
    batch, rest = _cut(data, 35)  # 10 + 10 + 10 = 30; the fourth record would make 40
    assert (_offsets(batch), _offsets(rest)) == ({0: [0, 1, 2]}, {1: [0, 1]})
    batch, rest = _cut(data, 25)  # within a partition: its rest follows in order
    assert (_offsets(batch), _offsets(rest)) == ({0: [0, 1]}, {0: [2], 1: [0, 1]})
    batch, rest = _cut(data, 50)  # exactly the bound: everything
    assert (_offsets(batch), _offsets(rest)) == ({0: [0, 1, 2], 1: [0, 1]}, {})


def test_a_record_larger_than_the_bound_is_a_batch_of_its_own() -> None:
    data = {P0: _recs(P0, [100, 10]), P1: _recs(P1, [5])}
    batch, rest = _cut(data, 50)
    assert (_offsets(batch), _offsets(rest)) == ({0: [0]}, {0: [1], 1: [0]})
    batch, rest = _cut(rest, 50)
    assert (_offsets(batch), _offsets(rest)) == ({0: [1], 1: [0]}, {})
    batch, rest = _cut({P0: _recs(P0, [10]), P1: _recs(P1, [100])}, 50)  # the large one starts the next batch
    assert (_offsets(batch), _offsets(rest)) == ({0: [0]}, {1: [0]})


def test_tombstones_and_keyless_records_count_what_they_carry() -> None:
    tomb = ConsumerRecord("t", 0, 0, 0, 0, None, None, None, -1, -1, ())
    keyed = ConsumerRecord("t", 0, 1, 0, 0, b"k" * 20, None, None, 20, -1, ())
    batch, rest = _cut({P0: [tomb, keyed, *_recs(P0, [10])]}, 25)  # 0 + 20, then 10 would make 30
    assert (_offsets(batch)[0], _offsets(rest)[0]) == ([0, 1], [0])
