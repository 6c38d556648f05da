"""Property tests of fair sharing (reference/kueue.md §3.3-3.4) on random cohort trees.

* **The integer order**: ``Share.order`` (cross-multiplied integers) orders every pair of shares as
  ``Share.key`` (exact rationals) does; ``ShareOrder.negated`` reverses it.
* **The share without a candidate**: ``QuotaModel.share_without`` is, for every node, the share
  read between a simulated release and its undo, and changes nothing.
* **DRS from scratch**: every node's share in the state JSON equals Kueue's formula recomputed from
  the state's own rows (``potentialAvailable`` of the parent rebuilt from subtree quota and limits),
  in exact rationals; ``weightedShare`` is its ceiling, 0 for a root or a node within quota, MaxInt64
  for a zero-weight borrower.
* **The tournament**: the incremental iterator pops the same order as Kueue's algorithm run
  literally (every share of every head recomputed on every pop), while pops admit what fits.
* **Total order**: the heads of one cycle are admitted in the same order whatever order they
  arrived in.
* **Replay** (with fair-sharing preemption): the same events give byte-identical decisions, state
  and hash; a snapshot at any point plus the tail equals the full replay.
"""

from __future__ import annotations

import math
from fractions import Fraction

import orjson
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from statemodel.admission.fair_sharing_iterator import FairSharingIterator
from statemodel.admission.flavorassigner import assign_flavors
from statemodel.cluster import DEFAULT_STRATEGIES
from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from statemodel.preemption import fair_sharing
from statemodel.preemption.candidates import WITHIN_CLUSTER_QUEUE, Candidate, candidate_key, satisfies_policy
from statemodel.preemption.classical import Target, fill_back, fits
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.preemptor import make_oracle, may_preempt
from statemodel.quota.kueue import KueueModel
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, Share
from statemodel.reasons import PreemptionReason
from statemodel.snapshot import dump, load
from tests.property.test_kep79 import Model, Node, group_spec
from tests.property.test_preemption import (
    History, _allows, check_admissible, check_replay, histories, scenario_of,
)
from tests.scenario.builder import Scenario
from tests.unit.quota_helpers import group

MAX_INT64 = 9223372036854775807
FLAVORS = ("f0", "f1")
RESOURCES = ("cpu", "gpu")
WEIGHTS = ("0", "0.5", "1", "1", "1", "2", "3")
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def trees(draw, max_cohorts: int = 4, max_cqs: int = 6) -> dict:
    """A random tree: a root cohort, 1-4 inner cohorts (depth up to 4), 2-6 ClusterQueues (or up to
    the maxima given); quotas per flavor × resource with optional borrowing / lending limits below
    the root; weights incl. 0."""
    cohorts = [("root", None)]
    for i in range(draw(st.integers(min_value=1, max_value=max_cohorts))):
        cohorts.append((f"c{i}", draw(st.sampled_from([name for name, _ in cohorts]))))
    cqs = [(f"q{i}", draw(st.sampled_from([name for name, _ in cohorts])))
           for i in range(draw(st.integers(min_value=2, max_value=max_cqs)))]

    def quotas(has_parent: bool, cq: bool) -> dict:
        out = {}
        for flavor in FLAVORS:
            out[flavor] = {}
            for res in RESOURCES:
                nominal = draw(st.integers(min_value=0, max_value=6))
                bl = draw(st.none() | st.integers(min_value=0, max_value=6)) if has_parent else None
                ll = (draw(st.none() | st.integers(min_value=0, max_value=nominal if cq else 6))
                      if has_parent else None)
                out[flavor][res] = (nominal, bl, ll)
        return out

    return {
        "cohorts": [(name, parent, quotas(parent is not None, False), draw(st.sampled_from(WEIGHTS)))
                    for name, parent in cohorts],
        "cqs": [(name, parent, quotas(True, True), draw(st.sampled_from(WEIGHTS))) for name, parent in cqs],
    }


def _spec(q: tuple) -> tuple:
    nominal, bl, ll = q
    return (str(nominal), None if bl is None else str(bl), None if ll is None else str(ll))


PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def build(tree: dict, fair: bool = True, preemption: dict | None = None) -> Scenario:
    s = Scenario()
    for flavor in FLAVORS:
        s.flavor(flavor)
    if fair:
        s.engine_config(afs=False, fair_sharing=True)
    for name, parent, quotas, weight in tree["cohorts"]:
        s.cohort(name, parent=parent, weight=weight,
                 groups=[{f: {r: _spec(q) for r, q in per.items()} for f, per in quotas.items()}])
    for name, parent, quotas, weight in tree["cqs"]:
        s.cq(name, cohort=parent, weight=weight, preemption=preemption,
             groups=[{f: {r: _spec(q) for r, q in per.items()} for f, per in quotas.items()}])
        s.lq(f"ns/l-{name}", name)
    return s


usages = st.lists(st.tuples(st.integers(min_value=0, max_value=5), st.sampled_from(FLAVORS),
                            st.integers(min_value=0, max_value=8), st.integers(min_value=0, max_value=4)),
                  max_size=8)


def observe(s: Scenario, tree: dict, holds: list) -> None:
    """Observed admissions (over quota allowed): ``(cq index, flavor, cpu, gpu)``."""
    for i, (index, flavor, cpu, gpu) in enumerate(holds):
        cq = tree["cqs"][index % len(tree["cqs"])][0]
        usage = {r: str(v) for r, v in (("cpu", cpu), ("gpu", gpu)) if v}
        if not usage:
            continue
        s.submit(f"ns/h{i}", f"l-{cq}", requests=usage)
        s.observe_admission(f"ns/h{i}", cq, [{"name": "main", "count": 1, "flavors": {r: flavor for r in usage},
                                              "resourceUsage": usage}])


# --------------------------------------------------------------------------- DRS from scratch


