"""Property tests for admission fair sharing (KEP-4136):

(1) decayed usage does not depend on ``Tick`` events: the same history (random AFS configuration,
    persisted statuses, LocalQueue weights, submissions, engine admissions, observed admissions,
    evictions and finishes at random times, many of them exactly on sampling instants) is applied to
    two engines in lockstep, the second one also receiving extra ``Tick`` events at random times in
    every gap (including exactly on sampling instants and exactly at the neighbouring events' times).
    After every event of the history the two cluster states — every ``admissionFairSharing`` object of
    LocalQueues, ClusterQueues and Cohorts included — and the decisions must be identical, and the
    ticks themselves must decide nothing.

    The queues are BestEffortFIFO: there a sampling instant can only reorder waiting workloads, never
    admit one by itself.  A StrictFIFO queue blocked on its head does re-evaluate at a sampling
    instant, at the time of whichever event crosses it — see
    ``test_strict_fifo_reorder_at_a_sampling_instant_does_not_depend_on_tick_events`` in
    ``test_scenarios_afs.py``.

(2) replaying the same events twice (StrictFIFO queues and Tick events included) gives byte-identical
    state JSON (``orjson.dumps``) and the same hash.
"""

from __future__ import annotations

from datetime import timedelta

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.scenario.builder import NO_AFS, START, USAGE_BASED, Scenario, assignment

START_MS = int(START.timestamp() * 1000)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

HALF_LIVES = ["0s", "5m", "10m", "1h", "168h"]
INTERVALS_MIN = [1, 5, 7]
RESETS = [None, "30m", "2h"]
WEIGHTS = [None, "0", "0.5", "2"]
# LocalQueue → ClusterQueue: "afs" (usage based) and "scoped" (no own mode) share the usage-based
# Cohort scope "pool"; "plain" is NoAdmissionFairSharing outside it.
LOCAL_QUEUES = [("a/q", "afs"), ("b/q", "afs"), ("c/q", "afs"), ("d/q", "scoped"), ("e/q", "plain")]


