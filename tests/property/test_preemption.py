"""Property tests of classical and hierarchical preemption on random cohort trees and histories.

Hypothesis builds random KEP-79 trees (the generator of ``test_kep79``: up to 4 cohort levels, several
flavors, random nominal / borrowing / lending limits; or a fixed three-level shape with random quotas
where contention is frequent) and gives every ClusterQueue a random
``spec.preemption`` (each policy value, ``borrowWithinCohort`` with and without a threshold) and
``whenCanPreempt``; then it submits workloads of random priorities, finishes some, and — with
``releaseOn: Eviction`` — observes the evictions of chosen victims.  After EVERY event:

* KEP-79's condition holds and nothing admissible waits (``test_kep79.check``, recomputed
  independently; a workload of a ClusterQueue with ``whenCanPreempt: MayStopSearch`` may wait for a
  flavor it can preempt in although a later one fits — Kueue stops the search there — and a queue
  whose head waits for its victims' eviction is blocked by it, as Kueue's sticky preemptor);
* every ``Preempted`` decision respects the preemptor ClusterQueue's policy, computed here from the
  spec: same ClusterQueue ⇒ reason ``InClusterQueue`` and ``withinClusterQueue`` allows it; other
  ClusterQueue ⇒ ``reclaimWithinCohort`` allows it, and ``InCohortReclaimWhileBorrowing`` only with
  ``borrowWithinCohort: LowerPriority``, a victim of lower priority and not above the threshold;
* no workload gets a second ``Preempted`` decision while it still holds its quota;
* with ``releaseOn: Decision`` every preemptor is admitted in the same step as its preemptions.

At quiescent points the quota model's index of over-quota children (what the search descends into)
equals a recount, and the victim search itself is checked on the live state: for every pending head
whose flavor assignment needs preemption, the targets ``find_targets`` returns make the assignment
fit when released (with borrowing), and no single target can be spared (Kueue's fill-back
minimality: without it the preemptor does not fit without borrowing, nor — when the whole set needs
borrowing — with it); the model is left exactly as found.  Finally the whole history replays
byte-identically, and a snapshot at a random point plus the tail equals the full replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import orjson
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from statemodel.admission.flavorassigner import assign_flavors
from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from statemodel.preemption.candidates import (
    RECLAIM_WITHOUT_BORROWING, Candidate, can_fit_without_borrowing, classify, collect, may_have_candidates,
)
from statemodel.preemption.candidate_index import queue_key
from statemodel.preemption.classical import find_targets, fits, preemption_mode
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.preemptor import make_oracle, may_preempt
from statemodel.snapshot import dump, load
from tests.property.test_kep79 import Model, Node, check, group_spec, trees
from tests.scenario.builder import GPU, Scenario

POLICIES = st.fixed_dictionaries({
    "withinClusterQueue": st.sampled_from(["Never", "LowerPriority", "LowerPriority", "LowerOrNewerEqualPriority"]),
    "reclaimWithinCohort": st.sampled_from(["Never", "LowerPriority", "Any", "Any"]),
}).flatmap(lambda p: st.just(p) if p["reclaimWithinCohort"] == "Never" else st.one_of(
    st.just(p),
    st.builds(lambda t: {**p, "borrowWithinCohort": {"policy": "LowerPriority", **t}},
              st.one_of(st.just({}), st.builds(lambda v: {"maxPriorityThreshold": v}, st.integers(0, 3)))),
))


@st.composite
def contended_trees(draw) -> Model:
    """A fixed three-level shape with random quotas and limits, where preemption is frequent:
    r(0) ─┬─ c1 ─┬─ a, b        every ClusterQueue 1-4 cpu of flavor f0 (and 0-2 of f1), random
          │      └─ c3 ─ e      borrowing and lending limits below the root (a ClusterQueue's
          ├─ c2 ─ c             lending limit ≤ its nominal)
          └─ d"""
    flavors = ["f0", "f1"]
    nodes: dict[str, Node] = {}
    for name, parent, is_cq in (("r", None, False), ("c1", "r", False), ("c2", "r", False), ("c3", "c1", False),
                                ("a", "c1", True), ("b", "c1", True), ("e", "c3", True), ("c", "c2", True),
                                ("d", "r", True)):
        node = nodes[name] = Node(name, parent, is_cq)
        for flavor, top in (("f0", 4), ("f1", 2)):
            fr = (flavor, "cpu")
            nominal = draw(st.integers(1 if is_cq and flavor == "f0" else 0, top if is_cq else 2))
            node.nominal[fr] = nominal * 1000
            if parent is None:
                continue
            if draw(st.integers(0, 3)) == 0:
                node.borrowing[fr] = draw(st.integers(0, 4)) * 1000
            if draw(st.integers(0, 3)) == 0:
                node.lending[fr] = draw(st.integers(0, nominal if is_cq else 4)) * 1000
    return Model(flavors, ["cpu"], nodes)


@st.composite
def histories(draw):
    model: Model = draw(st.one_of(trees(), contended_trees()))
    cqs = [n.name for n in model.nodes.values() if n.is_cq]
    policies = {name: draw(st.one_of(st.none(), POLICIES, POLICIES, POLICIES)) for name in cqs}
    preempt_flavor = {name: draw(st.sampled_from([None, "MayStopSearch"])) for name in cqs}
    release_on = draw(st.sampled_from(["Decision", "Eviction"]))
    busy = st.integers(0, min(1, len(cqs) - 1))  # most work goes to two queues: contention
    submit = st.tuples(st.just("submit"), st.one_of(busy, busy, st.integers(0, len(cqs) - 1)), st.integers(1, 6),
                       st.integers(0, 2) if GPU in model.resources else st.just(0), st.integers(0, 4))
    finish = st.tuples(st.just("finish"), st.integers(0, 1000))
    evict = st.tuples(st.just("evict"), st.integers(0, 1000))
    ops = draw(st.lists(st.one_of(submit, submit, submit, finish, evict), min_size=20, max_size=40))
    return model, policies, preempt_flavor, release_on, ops, draw(st.integers(0, 60))


class History:
    """What a random history did so far, for the checks: per workload key its ClusterQueue and pod
    sets (``requests``), ``(ClusterQueue, priority, creation order)`` (``info``), and whether it
    still holds quota after a finish or an observed eviction (``holding``, set to False then)."""

    def __init__(self) -> None:
        self.requests: dict[str, tuple[str, list[dict]]] = {}
        self.info: dict[str, tuple[str, int, int]] = {}
        self.holding: dict[str, bool] = {}

    def steps(self, s: Scenario, cq_names: list[str], ops: list[tuple], gpu: bool) -> Iterator[str]:
        """Emit the events of ``ops`` (``histories``) one by one into ``s`` — submit, finish, evict of a
        workload still holding quota; ops with nothing to act on are skipped — yielding a label after
        each, before it is run.  ``gpu``: submissions ask for their GPUs too (else cpu only)."""
        submitted: list[str] = []
        for i, op in enumerate(ops):
            if op[0] == "submit":
                _, cq_i, cpu, gpus, priority = op
                cq = cq_names[cq_i]
                main = {"cpu": str(cpu)}
                if gpu and gpus:
                    main[GPU] = str(gpus)
                key = f"ns/w{i:02d}"
                pod_sets = [{"name": "main", "count": 1, "requests": main}]
                self.requests[key] = (cq, pod_sets)
                self.info[key] = (cq, priority, i)
                s.submit(key, cq, pod_sets=pod_sets, priority=priority, created=i)
                submitted.append(key)
                yield f"submit {key} to {cq}"
            elif not submitted:
                continue
            elif op[0] == "finish":
                key = submitted[op[1] % len(submitted)]
                s.finish(key)
                self.holding[key] = False
                yield f"finish {key}"
            else:
                evicting = sorted(k for k, held in self.holding.items() if held)
                if not evicting:
                    continue
                key = evicting[op[1] % len(evicting)]
                s.evict(key)
                self.holding[key] = False
                yield f"evict {key}"


def check_admissible(s: Scenario, model: Model, requests: dict, policies: dict, preempt_flavor: dict,
                     label: str) -> None:
    """KEP-79's condition and nothing admissible waits (``test_kep79.check``) — except behind a flavor
    that stopped the search because it can preempt (``whenCanPreempt: MayStopSearch`` commits to that
    flavor, as in Kueue) and behind a preemptor that waits for its victims' eviction (it blocks its
    queue, as Kueue's sticky preemptor)."""
    blocked = {w["clusterQueue"] for w in s.state()["workloads"].values()
               if w["reason"] == "WaitingForPreemptedWorkloads"}
    check(s, model, {k: v for k, v in requests.items()
                     if not (policies[v[0]] and preempt_flavor[v[0]] == "MayStopSearch") and v[0] not in blocked},
          label)