def _reference_shares(state: dict, tree: dict) -> dict[tuple[str, str], tuple[Fraction | None, bool]]:
    """Kueue's ``dominantResourceShare`` of every node, from the state's rows: ``(share, borrowing)``
    with ``share`` ``None`` for +∞."""
    cohorts, cqs = state["cohorts"], state["clusterQueues"]
    weights = {("cohort", n): Fraction(w) for n, _, _, w in tree["cohorts"]}
    weights.update({("cq", n): Fraction(w) for n, _, _, w in tree["cqs"]})
    parents = {("cohort", n): p for n, p, _, _ in tree["cohorts"]}
    parents.update({("cq", n): p for n, p, _, _ in tree["cqs"]})

    def row(kind: str, name: str, fr: tuple[str, str]) -> dict:
        rows = (cohorts if kind == "cohort" else cqs)[name]["resources"]
        return rows.get(fr[0], {}).get(fr[1], {})

    def subtree(kind, name, fr):
        r = row(kind, name, fr)
        return r.get("subtreeQuota", r.get("nominal", 0)) or 0

    def local(kind, name, fr):
        ll = row(kind, name, fr).get("lendingLimit")
        return max(0, subtree(kind, name, fr) - ll) if ll is not None else 0

    def potential(name: str, fr) -> int:       # of a cohort
        parent = parents[("cohort", name)]
        if parent is None:
            return subtree("cohort", name, fr)
        avail = local("cohort", name, fr) + potential(parent, fr)
        bl = row("cohort", name, fr).get("borrowingLimit")
        return min(subtree("cohort", name, fr) + bl, avail) if bl is not None else avail

    frs = [(f, r) for f in FLAVORS for r in RESOURCES]
    out = {}
    for (kind, name), parent in parents.items():
        if parent is None:
            out[(kind, name)] = (Fraction(0), False)
            continue
        borrowed: dict[str, int] = {}
        for fr in frs:
            b = (row(kind, name, fr).get("usage", 0) or 0) - subtree(kind, name, fr)
            if b > 0:
                borrowed[fr[1]] = borrowed.get(fr[1], 0) + b
        lendable = {r: sum(potential(parent, (f, r)) for f in FLAVORS) for r in RESOURCES}
        ratio = max([Fraction(b * 1000, lendable[r]) for r, b in borrowed.items() if lendable[r] > 0], default=0)
        weight = weights[(kind, name)]
        share = Fraction(0) if ratio == 0 else (None if weight == 0 else ratio / weight)
        out[(kind, name)] = (share, bool(borrowed))
    return out


@SETTINGS
@given(trees(), usages)
def test_shares_match_kueue_formula_from_scratch(tree, holds):
    s = build(tree)
    observe(s, tree, holds)
    state = s.state()
    for (kind, name), (share, borrowing) in _reference_shares(state, tree).items():
        view = state["cohorts" if kind == "cohort" else "clusterQueues"][name]["fairSharing"]
        assert view["borrowing"] == borrowing, (kind, name)
        if share is None:
            assert view["weightedShare"] == MAX_INT64 and view["share"] is None
        else:
            assert Fraction(view["share"]) == share, (kind, name)
            assert view["weightedShare"] == math.ceil(share) >= 0
            assert (view["weightedShare"] == 0) == (share == 0)


shares = st.builds(lambda num, den, scale, weight: Share((), num * scale, den * scale, "cpu" if num else "", weight),
                   st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=12),
                   st.integers(min_value=1, max_value=4), st.sampled_from([0, 0, 500, 1000, 2000, 3000, 7]))


def _sign(a, b) -> int:
    return (a > b) - (a < b)


@SETTINGS
@given(st.lists(shares, min_size=2, max_size=6))
def test_integer_order_is_the_rational_order(group):
    """``Share.order`` — what the tournament and fair-sharing preemption compare — orders any two
    shares (zero weights, zero ratios and unreduced pairs included) as ``Share.key`` does, with
    equal keys equal and hashing alike, and ``negated`` reverses the order."""
    for a in group:
        for b in group:
            want = _sign(a.key(), b.key())
            got = a.order()
            assert _sign(got, b.order()) == want, (a, b)
            assert (got == b.order()) == (want == 0) and (got != b.order()) == (want != 0)
            assert (got <= b.order()) == (want <= 0) and (got >= b.order()) == (want >= 0)
            assert _sign(got.negated(), b.order().negated()) == -want
            if want == 0:
                assert hash(got) == hash(b.order())


# --------------------------------------------------------------------------- the tournament


class Head:
    """What the iterator reads of a cycle's candidate: name, order, assignment.usage, info.preempting."""

    def __init__(self, name: str, usage: dict, priority: int, created: int) -> None:
        self.name = name
        self.info = type("I", (), {"preempting": False})()
        self.order = (-priority, created, f"uid-{name}")
        self.assignment = type("A", (), {"usage": usage})()


def _model(tree: dict) -> KueueModel:
    model = KueueModel()

    def groups(quotas):
        return (group({f: {r: q for r, q in per.items()} for f, per in quotas.items()}),)

    for name, _, quotas, _ in tree["cohorts"]:
        model.set_spec(COHORT, name, groups(quotas))
    for name, _, quotas, _ in tree["cqs"]:
        model.set_spec(CLUSTER_QUEUE, name, groups(quotas))
    for name, parent, _, _ in tree["cohorts"]:
        if parent is not None:
            model.link(COHORT, name, parent)
    for name, parent, _, _ in tree["cqs"]:
        model.link(CLUSTER_QUEUE, name, parent)
    return model


def _all_shares(model: KueueModel, tree: dict, weight) -> dict:
    nodes = [(COHORT, n) for n, _, _, _ in tree["cohorts"]] + [(CLUSTER_QUEUE, n) for n, _, _, _ in tree["cqs"]]
    return {node: model.share(node[0], node[1], weight(*node)).fields() for node in nodes}


simulations = st.lists(st.tuples(st.booleans(), st.integers(min_value=0, max_value=5), st.sampled_from(FLAVORS),
                                 st.sampled_from(RESOURCES), st.integers(min_value=1, max_value=6),
                                 st.integers(min_value=0, max_value=5)), min_size=1, max_size=6)


@SETTINGS
@given(trees(), simulations, st.randoms(use_true_random=False))
def test_shares_kept_across_simulations_are_the_shares_recomputed(tree, steps, rnd):
    """Simulated charges and releases, with every share read in between, undone in any order (the
    fair-sharing search undoes its request before its removals): every share the model answers
    afterwards — kept across the round trips or not — is the one a fresh model computes for the same
    usage."""
    weight = _weights(tree)
    model = _model(tree)
    cqs = [name for name, _, _, _ in tree["cqs"]]
    model.charge(cqs[0], {(FLAVORS[0], RESOURCES[0]): 3})
    _all_shares(model, tree, weight)  # remembered before the simulations
    undos = []
    for charge, index, flavor, resource, amount, reads in steps:
        cq = cqs[index % len(cqs)]
        usage = {(flavor, resource): amount}
        undos.append((model.simulate_charge if charge else model.simulate_release)(cq, usage))
        for _ in range(reads):
            _all_shares(model, tree, weight)
    rnd.shuffle(undos)
    for i, undo in enumerate(undos):
        undo()
        fresh = KueueModel()
        fresh.load(model.dump())
        assert _all_shares(model, tree, weight) == _all_shares(fresh, tree, weight), f"after {i + 1} undos"


def _held(tree: dict, holds: list) -> tuple:
    """The tree's model with ``holds`` charged (``(ClusterQueue index, flavor, cpu, gpu)``): its
    weights, the model, the ClusterQueues' names and every node."""
    weight = _weights(tree)
    model = _model(tree)
    cqs = [name for name, _, _, _ in tree["cqs"]]
    for cq_index, flavor, cpu, gpu in holds:
        model.charge(cqs[cq_index % len(cqs)], {(flavor, "cpu"): cpu, (flavor, "gpu"): gpu})
    nodes = [(COHORT, n) for n, _, _, _ in tree["cohorts"]] + [(CLUSTER_QUEUE, n) for n in cqs]
    return weight, model, cqs, nodes


