"""The hostile-input corpus itself (tests/hostile/corpus.py): deterministic, every category present,
hostile lines only where the contract rejects them or calls them duplicates, and a clean history
that the engine applies entirely, its edge section ending as worked out by hand from the contract
(docs/events.md) and upstream Kueue."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemodel.driver import Driver
from statemodel.timefmt import parse_time
from tests.hostile.corpus import APPLIED, CATEGORIES, DUPLICATE, REJECTED, TEST_SCALE, Corpus, build, expected, \
    simulation


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build(TEST_SCALE, simulation(tmp_path_factory.mktemp("corpus") / "simulation.ndjson"))


def test_the_clean_history_is_all_applied_and_the_edge_cases_end_as_worked_out_by_hand(corpus: Corpus) -> None:
    driver = Driver()
    steps = [driver.feed(n, line.value) for n, line in enumerate(corpus.clean, 1) if line.value is not None]
    assert [step.status for step in steps] == [APPLIED] * len(corpus.clean)
    state = driver.engine.state()["clusters"]

    # an earlier time is applied at the current clock, never rewinds it (events.md "Envelope")
    assert state["edge-times"]["time"] == "9999-12-31T23:59:59.999Z"
    # a cycle (a <-> b, self -> self) makes its members inactive: nothing below it admits (KEP-79)
    cycle = state["edge-cycle"]
    assert {name: c["active"] for name, c in cycle["cohorts"].items()} == {"a": False, "b": False, "self": False}
    assert {name: q["active"] for name, q in cycle["clusterQueues"].items()} == {"cq-a": False, "cq-self": False}
    assert {key: w["status"] for key, w in cycle["workloads"].items()} == {"ns/w-a": "Pending", "ns/w-self": "Pending"}
    assert cycle["decisions"] == 0
    # the leaf at the bottom of the chain has no quota of its own and borrows 3 of the root's 4 cpu
    chain = state["edge-chain"]
    assert len(chain["cohorts"]) == TEST_SCALE.chain_depth
    assert chain["workloads"]["ns/w"]["status"] == "Admitted"
    assert chain["workloads"]["ns/w"]["clusterQueue"] == "leaf"
    assert chain["decisions"] == 1
    # references to missing objects leave the workloads pending, admitting nothing
    dangling = state["edge-dangling"]
    assert {key: w["status"] for key, w in dangling["workloads"].items()} == {
        "ns/w-lq": "Pending", "ns/w-none": "Pending"}
    assert dangling["decisions"] == 0
    # deletes of missing objects and lifecycle events of unknown workloads change nothing: the state
    # after them is the state before them (w1 admitted on the only cpu, w2 waiting for it)
    noop = [line.value for line in corpus.clean if line.value and b'"cluster":"edge-noop"' in line.value]
    before = Driver()
    for n, value in enumerate(noop[:5]):
        before.feed(n, value)
    then = before.engine.state()["clusters"]["edge-noop"]
    now = state["edge-noop"]
    assert {k: w["status"] for k, w in now["workloads"].items()} == {"ns/w1": "Admitted", "ns/w2": "Pending"}
    assert now["workloads"]["ns/w2"]["reason"] == "WaitingForQuota"
    for part in ("cohorts", "clusterQueues", "localQueues", "workloads", "decisions", "nodes"):
        assert now[part] == then[part], part
    assert now["time"] == "2025-01-01T00:00:00.004Z" and then["time"] == "2025-01-01T00:00:00.002Z"
    # odd ids are ids like any other; JSON numbers in fields the engine does not read are kept as written
    assert state["edge-ids"]["time"] and state["edge-numbers"]["time"]
    assert parse_time(state["edge-numbers"]["time"], "t") == 1_735_689_600_002


def test_the_corpus_is_deterministic_and_covers_every_category(corpus: Corpus, tmp_path: Path) -> None:
    again = build(TEST_SCALE, simulation(tmp_path / "simulation.ndjson"))
    assert again == corpus
    assert set(expected(corpus.mix, REJECTED)) | set(expected(corpus.mix, DUPLICATE)) == {
        c.name for c in CATEGORIES}
    assert 4_500 <= len(corpus.mix) <= 6_500
    hostile = [line for line in corpus.mix if line.outcome != APPLIED]
    assert [line for line in corpus.mix if line.outcome == APPLIED] == corpus.clean
    assert len(hostile) >= 3_000