def check_replay(s: Scenario) -> list:
    """The scenario's events replayed by a fresh engine give byte-identical decisions and the same hash;
    returns the parsed events."""
    events = [parse_event(e) for e in s.events]
    again = Engine()
    replayed = [d.to_json() for e in events for d in again.apply(e)]
    assert orjson.dumps(replayed) == orjson.dumps(s.decisions)
    assert again.hash == s.engine.hash
    return events


def _allows(policy: str, preemptor: tuple[int, int], victim: tuple[int, int]) -> bool:
    """``(priority, creation order)`` of both; Kueue ``SatisfiesPreemptionPolicy``."""
    if policy == "Any":
        return True
    if policy == "Never":
        return False
    if preemptor[0] > victim[0]:
        return True
    return policy == "LowerOrNewerEqualPriority" and preemptor[0] == victim[0] and preemptor[1] < victim[1]


def check_decisions(decisions: list[dict], policies: dict, info: dict, holding: dict, release_on: str) -> None:
    """The policy, no-double-preemption and same-step-admission properties of one step's decisions."""
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
        assert d["clusterQueue"] == v_cq
        policy = policies[p_cq] or {}
        if v_cq == p_cq:
            assert d["reason"] == "InClusterQueue"
            assert _allows(policy.get("withinClusterQueue", "Never"), (p_prio, p_order), (v_prio, v_order))
        else:
            assert d["reason"] in ("InCohortReclamation", "InCohortReclaimWhileBorrowing")
            assert _allows(policy.get("reclaimWithinCohort", "Never"), (p_prio, p_order), (v_prio, v_order))
            if d["reason"] == "InCohortReclaimWhileBorrowing":
                bwc = policy.get("borrowWithinCohort", {})
                assert bwc.get("policy") == "LowerPriority" and v_prio < p_prio
                assert "maxPriorityThreshold" not in bwc or v_prio <= bwc["maxPriorityThreshold"]
        if release_on == "Decision":
            assert preemptor in admitted_now, f"{preemptor} preempted but was not admitted in the same step"