heavy_usages = st.lists(st.tuples(st.integers(min_value=0, max_value=5), st.sampled_from(FLAVORS),
                                  st.integers(min_value=0, max_value=12), st.integers(min_value=0, max_value=12)),
                        min_size=2, max_size=10)
charges = st.dictionaries(st.tuples(st.sampled_from(FLAVORS), st.sampled_from(RESOURCES)),
                          st.integers(min_value=0, max_value=6), max_size=4)


@SETTINGS
@given(trees(), heavy_usages, st.integers(min_value=0, max_value=5), charges, st.randoms(use_true_random=False))
def test_share_without_is_the_share_after_a_simulated_release(tree, holds, index, charge, rnd):
    """``QuotaModel.share_without`` — what ``LessThanOrEqualToFinalShare`` reads per candidate —
    answers, for every node of the tree (on the leaf's path, above where the release stops, or off
    the path), exactly the share ``share`` gives between ``simulate_release`` and its undo, and
    leaves the model and the shares it remembers as they were.  The release may exceed what the
    leaf holds (usage goes negative, as a simulation allows)."""
    weight, model, cqs, nodes = _held(tree, holds)
    rnd.shuffle(nodes)
    for node in nodes[:len(nodes) // 2]:  # some shares remembered before, some not
        model.share(node[0], node[1], weight(*node))
    leaf = cqs[holds[index % len(holds)][0] % len(cqs)]  # mostly one that holds something
    if rnd.random() < 0.7:  # mostly a release of what the leaf holds, as a candidate's charge is
        held = {(f, r): model.quota_numbers(CLUSTER_QUEUE, leaf, (f, r))[2] for f in FLAVORS for r in RESOURCES}
        charge = {fr: rnd.randint(0, amount) for fr, amount in held.items() if amount > 0} | charge
    before = (model.dump(), _all_shares(model, tree, weight))
    got = {node: model.share_without(node[0], node[1], weight(*node), leaf, charge).fields() for node in nodes}
    assert (model.dump(), _all_shares(model, tree, weight)) == before, "share_without changed the model"
    undo = model.simulate_release(leaf, charge)
    want = _all_shares(model, tree, weight)
    undo()
    assert got == want
    moved = [node for node in nodes if got[node] != before[1][node]]
    event(f"shares the release changes: {'none' if not moved else 'a Cohort' if any(k == COHORT for k, _ in moved) else 'ClusterQueues only'}")


leasts = st.dictionaries(st.tuples(st.sampled_from(FLAVORS), st.sampled_from(RESOURCES)),
                         st.integers(min_value=1, max_value=3), max_size=2)


@SETTINGS
@given(trees(), heavy_usages, leasts, st.randoms(use_true_random=False))
def test_share_without_least_bounds_every_release_below(tree, holds, least, rnd):
    """``QuotaModel.share_without_least`` — what lets the first strategy pass over a whole Cohort —
    is, for every node, at least ``share_without`` of every release at any ClusterQueue below it
    that a candidate there could make charging at least ``least`` on each flavor-resource (at most
    what the ClusterQueue holds), lending limits on the way included; and it changes nothing."""
    weight, model, cqs, nodes = _held(tree, holds)
    before = (model.dump(), _all_shares(model, tree, weight))
    bounds = {node: model.share_without_least(node[0], node[1], weight(*node), least).order() for node in nodes}
    assert (model.dump(), _all_shares(model, tree, weight)) == before, "share_without_least changed the model"
    tried = 0
    for leaf in cqs:
        held = {(f, r): model.quota_numbers(CLUSTER_QUEUE, leaf, (f, r))[2] for f in FLAVORS for r in RESOURCES}
        if any(held.get(fr, 0) < amount for fr, amount in least.items()):
            continue  # no candidate here charges that much
        for _ in range(3):
            charge = {fr: rnd.randint(least.get(fr, 0), amount) for fr, amount in held.items() if amount > 0}
            for node in nodes:
                if node in model.path(leaf):
                    tried += 1
                    got = model.share_without(node[0], node[1], weight(*node), leaf, charge).order()
                    assert got <= bounds[node], (node, leaf, charge)
    event(f"releases bounded: {min(tried, 10)}+")


@SETTINGS
@given(trees(), heavy_usages, st.integers(min_value=0, max_value=5), st.lists(charges, min_size=2, max_size=5))
def test_a_candidate_covering_a_failed_one_fails_too(tree, holds, index, candidates):
    """The first strategy skips the ``LessThanOrEqualToFinalShare`` test of a candidate whose charge
    covers (is at least, on every flavor-resource) that of one which failed it against the same state
    (``fair_sharing._covers_any``): for every node and pair of charges where one covers the other,
    the share without the covering one is at most the share without the other, so any preemptor
    share the other fails against, the covering one fails too."""
    weight, model, cqs, nodes = _held(tree, holds)
    leaf = cqs[index % len(cqs)]
    covered = 0
    for a in candidates:
        for b in candidates:
            if not fair_sharing._covers_any(b, [a]):
                assert any(b.get(fr, 0) < amount for fr, amount in a.items()) or \
                    any(amount < a.get(fr, 0) for fr, amount in b.items())
                continue
            assert all(b.get(fr, 0) >= a.get(fr, 0) for fr in set(a) | set(b))
            covered += 1
            for node in nodes:
                without_a = model.share_without(node[0], node[1], weight(*node), leaf, a).order()
                without_b = model.share_without(node[0], node[1], weight(*node), leaf, b).order()
                assert without_b <= without_a, (node, a, b)
    event(f"covering pairs: {min(covered, 3)}+")


def _weights(tree: dict):
    table = {(COHORT, n): int(Fraction(w) * 1000) for n, _, _, w in tree["cohorts"]}
    table.update({(CLUSTER_QUEUE, n): int(Fraction(w) * 1000) for n, _, _, w in tree["cqs"]})
    return lambda kind, name: table[(kind, name)]


def _kueue_order(model: KueueModel, tree: dict, heads: list[Head]) -> list[str]:
    """Kueue's ``fairSharingIterator`` literally: on every pop, every remaining head's share at every
    level of its path, then the recursive tournament; the popped head is admitted if it fits."""
    weight = _weights(tree)
    remaining = {h.name: h for h in heads}
    children: dict[tuple, list] = {}
    for n, p, _, _ in tree["cohorts"]:
        if p is not None:
            children.setdefault((COHORT, p), []).append((COHORT, n))
    for n, p, _, _ in tree["cqs"]:
        children.setdefault((COHORT, p), []).append((CLUSTER_QUEUE, n))
    order = []
    while remaining:
        values = {}
        for h in remaining.values():
            undo = model.simulate_charge(h.name, h.assignment.usage)
            path = model.path(h.name)
            for child, parent in zip(path, path[1:]):
                share = model.share(child[0], child[1], weight(*child))
                values[(parent, h.name)] = (share.borrowing_on(h.assignment.usage), share.key())
            undo()

        def tournament(node):
            offers = []
            for child in children.get(node, []):
                offer = remaining.get(child[1]) if child[0] == CLUSTER_QUEUE else tournament(child)
                if offer is not None:
                    offers.append(offer)
            if not offers:
                return None
            return min(offers, key=lambda h: (values[(node, h.name)], h.order[0], h.order[1], h.name))

        winner = tournament((COHORT, "root"))
        del remaining[winner.name]
        order.append(winner.name)
        if model.fits(winner.name, winner.assignment.usage):
            model.charge(winner.name, winner.assignment.usage)
    return order


heads_strategy = st.lists(st.tuples(st.sampled_from(FLAVORS), st.integers(min_value=0, max_value=6),
                                    st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=2),
                                    st.integers(min_value=0, max_value=3)), min_size=6, max_size=6)