@st.composite
def histories(draw, strategies=("BestEffortFIFO",)):
    """``(base events, ticks)``: base events as EVENTS.md dicts; ``ticks[i]`` = Tick times (ms since START)
    to deliver before base event ``i``."""
    interval_s = 60 * draw(st.sampled_from(INTERVALS_MIN))
    s = Scenario()
    s.flavor("default", at=0)
    s.engine_config(halfLife=draw(st.sampled_from(HALF_LIVES)), interval=f"{interval_s // 60}m",
                    weights=draw(st.sampled_from([None, {"cpu": 1}, {"cpu": 2, "memory": 0}])),
                    reset=draw(st.sampled_from(RESETS)), at=0)
    s.cohort("pool", quotas={"cpu": str(draw(st.integers(0, 2)))}, admission_mode=USAGE_BASED, at=0)
    s.cq("afs", cohort="pool", quotas={"cpu": str(draw(st.integers(1, 4)))}, admission_mode=USAGE_BASED,
         strategy=draw(st.sampled_from(strategies)), at=0)
    s.cq("scoped", cohort="pool", quotas={"cpu": str(draw(st.integers(1, 3)))},
         strategy=draw(st.sampled_from(strategies)), at=0)
    s.cq("plain", quotas={"cpu": "2"}, admission_mode=NO_AFS, at=0)
    for key, cq in LOCAL_QUEUES:
        seed = None
        if draw(st.booleans()):
            seed = ({"cpu": f"{draw(st.integers(0, 5000))}m"}, -draw(st.integers(0, 3 * 3600)))
        s.lq(key, cq, weight=draw(st.sampled_from(WEIGHTS)), afs_status=seed, at=0)

    now_ms = 0
    names: list[tuple[str, str]] = []  # (workload key, ClusterQueue)
    for _ in range(draw(st.integers(1, 30))):
        step = draw(st.sampled_from(["same", "random", "grid", "grid+1ms", "long"]))
        if step == "random":
            now_ms += draw(st.integers(1, 3 * interval_s * 1000))
        elif step in ("grid", "grid+1ms"):
            now_ms = (now_ms // (interval_s * 1000) + draw(st.integers(1, 3))) * interval_s * 1000
            now_ms += step == "grid+1ms"
        elif step == "long":
            now_ms += draw(st.integers(1, 48 * 3600 * 1000))
        at = now_ms / 1000
        kind = draw(st.sampled_from(["submit", "submit", "submit", "finish", "evict", "observe"]))
        if kind == "submit" or not names:
            lq, cq = LOCAL_QUEUES[draw(st.integers(0, len(LOCAL_QUEUES) - 1))]
            key = f"{lq.split('/')[0]}/w{len(names)}"
            names.append((key, cq))
            s.submit(key, "q", cpu=str(draw(st.integers(1, 3))), priority=draw(st.integers(0, 2)), at=at)
            continue
        key, cq = names[draw(st.integers(0, len(names) - 1))]
        if kind == "finish":
            s.finish(key, at=at)
        elif kind == "evict":
            s.evict(key, at=at)
        else:
            cpu = str(draw(st.integers(1, 3)))
            s.observe_admission(key, cq, [assignment("main", 1, {"cpu": "default"}, {"cpu": cpu})], at=at)
    s.tick(at=(now_ms + draw(st.integers(0, 14 * 24 * 3600 * 1000))) / 1000)

    events = s.events
    ticks: list[list[int]] = []
    previous = 0
    interval_ms = interval_s * 1000
    for event in events:
        current = event_ms(event)
        chosen: list[int] = []
        if current > previous or draw(st.booleans()):
            for _ in range(draw(st.integers(0, 3))):
                how = draw(st.sampled_from(["random", "grid", "ends"]))
                if how == "random":
                    chosen.append(draw(st.integers(previous, current)))
                elif how == "ends":
                    chosen.append(draw(st.sampled_from([previous, current])))
                else:
                    first = -(-previous // interval_ms)
                    last = current // interval_ms
                    if first <= last:
                        chosen.append(draw(st.integers(first, last)) * interval_ms)
        ticks.append(sorted(chosen))
        previous = current
    return events, ticks


def event_ms(event: dict) -> int:
    """Scenario time of a Scenario-built event (RFC 3339 string) in ms since START."""
    from statemodel.timefmt import parse_time

    return parse_time(event["time"], "time") - START_MS


def apply(engine: Engine, raw: dict) -> list[dict]:
    return [d.to_json() for d in engine.apply(parse_event(raw))]


def tick_event(n: int, ms: int) -> dict:
    # Integer milliseconds since the epoch are a valid event time (EVENTS.md "Envelope").
    return {"id": f"tick-{n:05d}", "time": START_MS + ms, "cluster": "default", "type": "Tick", "v": 1}


def cluster_view(engine: Engine) -> dict:
    view = dict(engine.state()["clusters"]["default"])
    view.pop("hash")  # the chain covers the Tick events themselves
    return view


def afs_objects(view: dict) -> dict:
    return {(section, name): obj["admissionFairSharing"]
            for section in ("localQueues", "clusterQueues", "cohorts")
            for name, obj in view[section].items()}


@SETTINGS
@given(histories())
def test_decayed_usage_and_decisions_do_not_depend_on_extra_ticks(history):
    events, ticks = history
    plain, ticked = Engine(), Engine()
    n = 0
    for event, before in zip(events, ticks):
        for ms in before:
            n += 1
            assert apply(ticked, tick_event(n, ms)) == [], "a Tick decided something"
        expected = apply(plain, event)
        assert apply(ticked, event) == expected
        a, b = cluster_view(plain), cluster_view(ticked)
        assert afs_objects(a) == afs_objects(b)
        assert a == b
    assert len(afs_objects(cluster_view(plain))) == len(LOCAL_QUEUES) + 3 + 1


@SETTINGS
@given(histories(strategies=("BestEffortFIFO", "StrictFIFO")))
def test_replaying_the_same_events_gives_byte_identical_state_and_hash(history):
    events, ticks = history
    stream = []
    n = 0
    for event, before in zip(events, ticks):
        for ms in before:
            n += 1
            stream.append(tick_event(n, ms))
        stream.append(event)
    runs = []
    for _ in range(2):
        engine = Engine()
        decisions = [apply(engine, orjson.loads(orjson.dumps(raw))) for raw in stream]
        runs.append((orjson.dumps(engine.state()), engine.hash, orjson.dumps(decisions)))
    assert runs[0] == runs[1]
    assert b'"admissionFairSharing":{"consumed"' in runs[0][0]


def test_history_generator_emits_valid_events():
    """Guard for the generator above: every event it builds parses (no silent rejections)."""
    s = Scenario()
    s.engine_config(at=0)
    s.lq("a/q", "afs", weight="0.5", afs_status=({"cpu": "250m"}, -60), at=0)
    s.observe_admission("a/w0", "afs", [assignment("main", 1, {"cpu": "default"}, {"cpu": "1"})], at=1)
    for raw in s.events + [tick_event(1, 2000)]:
        parse_event(raw)
    assert START + timedelta(milliseconds=2000) > START