def check_over_quota_index(s: Scenario, frs: list) -> None:
    """The model's index of children above their quota equals a recount from every child's numbers."""
    cluster = s.engine.clusters[s.cluster]
    model = cluster.model
    for name, cohort in cluster.hierarchy.cohorts.items():
        children = [("Cohort", c) for c in sorted(cohort.child_cohorts) if cluster.hierarchy.cohorts[c].linked]
        children += [("ClusterQueue", q) for q in sorted(cohort.child_cluster_queues)]
        for fr in frs:
            expected = sorted(k for k in children if model.quota_numbers(k[0], k[1], fr)[2]
                              > model.quota_numbers(k[0], k[1], fr)[0])
            assert model.over_quota_children(name, [fr]) == expected, (name, fr)


def _oracle_probes(s: Scenario, name: str, head, frs: list) -> Iterator[PreemptionContext]:
    """Contexts as the flavor assigner's oracle builds them, for a pending workload of ClusterQueue
    ``name`` (any, not only its head: as if it were the head): one per flavor-resource of a resource
    it requests, needing its whole request of that resource."""
    cluster = s.engine.clusters[s.cluster]
    spec = cluster.hierarchy.cluster_queues[name].spec
    wanted: dict[str, int] = {}
    for _, _, totals in head.totals:
        for res, amount in totals:
            wanted[res] = wanted.get(res, 0) + amount
    for fr in frs:
        if wanted.get(fr[1]):
            yield PreemptionContext(cluster.model, cluster.hierarchy, cluster.admitted, head, name, spec.preemption,
                                    [fr], {fr: wanted[fr[1]]}, cluster.candidate_index)


def check_precheck(s: Scenario, name: str, head, frs: list) -> None:
    """``may_have_candidates`` rules a search out only when it has no candidate at all: asked as the
    flavor assigner's oracle asks (``_oracle_probes``), and compared with the candidate list itself."""
    for probe in _oracle_probes(s, name, head, frs):
        if may_have_candidates(probe):
            event("precheck: search")
        else:
            event("precheck: no candidate")
            assert collect(probe).get(0) is None, \
                f"{head.key} {probe.frs[0]}: the precheck ruled out a search with candidates"


