"""Properties of Koordinator's runtime arithmetic (``statemodel.quota.koordinator_runtime``) and
of the model through the engine: rounding loses nothing, children never get more than the parent
shares when their floors fit, lending groups get at least ``min(request, autoScaleMin)``, no
runtime exceeds the limited request beyond its floor, and no admission exceeds runtime."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from statemodel.quota.koordinator_runtime import Share, hamilton, redistribute, scaled_mins
from tests.scenario.koordinator.kbuilder import KoordScenario

children = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 100), st.integers(0, 50), st.booleans()),
                    min_size=1, max_size=6)


@given(st.integers(0, 10_000), st.lists(st.integers(0, 1000), min_size=1, max_size=8))
def test_hamilton_loses_nothing(total: int, weights: list[int]) -> None:
    deltas = hamilton(total, weights, [f"q{i}" for i in range(len(weights))])
    assert sum(deltas) == (total if any(weights) else 0)
    assert all(d == 0 for d, w in zip(deltas, weights) if w == 0)


@given(st.integers(0, 1000), children)
def test_redistribute_bounds(total: int, spec: list) -> None:
    shares = [Share(f"q{i}", req, mn, 0, w, lend) for i, (req, mn, w, lend) in enumerate(spec)]
    runtime = redistribute(total, shares)
    floors = sum(s.min if s.request > s.min or not s.allow_lent else s.request for s in shares)
    if floors <= total:
        assert sum(runtime) <= total
    for s, rt in zip(shares, runtime):
        assert rt >= min(s.request, s.min) if s.allow_lent else rt >= s.min
        assert rt <= max(s.request, s.min)


@given(st.integers(-10, 1000), st.lists(st.integers(0, 300), min_size=1, max_size=6))
def test_scaled_mins_fit_the_total(total: int, mins: list[int]) -> None:
    scaled = scaled_mins(total, mins)
    assert all(0 <= s <= m for s, m in zip(scaled, mins))
    if total < sum(mins):
        assert sum(scaled) <= max(total, 0)
    else:
        assert scaled == mins


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 30), st.integers(0, 3)), min_size=1, max_size=15))
def test_engine_never_admits_beyond_runtime(pods: list) -> None:
    s = KoordScenario(capacity={"nvidia.com/gpu": 60})
    s.quota("p", min={"nvidia.com/gpu": 30}, max={"nvidia.com/gpu": 60}, is_parent=True)
    s.quota("a", min={"nvidia.com/gpu": 10}, max={"nvidia.com/gpu": 40}, parent="p")
    s.quota("b", min={"nvidia.com/gpu": 20}, max={"nvidia.com/gpu": 40}, parent="p", lend=False)
    s.quota("c", min={"nvidia.com/gpu": 10}, max={"nvidia.com/gpu": 30})
    for i, (q, gpu, prio) in enumerate(pods):
        s.pod(f"ns/p{i}", quota=q, priority=prio, gpu=gpu)
        decisions = s.run()
        state = s.state()["elasticQuotas"]
        # a runtime may shrink below what already runs (recycling's business), never by an admission
        for name in {d["clusterQueue"] for d in decisions if d["type"] == "Admitted"}:
            used = state[name]["used"].get("nvidia.com/gpu", 0)
            assert used <= state[name]["runtime"].get("nvidia.com/gpu", 0)
        assert (state["a"]["runtime"].get("nvidia.com/gpu", 0) + state["b"]["runtime"].get("nvidia.com/gpu", 0)
                <= state["p"]["runtime"].get("nvidia.com/gpu", 0))
    again = KoordScenario(capacity={"nvidia.com/gpu": 60})
    again.events = list(s.events)
    again.run()
    assert again.engine.hash == s.engine.hash and again.engine.state() == s.engine.state()