@SETTINGS
@given(trees(), usages, heads_strategy)
def test_incremental_tournament_pops_as_kueue(tree, holds, raw_heads):
    def fresh() -> tuple[KueueModel, list[Head]]:
        model = _model(tree)
        for index, flavor, cpu, gpu in holds:
            cq = tree["cqs"][index % len(tree["cqs"])][0]
            model.charge(cq, {(flavor, "cpu"): cpu * 1000, (flavor, "gpu"): gpu})
        heads = []
        for (name, _, _, _), (flavor, cpu, gpu, priority, created) in zip(tree["cqs"], raw_heads):
            heads.append(Head(name, {(flavor, "cpu"): cpu * 1000, (flavor, "gpu"): gpu}, priority, created))
        return model, heads

    model, heads = fresh()
    expected = _kueue_order(model, tree, heads)
    model, heads = fresh()
    popped = []
    for head in FairSharingIterator(model, _weights(tree), heads):
        popped.append(head.name)
        if model.fits(head.name, head.assignment.usage):
            model.charge(head.name, head.assignment.usage)
    assert popped == expected
    assert sorted(popped) == sorted(h.name for h in heads)


@SETTINGS
@given(trees(), usages, heads_strategy, st.randoms(use_true_random=False))
def test_admission_order_does_not_depend_on_arrival_order(tree, holds, raw_heads, rnd):
    def run(order: list[int]) -> list[tuple]:
        s = build(tree)
        observe(s, tree, holds)
        s.run()
        with s.batch():
            for i in order:
                if i >= len(tree["cqs"]):
                    continue
                flavor, cpu, gpu, priority, created = raw_heads[i]
                cq = tree["cqs"][i][0]
                s.submit(f"ns/p{i}", f"l-{cq}", requests={"cpu": str(cpu + 1), "gpu": str(gpu)},
                         priority=priority, created=created, uid=f"uid-p{i}")
        return [(d["type"], d["workload"], d["clusterQueue"], orjson.dumps(d.get("podSetAssignments")))
                for d in s.run()]

    order = list(range(len(raw_heads)))
    shuffled = order[:]
    rnd.shuffle(shuffled)
    assert run(order) == run(shuffled)


# --------------------------------------------------------------------------- replay


A_PREEMPTION_CYCLE = dict(  # q2's p5 preempts q2's h0 (InClusterQueue), q0's h3 then p5, h0 then h3 (both
    # InCohortFairSharing, every side's share level), and round again: each victim, released on the
    # decision, admitted again and preempted again in the same step, spun forever
    tree=(
    {'cohorts': [('root', None,
                  {'f0': {'cpu': (1, None, None), 'gpu': (4, None, None)},
                   'f1': {'cpu': (6, None, None), 'gpu': (2, None, None)}},
                  '1'),
                 ('c0', 'root',
                  {'f0': {'cpu': (4, None, None), 'gpu': (6, 6, 6)},
                   'f1': {'cpu': (2, 2, None), 'gpu': (5, 4, 1)}},
                  '3'),
                 ('c1', 'root',
                  {'f0': {'cpu': (6, None, 6), 'gpu': (2, None, 0)},
                   'f1': {'cpu': (3, None, 3), 'gpu': (4, 4, 1)}},
                  '3')],
     'cqs': [('q0', 'c0',
              {'f0': {'cpu': (4, 5, 3), 'gpu': (6, 6, None)}, 'f1': {'cpu': (6, None, 1), 'gpu': (4, 1, 1)}},
              '1'),
             ('q1', 'root',
              {'f0': {'cpu': (4, 4, 3), 'gpu': (6, None, None)},
               'f1': {'cpu': (4, None, None), 'gpu': (2, 2, None)}},
              '0.5'),
             ('q2', 'c0',
              {'f0': {'cpu': (6, 3, None), 'gpu': (1, None, None)},
               'f1': {'cpu': (1, None, None), 'gpu': (2, 2, 0)}},
              '0.5')]}
    ),
    holds=[(2, 'f1', 3, 2), (2, 'f1', 3, 2), (1, 'f1', 4, 4), (0, 'f0', 8, 3), (0, 'f1', 6, 3), (0, 'f0', 0, 3)],
    raw_heads=[('f0', 2, 1, 1, 0), ('f1', 6, 3, 1, 3), ('f1', 3, 1, 1, 2), ('f1', 6, 3, 1, 3), ('f1', 3, 3, 0, 2),
               ('f1', 5, 3, 1, 2)],
    cut=31, release_on_eviction=False)


@SETTINGS
@given(trees(), usages, heads_strategy, st.integers(min_value=0, max_value=40), st.booleans())
@example(**A_PREEMPTION_CYCLE)
def test_replay_is_byte_identical_and_snapshot_plus_tail_equals_full(tree, holds, raw_heads, cut, release_on_eviction):
    """With fair-sharing preemption on (withinClusterQueue LowerPriority, reclaimWithinCohort Any),
    released at the decision or at the observed eviction.  Every step ends (``A_PREEMPTION_CYCLE``:
    a ring of preemptions within one step, ended since a victim is no victim again in its step)."""
    s = build(tree, preemption=PREEMPTION)
    if release_on_eviction:
        s.engine_config(afs=False, fair_sharing=True, release_on="Eviction")
    observe(s, tree, holds)
    for i, (flavor, cpu, gpu, priority, created) in enumerate(raw_heads):
        cq = tree["cqs"][i % len(tree["cqs"])][0]
        s.submit(f"ns/p{i}", f"l-{cq}", requests={"cpu": str(cpu + 1), "gpu": str(gpu)}, priority=priority)
    for i in range(0, len(raw_heads), 2):
        s.finish(f"ns/p{i}")
    for i in range(len(holds)):
        s.evict(f"ns/h{i}")
    events = [parse_event(e) for e in s.events]

    def replay(engine: Engine, evs) -> list:
        return [orjson.dumps([d.to_json() for d in engine.apply(e)]) for e in evs]

    first, second = Engine(), Engine()
    assert replay(first, events) == replay(second, events)
    assert first.hash == second.hash
    assert orjson.dumps(first.state()) == orjson.dumps(second.state())

    cut = min(cut, len(events))
    head = Engine()
    full = Engine()
    full_decisions = replay(full, events)
    replay(head, events[:cut])
    restored = load(dump(head))
    assert replay(restored, events[cut:]) == full_decisions[cut:]
    assert restored.hash == full.hash
    assert orjson.dumps(restored.state()) == orjson.dumps(full.state())