def _over_quota(s: Scenario, kind: str, name: str, frs: list) -> bool:
    model = s.engine.clusters[s.cluster].model
    return any(model.quota_numbers(kind, name, fr)[2] > model.quota_numbers(kind, name, fr)[0] for fr in frs)


def reference_candidates(s: Scenario, ctx: PreemptionContext) -> list[tuple[str, int, str | None]]:
    """Kueue's candidate list read the plain way, as ``(workload, variant, lowest common Cohort)``:
    every admitted workload of the preemptor's ClusterQueue, then, per Cohort of its path, of every
    ClusterQueue above its quota (for a needed flavor-resource) reached through Cohorts above
    theirs outside the subtree already climbed; classified (``classify``), those only an attempt
    without borrowing could use left out when no such attempt can succeed; each list (hierarchical
    advantage, priority, own ClusterQueue) sorted by candidate order, the evicting candidates of
    all three first."""
    cluster = s.engine.clusters[s.cluster]
    hierarchy, model, own = cluster.hierarchy, cluster.model, ctx.cluster_queue
    lists: list[list[tuple[tuple, str, int, str | None]]] = [[], [], []]
    same: list[Candidate] = []
    for info in cluster.admitted.get(own, {}).values():
        variant = classify(ctx, info, own, False)
        if variant:
            lists[2].append((queue_key(info), info.key, variant, None))
            same.append(Candidate(info, own, None, variant))
    path, level = model.advantage_level(own, list(ctx.usage.items()))
    if len(path) > 1 and ctx.preemption.reclaim_within_cohort != "Never":
        without_borrowing = can_fit_without_borrowing(ctx, same)

        def visit(cohort: str, lca: str, skip: str | None, advantage: bool) -> None:
            entry = hierarchy.cohorts[cohort]
            for cq in sorted(entry.child_cluster_queues):
                if cq == own or not _over_quota(s, "ClusterQueue", cq, ctx.frs):
                    continue
                for info in cluster.admitted.get(cq, {}).values():
                    variant = classify(ctx, info, cq, advantage)
                    if variant and (without_borrowing or variant != RECLAIM_WITHOUT_BORROWING):
                        lists[0 if advantage else 1].append((queue_key(info), info.key, variant, lca))
            for child in sorted(entry.child_cohorts):
                if child != skip and hierarchy.cohorts[child].linked and _over_quota(s, "Cohort", child, ctx.frs):
                    visit(child, lca, skip, advantage)

        previous = None
        for i in range(1, len(path)):
            visit(path[i][1], path[i][1], previous, level < i)
            previous = path[i][1]
    evicting = {info.key for infos in cluster.admitted.values() for info in infos.values() if info.evicting}
    out: list[tuple[str, int, str | None]] = []
    for first in (True, False):
        for members in lists:
            out += [(key, variant, lca) for _, key, variant, lca in sorted(members) if (key in evicting) == first]
    return out


def check_candidate_orders(s: Scenario, frs: list) -> None:
    """The candidate list ``collect`` produces on demand (walking Cohorts and their ClusterQueues
    lazily, with the candidate index kept across the whole history) equals the plain reading
    (``reference_candidates``): for every active ClusterQueue that may preempt, as if each pending
    workload of the cluster, and the first four admitted ones, were its head (``_oracle_probes``)."""
    cluster = s.engine.clusters[s.cluster]
    pending = [info for queue in cluster.queues.values() for info in queue.members.values()]
    admitted = sorted((info for infos in cluster.admitted.values() for info in infos.values()), key=lambda i: i.key)
    preemptors = sorted(pending, key=lambda i: i.key) + admitted[:4]
    for name, entry in sorted(cluster.hierarchy.cluster_queues.items()):
        if entry.spec is None or cluster.inactive_reason(name) is not None or not may_preempt(entry.spec):
            continue
        for head in preemptors:
            for probe in _oracle_probes(s, name, head, frs):
                cands = collect(probe)
                got: list[tuple[str, int, str | None]] = []
                while (cand := cands.get(len(got))) is not None:
                    got.append((cand.info.key, cand.variant, cand.lca))
                event("candidates: some" if got else "candidates: none")
                assert got == reference_candidates(s, probe), f"{name} as if {head.key} were its head, {probe.frs[0]}"


