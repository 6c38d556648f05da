"""Property test: the wake index's dormant ClusterQueues change no decision.

A ClusterQueue whose every waiter fitting its room under nominal quota needs more than its pool has
free is not read again (``WakeIndex._within_nominal``) until the pool's free quota covers its least
such need or something at it changes.  Hypothesis builds one pool of ClusterQueues with random
nominal quotas (no borrowing or lending limits, so every waiter waits on its pool's free quota),
sometimes with preemption on, and submits and finishes workloads of random sizes and priorities; the
same history runs with the index as it is and with one that reads every such ClusterQueue at every
release (``WakeIndex.dormancy`` off).  The decisions and the state must be byte-identical.
"""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scenario.builder import Scenario

QUEUES = [f"q{i}" for i in range(5)]
PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
              "borrowWithinCohort": {"policy": "LowerPriority"}}


@st.composite
def history(draw):
    # q0 has no quota of its own: its 1-cpu workloads borrow the pool full first, so that the other
    # ClusterQueues' bigger workloads fit their room under nominal quota but not the pool, and
    # finishes free the pool one cpu at a time (the case dormancy is for)
    nominal = {q: 0 if q == "q0" else draw(st.sampled_from([2, 3, 4, 6])) for q in QUEUES}
    fill = max(0, sum(nominal.values()) - draw(st.integers(min_value=0, max_value=3)))  # about full
    preempt = draw(st.booleans())
    ops = draw(st.lists(st.one_of(
        st.tuples(st.just("submit"), st.sampled_from(QUEUES), st.sampled_from([1, 2, 3, 4]),
                  st.integers(min_value=0, max_value=2)),
        st.tuples(st.just("finish"), st.integers(min_value=0, max_value=3)),
    ), min_size=8, max_size=40))
    return nominal, preempt, [("submit", "q0", 1, 0)] * fill + ops


def _scenario(nominal: dict[str, int], preempt: bool, ops: list[tuple], dormancy: bool) -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.run()
    s.engine.clusters[s.cluster].wake_index.dormancy = dormancy
    s.cohort("pool")
    for q in QUEUES:
        s.cq(q, cohort="pool", quotas={"cpu": nominal[q]}, preemption=PREEMPTION if preempt else None)
        s.lq(f"ns/{q}", q)
    submitted: list[str] = []  # not finished yet, oldest first
    n = 0
    for op in ops:
        if op[0] == "submit":
            key = f"ns/w{n}"
            n += 1
            s.submit(key, op[1], cpu=str(op[2]), priority=op[3])
            submitted.append(key)
        elif submitted:  # one of the four oldest: mostly admitted ones
            s.finish(submitted.pop(op[1] % len(submitted)))
    return s


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history())
def test_dormant_cluster_queues_change_no_decision(case):
    nominal, preempt, ops = case
    dormant = _scenario(nominal, preempt, ops, True)
    every = _scenario(nominal, preempt, ops, False)
    every.run()
    dormant.run()
    assert dormant.rejections == [] and every.rejections == []
    assert orjson.dumps(dormant.decisions) == orjson.dumps(every.decisions)
    assert orjson.dumps(dormant.full_state()) == orjson.dumps(every.full_state())
    assert dormant.engine.hash == every.engine.hash