# --------------------------------------------------------------------------- fair-sharing preemption


def _check_fair_decisions(decisions: list[dict], policies: dict, info: dict, holding: dict, release_on: str) -> None:
    """Every ``Preempted`` decision of one step respects the preemptor ClusterQueue's policy (fair
    sharing: ``borrowWithinCohort`` plays no part, the reasons are ``InClusterQueue``,
    ``InCohortReclamation`` and ``InCohortFairSharing``); no workload is preempted twice while it holds
    its quota; with ``releaseOn: Decision`` the preemptor is admitted in the same step."""
    admitted_now = {d["workload"] for d in decisions if d["type"] == "Admitted"}
    for d in decisions:
        if d["type"] == "Admitted":
            holding[d["workload"]] = False
            continue
        if d["type"] != "Preempted":
            continue
        victim, preemptor = d["workload"], d["preemptor"]
        assert not holding.get(victim), f"{victim} preempted twice while it still holds its quota"
        holding[victim] = release_on == "Eviction"
        p_cq, p_prio, p_order = info[preemptor]
        v_cq, v_prio, v_order = info[victim]
        policy = policies[p_cq] or {}
        if v_cq == p_cq:
            assert d["reason"] == "InClusterQueue"
            assert _allows(policy.get("withinClusterQueue", "Never"), (p_prio, p_order), (v_prio, v_order))
        else:
            assert d["reason"] in ("InCohortReclamation", "InCohortFairSharing")
            assert _allows(policy.get("reclaimWithinCohort", "Never"), (p_prio, p_order), (v_prio, v_order))
        if release_on == "Decision":
            assert preemptor in admitted_now, f"{preemptor} preempted but was not admitted in the same step"


def _literal_search(ctx: PreemptionContext, strategies: tuple[str, ...], weight,
                    first_out: list | None = None) -> list[Target]:
    """Kueue ``fairPreemptions`` run literally on the live state (``pkg/scheduler/preemption/
    preemption.go``, ``fairsharing/ordering.go``, ``fairsharing/strategy.go``): every candidate of
    the whole tree collected and sorted up front, every target chosen by comparing every child of
    every Cohort on the way down from the root, every candidate tested; no heap, no precheck, no
    early end.  Returns the victims in the order chosen; ``first_out`` (when given) gets what the
    first strategy ended with: ``(fits, retry workload keys sorted, [(victim key, reason)])``."""
    model, own, frs = ctx.model, ctx.cluster_queue, ctx.frs
    path = model.path(own)
    on_path = set(path)
    cohorts = ctx.hierarchy.cohorts

    def eligible(cq: str, policy) -> list[Candidate]:
        return [Candidate(info, cq, None, WITHIN_CLUSTER_QUEUE) for info in ctx.admitted.get(cq, {}).values()
                if ctx.uses_needed(info) and satisfies_policy(ctx.preemptor, info, policy)]

    cands = eligible(own, ctx.preemption.within_cluster_queue)
    if len(path) > 1:
        for cq in sorted(ctx.hierarchy.cluster_queues):
            if cq != own and model.path(cq)[-1] == path[-1] and any(
                    model.quota_numbers(CLUSTER_QUEUE, cq, fr)[0] < model.quota_numbers(CLUSTER_QUEUE, cq, fr)[2]
                    for fr in frs):
                cands += eligible(cq, ctx.preemption.reclaim_within_cohort)
    cands.sort(key=lambda c: candidate_key(ctx, c))

    def share(node):
        return model.share(node[0], node[1], weight(node[0], node[1]))

    def fits_without_request() -> bool:
        undo = model.simulate_release(own, ctx.usage)
        ok = fits(ctx, True)
        undo()
        return ok

    def ordering(candidates: list[Candidate]):
        lists: dict[str, list[Candidate]] = {}
        for c in candidates:
            lists.setdefault(c.cluster_queue, []).append(c)
        pruned: set = set()

        def next_target(cohort: str):
            entry = cohorts[cohort]
            best_cq, best_cq_key = None, None
            for cq in sorted(entry.child_cluster_queues):
                node = (CLUSTER_QUEUE, cq)
                if node in pruned:
                    continue
                if (not share(node).borrowed and cq != own) or not lists.get(cq):
                    pruned.add(node)
                    continue
                key = ((-share(node).key()[0], -share(node).key()[1]), candidate_key(ctx, lists[cq][0]))
                if best_cq_key is None or key < best_cq_key:
                    best_cq, best_cq_key = cq, key
            best_cohort, best_cohort_key = None, None
            for child in sorted(c for c in entry.child_cohorts if cohorts[c].linked):
                node = (COHORT, child)
                if node in pruned:
                    continue
                if not share(node).borrowed and node not in on_path:
                    pruned.add(node)
                    continue
                if best_cohort_key is None or share(node).key() > best_cohort_key:
                    best_cohort, best_cohort_key = child, share(node).key()
            if best_cq is None and best_cohort is None:
                pruned.add((COHORT, cohort))
                return None
            if best_cohort is not None and (best_cq is None or best_cohort_key >= share((CLUSTER_QUEUE, best_cq)).key()):
                return next_target(best_cohort)
            return best_cq

        def targets():
            root = path[-1]
            if root[0] == CLUSTER_QUEUE:
                while (CLUSTER_QUEUE, own) not in pruned and lists.get(own):
                    yield own
                return
            while root not in pruned:
                got = next_target(root[1])
                if got is not None:
                    yield got
        return lists, pruned, targets()

    def lcas(cq: str):
        target_path = model.path(cq)
        for i, node in enumerate(target_path):
            if node in on_path and i > 0:
                return path[path.index(node) - 1], target_path[i - 1]
        raise AssertionError(cq)

    def passes(strategy: str, mine, theirs, cand: Candidate | None) -> bool:
        if strategy == "LessThanOrEqualToFinalShare":
            undo = model.simulate_release(cand.cluster_queue, cand.info.charge)
            final = share(theirs)
            undo()
            return share(mine).key() <= final.key()
        return share(mine).key() < share(theirs).key()

    undo_request = model.simulate_charge(own, ctx.usage)
    removed: list = []
    within_nominal = not any(model.quota_numbers(CLUSTER_QUEUE, own, fr)[0] < model.quota_numbers(CLUSTER_QUEUE, own, fr)[2]
                             for fr in frs)

    def remove(cand: Candidate, reason: str) -> bool:
        removed.append((cand, reason, model.simulate_release(cand.cluster_queue, cand.info.charge)))
        return fits_without_request()

    def first() -> tuple[bool, list[Candidate]]:
        lists, _, targets = ordering(cands)
        retry: list[Candidate] = []
        for cq in targets:
            if cq == own:
                if remove(lists[cq].pop(0), "InClusterQueue"):
                    return True, []
                continue
            if within_nominal:
                if remove(lists[cq].pop(0), "InCohortReclamation"):
                    return True, []
                continue
            mine, theirs = lcas(cq)
            if share(mine).zero_weight_borrows() and not share(theirs).zero_weight_borrows():
                retry += lists.pop(cq)
                continue
            while lists.get(cq):
                cand = lists[cq].pop(0)
                if passes(strategies[0], mine, theirs, cand):
                    if remove(cand, "InCohortFairSharing"):
                        return True, []
                    break
                retry.append(cand)
        return False, retry

    def second(retry: list[Candidate]) -> bool:
        lists, pruned, targets = ordering(sorted(retry, key=lambda c: candidate_key(ctx, c)))
        for cq in targets:
            mine, theirs = lcas(cq)
            ok = passes("LessThanInitialShare", mine, theirs, None)
            cand = lists[cq].pop(0)
            if ok and remove(cand, "InCohortFairSharing"):
                return True
            pruned.add((CLUSTER_QUEUE, cq))
        return False

    ok, retry = first()
    if first_out is not None:
        first_out.append((ok, sorted(c.info.key for c in retry), [(c.info.key, r) for c, r, _ in removed]))
    if not ok and len(strategies) > 1:
        ok = second(retry)
    undo_request()
    if not ok:
        for _, _, undo in reversed(removed):
            undo()
        return []
    for cand, reason, _ in removed:
        cand.reason = PreemptionReason(reason)
    kept = fill_back(ctx, [(cand, undo) for cand, _, undo in removed], True)
    for _, undo in reversed(kept):
        undo()
    return [Target(cand) for cand, _ in kept]