def check_oracle_height(s: Scenario, name: str, head, frs: list) -> None:
    """The oracle's answer with the height the search read while its victims were still released
    (``PreemptionContext.wants_height``) equals the answer read by releasing the victims again
    (``preemption_mode`` without ``ctx.height``), for the oracle's probes (``_oracle_probes``);
    the model is left as found."""
    model = s.engine.clusters[s.cluster].model
    before = orjson.dumps(model.dump())
    for probe in _oracle_probes(s, name, head, frs):
        fr = probe.frs[0]
        probe.wants_height = True
        targets = find_targets(probe)
        if targets:
            event("oracle: victims")
            assert probe.height is not None
        fast = preemption_mode(probe, fr, probe.usage[fr], targets, 0)
        probe.height = None
        assert fast == preemption_mode(probe, fr, probe.usage[fr], targets, 0), f"{head.key} {fr}"
    assert orjson.dumps(model.dump()) == before, "the oracle's search left the model changed"


def check_lowest_priority(s: Scenario) -> None:
    """The candidate index's lowest admitted priority equals a recount over every ClusterQueue."""
    cluster = s.engine.clusters[s.cluster]
    index = cluster.candidate_index
    index.refresh(cluster.admitted, cluster.hierarchy)
    priorities = [info.obj.priority for infos in cluster.admitted.values() for info in infos.values()
                  if not info.evicting]
    assert index.lowest_priority() == (min(priorities) if priorities else None)


def check_least_charge(s: Scenario) -> None:
    """The candidate index's least charge, kept across the history, equals a recount: per
    flavor-resource every admitted workload charges, the smallest amount charged."""
    cluster = s.engine.clusters[s.cluster]
    index = cluster.candidate_index
    index.refresh(cluster.admitted, cluster.hierarchy)
    charges = [info.charge for infos in cluster.admitted.values() for info in infos.values()]
    frs = set.intersection(*[{fr for fr, amount in c.items() if amount > 0} for c in charges]) if charges else set()
    assert index.least_charge(cluster.admitted) == {fr: min(c[fr] for c in charges) for fr in frs}
    for cq, infos in sorted(cluster.admitted.items()):
        own = [info.charge for info in infos.values()]
        frs = set.intersection(*[{fr for fr, amount in c.items() if amount > 0} for c in own]) if own else set()
        assert index.least_charge_of(cluster.admitted, cq) == {fr: min(c[fr] for c in own) for fr in frs}, cq


def check_children_order(s: Scenario) -> None:
    """The candidate index's order of each Cohort's ClusterQueues by first workload, kept across the
    history, equals a recount (every ClusterQueue with a non-evicting admitted workload, by the
    smallest candidate key of those)."""
    cluster = s.engine.clusters[s.cluster]
    index = cluster.candidate_index
    index.refresh(cluster.admitted, cluster.hierarchy)
    for name, cohort in sorted(cluster.hierarchy.cohorts.items()):
        expected = []
        for cq in cohort.child_cluster_queues:
            keys = [queue_key(info) for info in cluster.admitted.get(cq, {}).values() if not info.evicting]
            if keys:
                expected.append((min(keys), cq))
        assert index.children_by_first(cluster.admitted, cluster.hierarchy, name) == sorted(expected), name


def check_searches(s: Scenario, frs: list) -> None:
    """Fit and minimality of the victim search for every pending head that needs preemption."""
    cluster = s.engine.clusters[s.cluster]
    model = cluster.model
    before = orjson.dumps(model.dump())
    for name, queue in cluster.queues.items():
        entry = cluster.hierarchy.cluster_queues.get(name)
        head = queue.head(cluster.local_queue_score)
        if head is None or entry is None or entry.spec is None or cluster.inactive_reason(name) is not None:
            continue
        if not may_preempt(entry.spec):
            continue
        for info in sorted(queue.members.values(), key=lambda i: i.key):
            check_precheck(s, name, info, frs)
            check_oracle_height(s, name, info, frs)
        oracle = make_oracle(model, cluster.hierarchy, cluster.admitted, head, entry.spec)
        assignment = assign_flavors(model, entry, head, cluster.flavors, oracle)
        assert orjson.dumps(model.dump()) == before, "the oracle left the model changed"
        if not assignment.preempting:
            continue
        ctx = PreemptionContext(model, cluster.hierarchy, cluster.admitted, head, name, entry.spec.preemption,
                                assignment.preempt_frs, assignment.usage)
        targets = find_targets(ctx)
        assert orjson.dumps(model.dump()) == before, "the search left the model changed"
        # the cluster's candidate index, kept across the whole history, answers as a fresh one
        kept = PreemptionContext(model, cluster.hierarchy, cluster.admitted, head, name, entry.spec.preemption,
                                 assignment.preempt_frs, assignment.usage)
        kept.index = cluster.candidate_index
        assert ([(t.info.key, t.reason) for t in find_targets(kept)]
                == [(t.info.key, t.reason) for t in targets]), f"{head.key}: the kept candidate index is stale"
        if not targets:
            continue
        keys = [t.info.key for t in targets]
        assert len(set(keys)) == len(keys)
        undos = [model.simulate_release(t.cluster_queue, t.info.charge) for t in targets]
        assert fits(ctx, True), f"{head.key} does not fit after preempting {keys}"
        whole_without_borrowing = fits(ctx, False)
        for i, t in enumerate(targets):
            undos[i]()
            assert not fits(ctx, False), f"{head.key}: victim {t.info.key} of {keys} could be spared"
            if not whole_without_borrowing:
                assert not fits(ctx, True), f"{head.key}: victim {t.info.key} of {keys} could be spared"
            undos[i] = model.simulate_release(t.cluster_queue, t.info.charge)
        for undo in reversed(undos):
            undo()
        assert orjson.dumps(model.dump()) == before


def scenario_of(model: Model, policies: dict, preempt_flavor: dict,
                weight: Callable[[str, str], str | None] = lambda kind, name: None,
                **config) -> tuple[Scenario, list[str]]:
    """A scenario holding ``model``'s flavors, Cohorts and ClusterQueues — each ClusterQueue with its
    ``policies`` entry as ``spec.preemption``, its ``whenCanPreempt`` and a LocalQueue ``ns/<name>``,
    every node with ``weight(kind, name)`` as its ``fairSharing.weight`` — the EngineConfig built
    from ``config`` (``Scenario.engine_config``, admission fair sharing off), run once; and the
    ClusterQueues' names."""
    s = Scenario()
    s.engine_config(afs=False, **config)
    for f in model.flavors:
        s.flavor(f)
    for node in model.nodes.values():
        if not node.is_cq:
            s.cohort(node.name, parent=node.parent, groups=group_spec(model, node), weight=weight("Cohort", node.name))
    cq_names = [n.name for n in model.nodes.values() if n.is_cq]
    for name in cq_names:
        node = model.nodes[name]
        s.cq(name, cohort=node.parent, groups=group_spec(model, node), strategy=node.strategy,
             when_can_borrow=node.when_can_borrow, when_can_preempt=preempt_flavor[name],
             preemption=policies[name], weight=weight("ClusterQueue", name))
        s.lq(f"ns/{name}", name)
    s.run()
    return s, cq_names


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories())
def test_preemption_properties_on_random_trees_and_histories(case):
    model, policies, preempt_flavor, release_on, ops, cut = case
    s, cq_names = scenario_of(model, policies, preempt_flavor, release_on=release_on)
    h = History()
    for label in h.steps(s, cq_names, ops, gpu=True):
        check_decisions(s.run(), policies, h.info, h.holding, release_on)
        check_admissible(s, model, h.requests, policies, preempt_flavor, label)
        check_searches(s, model.frs())
        check_candidate_orders(s, model.frs())
        check_lowest_priority(s)
        check_least_charge(s)
        check_children_order(s)
        check_over_quota_index(s, model.frs())
    event(f"preemptions: {min(3, sum(1 for d in s.decisions if d['type'] == 'Preempted'))}+")
    # replay is byte-identical; a snapshot plus the tail equals the full replay
    events = check_replay(s)
    cut = min(cut, len(events))
    head = Engine()
    for e in events[:cut]:
        head.apply(e)
    restored = load(dump(head))
    tail = [d.to_json() for e in events[cut:] for d in restored.apply(e)]
    assert orjson.dumps(tail) == orjson.dumps([d.to_json() for e in events[cut:] for d in head.apply(e)])
    assert restored.hash == s.engine.hash == head.hash
    assert orjson.dumps(restored.state()) == orjson.dumps(s.engine.state())