def _check_fair_searches(s: Scenario) -> None:
    """For every pending head whose assignment needs preemption: the fair-sharing victims make it fit
    when released, none of them can be spared, and the search leaves the model as it found it."""
    cluster = s.engine.clusters[s.cluster]
    for name, queue in cluster.queues.items():
        entry = cluster.hierarchy.cluster_queues.get(name)
        head = queue.head(cluster.local_queue_score)
        if head is None or entry is None or entry.spec is None or cluster.inactive_reason(name) is not None:
            continue
        if may_preempt(entry.spec):
            _check_search(cluster, head, name)


def _model_state(model) -> bytes:
    """``model.dump()`` without zero usage rows (a what-if leaves a flavor-resource it charged and
    released again at zero)."""
    doc = model.dump()
    for row in doc["clusterQueues"]:
        row[3] = [r for r in row[3] if r[2]]
    return orjson.dumps(doc)


def _check_search(cluster, head, name: str) -> list:
    """The oracle's answers and the victims of ``head`` as a preemptor in ClusterQueue ``name``,
    checked against Kueue's algorithm run literally (``_literal_search``), against the cluster's
    kept candidate index and Cohort heaps, for fit and for minimality; the model is left as found.  Returns the
    victims."""
    model = cluster.model
    before = _model_state(model)
    strategies = cluster.config.preemption_strategies
    every_strategy = tuple(strategies or DEFAULT_STRATEGIES)
    entry = cluster.hierarchy.cluster_queues[name]
    oracle = make_oracle(model, cluster.hierarchy, cluster.admitted, head, entry.spec, True,
                         search=cluster.preemption_search)
    assignment = assign_flavors(model, entry, head, cluster.flavors, oracle)
    literal_oracle = make_oracle(model, cluster.hierarchy, cluster.admitted, head, entry.spec, True,
                                 search=lambda c: _literal_search(c, every_strategy, cluster.hierarchy.fair_weight))
    literal_assignment = assign_flavors(model, entry, head, cluster.flavors, literal_oracle)
    assert ((assignment.fits, assignment.preempting, assignment.preempt_frs, assignment.usage)
            == (literal_assignment.fits, literal_assignment.preempting, literal_assignment.preempt_frs,
                literal_assignment.usage)), f"{head.key}: the oracle does not answer as Kueue's search"
    if not assignment.preempting:
        return []
    ctx = PreemptionContext(model, cluster.hierarchy, cluster.admitted, head, name, entry.spec.preemption,
                            assignment.preempt_frs, assignment.usage)
    targets = fair_sharing.find_targets(ctx, every_strategy, cluster.hierarchy.fair_weight)
    assert _model_state(model) == before, "the search left the model changed"
    # the cluster's candidate index and Cohort heaps, kept across the whole history, answer as fresh
    # ones — twice: the first search may leave heaps the second starts from
    for _ in range(2):
        kept = PreemptionContext(model, cluster.hierarchy, cluster.admitted, head, name, entry.spec.preemption,
                                 assignment.preempt_frs, assignment.usage)
        kept.index = cluster.candidate_index
        assert ([(t.info.key, t.reason) for t in fair_sharing.find_targets(
                    kept, every_strategy, cluster.hierarchy.fair_weight, cluster.kept_heaps)]
                == [(t.info.key, t.reason) for t in targets]), f"{head.key}: the kept index or heaps are stale"
    literal = _literal_search(ctx, every_strategy, cluster.hierarchy.fair_weight)
    assert ([(t.info.key, t.reason) for t in targets]
            == [(t.info.key, t.reason) for t in literal]), f"{head.key}: not Kueue's victims"
    assert _model_state(model) == before, "the literal search left the model changed"
    keys = [t.info.key for t in targets]
    assert len(set(keys)) == len(keys)
    undos = [model.simulate_release(t.cluster_queue, t.info.charge) for t in targets]
    if targets:
        assert fits(ctx, True), f"{head.key} does not fit after preempting {keys}"
    for i, t in enumerate(targets):
        undos[i]()
        assert not fits(ctx, True), f"{head.key}: victim {t.info.key} of {keys} could be spared"
        undos[i] = model.simulate_release(t.cluster_queue, t.info.charge)
    for undo in reversed(undos):
        undo()
    assert _model_state(model) == before
    return targets


STRATEGIES = st.sampled_from([None, ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"],
                              ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]])


def _held_heads(tree: dict, holds, raw_heads, strategies):
    """The tree with fair-sharing preemption on (``PREEMPTION``) and ``strategies``, its usage
    ``holds`` observed, and one workload per ``raw_heads`` entry held in a stopped LocalQueue
    (``ns/p<i>``: nothing is admitted or preempted); its cluster state."""
    s = build(tree, preemption=PREEMPTION)
    s.engine_config(afs=False, fair_sharing=True, strategies=strategies)
    s.lq("ns/held", tree["cqs"][0][0], stop_policy="Hold")
    observe(s, tree, holds)
    for i, (flavor, cpu, gpu, priority, _) in enumerate(raw_heads):
        s.submit(f"ns/p{i}", "held", requests={"cpu": str(cpu + 1), "gpu": str(gpu)}, priority=priority)
    s.run()
    return s.engine.clusters[s.cluster]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trees(), usages, heads_strategy, STRATEGIES)
def test_search_answers_as_kueue_run_literally(tree, holds, raw_heads, strategies):
    """On random trees (weights 0 included) with random usage over quota, each head (held in a
    stopped LocalQueue, so nothing is admitted or preempted) is checked as the preemptor of every
    ClusterQueue in turn (``_check_search``): the search's prechecks, heaps and early ends give the
    oracle answers and the victims, with their reasons and order, of Kueue's algorithm run literally."""
    cluster = _held_heads(tree, holds, raw_heads, strategies)
    found = 0
    for i in range(len(raw_heads)):
        for name, _, _, _ in tree["cqs"]:
            found += len(_check_search(cluster, cluster.workloads[f"ns/p{i}"], name))
    event(f"victims found: {min(found, 3)}+")


def _read_all(later: fair_sharing.RetryList) -> list:
    """Every candidate of the first strategy's retry list, those left to be read on first use
    included: below each of ``later.below``, every ClusterQueue its walk can still reach gives its
    first candidate."""
    out = list(later.candidates)
    ordering = later.ordering
    stack = sorted(later.below)
    while stack:
        cohort = stack.pop()
        cqs, cohorts = ordering.reachable(cohort)
        for cq in cqs:
            ordering.give_first(cq, out)
        stack.extend(c for c in cohorts if c not in later.below)
    return out


def _check_first_strategy(cluster, head, name: str) -> str:
    """The first strategy of ``head``'s search as a preemptor in ``name`` (request charged, after the
    precheck) ends as Kueue's run literally (``_literal_search``) does: the same victims with their
    reasons, and, when it does not make the request fit and does not end early, the same retry
    candidates — which the second strategy reads, and which the walk takes without testing from
    targets that cannot pass — except those the second strategy could never take: one of its
    ClusterQueue's sorts before it in the list (the second strategy takes at most one per
    ClusterQueue, the first), or its side is not above the preemptor's side (it needs it strictly
    above) and no candidate retried below the preemptor's side has its own side above the
    preemptor's there (so none can lower it: shares only fall).  Returns what happened, for the
    statistics."""
    model, weight = cluster.model, cluster.hierarchy.fair_weight
    strategies = tuple(cluster.config.preemption_strategies or DEFAULT_STRATEGIES)
    entry = cluster.hierarchy.cluster_queues[name]
    oracle = make_oracle(model, cluster.hierarchy, cluster.admitted, head, entry.spec, True,
                         search=cluster.preemption_search)
    assignment = assign_flavors(model, entry, head, cluster.flavors, oracle)
    if not assignment.preempting:
        return "no search"

    def context() -> PreemptionContext:
        return PreemptionContext(model, cluster.hierarchy, cluster.admitted, head, name, entry.spec.preemption,
                                 assignment.preempt_frs, assignment.usage)

    literal: list = []
    _literal_search(context(), strategies, weight, first_out=literal)
    ctx = context()
    ctx.index.refresh(ctx.admitted, ctx.hierarchy)
    undo_request = model.simulate_charge(name, ctx.usage)
    if not fair_sharing.may_remove(ctx, weight):
        undo_request()
        assert not literal[0][0] and not literal[0][2], "the precheck ended a search that removes something"
        return "precheck"
    removed: fair_sharing.Removed = []
    ok, later = fair_sharing._first_strategy(ctx, weight, strategies[0], removed)
    retry = _read_all(later) if later is not None else None if not ok else []
    want_ok, want_retry, want_victims = literal[0]
    left_out = set(want_retry) - {c.info.key for c in retry or []}
    # what the first strategy left out of Kueue's retry list, judged in the state it ends in
    # (request charged, its removals simulated): candidates the second strategy could never take
    path = model.path(name)

    def order(node):
        return model.share(node[0], node[1], weight(node[0], node[1])).order()

    def order_key(key):
        info = cluster.workloads[key]
        return candidate_key(ctx, Candidate(info, info.cluster_queue, None, WITHIN_CLUSTER_QUEUE))

    ours = {c.info.key for c in retry or []}
    for key in sorted(left_out) if retry is not None else []:
        cq = cluster.workloads[key].cluster_queue
        if any(cluster.workloads[k].cluster_queue == cq and k in ours and order_key(k) < order_key(key)
               for k in want_retry):
            continue  # the second strategy takes at most one candidate per ClusterQueue, the first
        target_path = model.path(cq)
        at = next(i for i, node in enumerate(target_path) if i > 0 and node in path)
        mine, theirs = path[path.index(target_path[at]) - 1], target_path[at - 1]
        assert order(theirs) <= order(mine), f"{head.key} in {name}: {key} left out, but its side is above"
        for cand in retry:  # nothing retried below the preemptor's side there can pass against it now
            cand_path = model.path(cand.cluster_queue)
            if mine in cand_path:
                at = next(i for i, node in enumerate(cand_path) if i > 0 and node in path)
                their_side, my_side = cand_path[at - 1], path[path.index(cand_path[at]) - 1]
                assert order(their_side) <= order(my_side), (
                    f"{head.key} in {name}: {key} left out, but {cand.info.key} may lower the preemptor's side")
    undo_request()
    for _, undo in reversed(removed):
        undo()
    victims = [(cand.info.key, str(cand.reason)) for cand, _ in removed]
    assert ok == want_ok and victims == [(k, str(r)) for k, r in want_victims], f"{head.key} in {name}"
    if retry is None:
        assert not ok
        return "ended early"
    assert {c.info.key for c in retry} <= set(want_retry), f"{head.key} in {name}: not in Kueue's retry list"
    assert len(retry) == len({c.info.key for c in retry}), f"{head.key} in {name}: a retry candidate twice"
    return ("fits" if ok else "retry list") + (", the retry list without candidates that cannot pass" if left_out else "")


crowded_usages = st.lists(st.tuples(st.integers(min_value=0, max_value=9), st.sampled_from(FLAVORS),
                                    st.integers(min_value=0, max_value=8), st.integers(min_value=0, max_value=4)),
                          min_size=4, max_size=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trees(max_cohorts=3, max_cqs=10), crowded_usages, heads_strategy, STRATEGIES)
def test_first_strategy_ends_as_kueue_run_literally(tree, holds, raw_heads, strategies):
    """On random trees crowded with ClusterQueues (up to 10 under up to 3 Cohorts) and random usage over
    quota (as ``test_search_answers_as_kueue_run_literally``), every head as the preemptor of every
    ClusterQueue: the first strategy's victims, and its retry list when it ends without a fit, are
    those of Kueue's algorithm run literally (``_check_first_strategy``) — several targets below
    one Cohort failing to pass, taken together without a test, included."""
    cluster = _held_heads(tree, holds, raw_heads, strategies)
    seen = set()
    for i in range(len(raw_heads)):
        for name, _, _, _ in tree["cqs"]:
            seen.add(_check_first_strategy(cluster, cluster.workloads[f"ns/p{i}"], name))
    for what in sorted(seen):
        event(f"first strategy: {what}")


changes = st.lists(st.tuples(st.integers(min_value=0, max_value=9), st.sampled_from(FLAVORS),
                             st.sampled_from(RESOURCES), st.integers(min_value=-2, max_value=6)),
                   min_size=1, max_size=8)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trees(max_cohorts=3, max_cqs=10), crowded_usages, heads_strategy, STRATEGIES, changes)
def test_kept_heaps_answer_as_fresh_ones_while_usage_changes(tree, holds, raw_heads, strategies, changes):
    """The Cohorts' starting heaps kept between searches (``fair_sharing.KeptHeaps``) never change a
    search's victims: on random crowded trees, every head as the preemptor of every ClusterQueue is
    searched with one ``KeptHeaps`` kept throughout and without any; then one ClusterQueue's usage
    changes (charged or released in the model: a child's share may rise, fall, start or stop
    borrowing), and the searches run again, for each change in turn."""
    cluster = _held_heads(tree, holds, raw_heads, strategies)
    model, weight = cluster.model, cluster.hierarchy.fair_weight
    every_strategy = tuple(strategies or DEFAULT_STRATEGIES)
    kept = fair_sharing.KeptHeaps()
    names = [name for name, _, _, _ in tree["cqs"]]

    def search_all() -> int:
        found = 0
        for i in range(len(raw_heads)):
            head = cluster.workloads[f"ns/p{i}"]
            for name in names:
                entry = cluster.hierarchy.cluster_queues[name]
                oracle = make_oracle(model, cluster.hierarchy, cluster.admitted, head, entry.spec, True,
                                     search=lambda c: fair_sharing.find_targets(c, every_strategy, weight))
                assignment = assign_flavors(model, entry, head, cluster.flavors, oracle)
                if not assignment.preempting:
                    continue
                answers = []
                for heaps in (kept, None, kept):
                    ctx = PreemptionContext(model, cluster.hierarchy, cluster.admitted, head, name,
                                            entry.spec.preemption, assignment.preempt_frs, assignment.usage)
                    answers.append([(t.info.key, t.reason)
                                    for t in fair_sharing.find_targets(ctx, every_strategy, weight, heaps)])
                assert answers[0] == answers[1] == answers[2], f"{head.key} in {name}: {answers}"
                found += len(answers[1])
        return found

    found = search_all()
    for index, flavor, resource, delta in changes:
        cq = names[index % len(names)]
        fr = (flavor, resource)
        if delta < 0:
            delta = -min(-delta, model.quota_numbers(CLUSTER_QUEUE, cq, fr)[2])
        if delta:
            model.charge(cq, {fr: delta})
        found += search_all()
    event(f"kept heaps reused: {'yes' if kept.heaps else 'none kept'}; victims found: {min(found, 3)}+")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_fair_sharing_preemption_on_random_trees_and_histories(data):
    """Random KEP-79 trees, policies and histories (``tests.property.test_preemption.histories``) with
    fair sharing on, random weights (0 included) and strategies: after every event the policy
    properties, KEP-79's condition (nothing admissible waits) and the victim search's fit and
    minimality hold; every step terminates (no preemption ping-pong loops); replay is byte-identical."""
    model, policies, preempt_flavor, release_on, ops, _ = data.draw(histories())
    strategies = data.draw(st.sampled_from([None, ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"]]))
    weights = {"Cohort": st.sampled_from([None, "0", "0.5", "2"]),
               "ClusterQueue": st.sampled_from([None, None, "0", "0.5", "2"])}
    s, cq_names = scenario_of(model, policies, preempt_flavor, lambda kind, name: data.draw(weights[kind]),
                              release_on=release_on, fair_sharing=True, strategies=strategies)
    h = History()
    for label in h.steps(s, cq_names, ops, gpu=False):
        _check_fair_decisions(s.run(), policies, h.info, h.holding, release_on)
        check_admissible(s, model, h.requests, policies, preempt_flavor, label)
        _check_fair_searches(s)
    reasons = [d["reason"] for d in s.decisions if d["type"] == "Preempted"]
    event(f"InCohortFairSharing preemptions: {min(3, reasons.count('InCohortFairSharing'))}+")
    event(f"all preemptions: {min(3, len(reasons))}+")
    check_replay(s)


def test_a_victim_offered_after_quota_was_released_in_its_cycle_is_admitted():
    """A case the random histories above found: in one cycle a requeued victim (``w15``, 1 cpu in
    ``a``) is nominated while quota is short, and a head nominated with it (``w16``, in ``b``)
    preempts ``w14`` (5 cpu in ``a``), released on the decision.  ``w15`` then fits; it must not be
    parked on its nomination's shortfall (nothing would wake it: the release came first) but offered
    again in the next cycle — as Kueue requeues inadmissible workloads when an evicted one gives
    back its quota.  Fixed tree and history, fair sharing on with the default strategies."""
    def node(name, parent, is_cq, nominal, borrowing=None, lending=None) -> Node:
        n = Node(name, parent, is_cq)
        n.nominal.update({("f0", "cpu"): nominal[0] * 1000, ("f1", "cpu"): nominal[1] * 1000})
        n.borrowing.update({(f, "cpu"): v * 1000 for f, v in (borrowing or {}).items()})
        n.lending.update({(f, "cpu"): v * 1000 for f, v in (lending or {}).items()})
        return n

    model = Model(["f0", "f1"], ["cpu"], {n.name: n for n in (
        node("r", None, False, (1, 0)),
        node("c1", "r", False, (1, 1), {"f1": 0}, {"f1": 0}),
        node("c2", "r", False, (0, 0), {"f1": 0}),
        node("c3", "c1", False, (0, 0), lending={"f0": 0}),
        node("a", "c1", True, (4, 0), lending={"f0": 0}),
        node("b", "c1", True, (1, 0), {"f0": 0}, {"f1": 0}),
        node("e", "c3", True, (1, 2), {"f0": 0}),
        node("c", "c2", True, (4, 0), {"f0": 0, "f1": 0}),
        node("d", "r", True, (1, 0)),
    )})
    policies = {"a": None, "b": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                "e": None, "c": None, "d": None}
    ops = ([("submit", 0, 1, 0, 0)] * 4 + [("finish", 0)] * 8
           + [("finish", 1), ("submit", 0, 5, 0, 0), ("submit", 0, 5, 0, 0), ("submit", 0, 1, 0, 0),
              ("submit", 1, 1, 0, 0), ("finish", 0), ("submit", 0, 1, 0, 0), ("submit", 1, 3, 0, 1)])
    cq_names = [n.name for n in model.nodes.values() if n.is_cq]
    s, _ = scenario_of(model, policies, {name: None for name in cq_names}, release_on="Decision", fair_sharing=True)
    h = History()
    decisions = []
    for label in h.steps(s, cq_names, ops, gpu=False):
        decisions = s.run()
        check_admissible(s, model, h.requests, policies, {name: None for name in cq_names}, label)
    assert [(d["type"], d["workload"]) for d in decisions] == [
        ("Preempted", "ns/w18"), ("Preempted", "ns/w15"), ("Preempted", "ns/w16"), ("Admitted", "ns/w19"),
        ("Preempted", "ns/w14"), ("Admitted", "ns/w16"), ("Admitted", "ns/w15"), ("Admitted", "ns/w18")]
    assert s.state()["workloads"]["ns/w15"]["status"] == "Admitted"
