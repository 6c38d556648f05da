"""A small builder so scenario tests read like a story.

    s = Scenario()
    s.flavor("default")
    s.cohort("org", quotas={"cpu": "10"})
    s.cq("a", cohort="org", quotas={"cpu": ("4", None, "2")})     # (nominal, borrowingLimit, lendingLimit)
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")
    decisions = s.run()                                          # decision dicts caused by the new events
    assert admitted(decisions) == ["ns/w1"]
    assert s.workload("ns/w1")["status"] == "Admitted"

Every call appends a real EVENTS.md v1 event (a plain ``dict``) to ``s.events``; ``run()`` feeds the
events not applied yet through ``statemodel.events.parse_event`` and the driver
(``statemodel.driver.Driver``, the loop every path uses; so the parsing path is exercised) and returns the decisions they caused as JSON dicts.  Event times increase by one
second per event unless ``at=`` (seconds after the scenario start) is given.  ``with s.batch():``
collects the events emitted inside it into one ``Batch`` event.

Admission fair sharing (KEP-4136): ``s.engine_config(halfLife="168h", interval="5m", weights={...},
reset="24h")`` applies the ``EngineConfig`` (``afs=False`` omits its ``admissionFairSharing`` section,
``quota_model="..."`` names the cluster's quota model);
``cq(..., admission_mode=USAGE_BASED, weight="2")`` and ``cohort(..., admission_mode=...)`` set
``spec.admissionScope`` / ``spec.fairSharing``; ``lq(..., weight="0", afs_status=({"cpu": "4"}, -3600))``
sets the LocalQueue weight and Kueue's persisted ``admissionFairSharingStatus`` (consumed, lastUpdate in
scenario seconds); ``s.afs("lq" | "cq" | "cohort", name)`` reads the ``admissionFairSharing`` state.

Quota shorthands (``quotas=`` / ``groups=``):

* a resource spec is ``nominal`` or ``(nominal, borrowingLimit, lendingLimit)``; ``None`` limits are
  omitted from the object (no limit);
* ``quotas={"cpu": ..., "memory": ...}`` is one resource group with one flavor (``flavor=``,
  default ``"default"``);
* ``groups=[{"on-demand": {"cpu": ...}, "spot": {"cpu": ...}}, ...]`` is a list of resource groups,
  each an ordered ``flavor -> {resource: spec}`` map (flavors are tried in that order); the covered
  resources are the keys of the first flavor.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import orjson

from statemodel.driver import Driver
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.events.decode import parse_event
from statemodel.events.envelope import Event

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
ENGINE_CONFIG_API = "quotaledger.io/v1alpha1"
USAGE_BASED = "UsageBasedAdmissionFairSharing"
NO_AFS = "NoAdmissionFairSharing"

QuotaSpec = Any  # nominal | (nominal, borrowingLimit, lendingLimit)


def rfc3339(seconds: float) -> str:
    """Scenario time ``seconds`` after START as RFC 3339 (UTC, ``Z``)."""
    t = START + timedelta(seconds=seconds)
    if t.microsecond:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _resource_quota(name: str, spec: QuotaSpec) -> dict:
    if isinstance(spec, tuple):
        nominal, borrowing, lending = (tuple(spec) + (None, None))[:3]
    else:
        nominal, borrowing, lending = spec, None, None
    out: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out


def resource_groups(quotas: dict | None = None, groups: list | None = None, flavor: str = "default") -> list[dict]:
    """Kueue ``spec.resourceGroups`` from the shorthands described in the module docstring."""
    if quotas is not None:
        groups = [{flavor: quotas}] + list(groups or [])
    out = []
    for group in groups or []:
        flavors = list(group.items())
        covered = list(flavors[0][1].keys())
        out.append({
            "coveredResources": covered,
            "flavors": [
                {"name": fname, "resources": [_resource_quota(r, res[r]) for r in covered]}
                for fname, res in flavors
            ],
        })
    return out


def _fair_sharing(spec: dict, admission_mode: str | None, weight: Any) -> None:
    """``spec.admissionScope.admissionMode`` and ``spec.fairSharing.weight`` of a ClusterQueue or Cohort."""
    if admission_mode is not None:
        spec["admissionScope"] = {"admissionMode": admission_mode}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}


def _requests(cpu=None, gpu=None, memory=None, requests=None) -> dict:
    out = dict(requests or {})
    if cpu is not None:
        out["cpu"] = cpu
    if gpu is not None:
        out[GPU] = gpu
    if memory is not None:
        out["memory"] = memory
    return out


def assignment(name: str = "main", count: int = 1, flavors: dict | None = None, usage: dict | None = None) -> dict:
    """One Kueue ``podSetAssignments`` entry (``usage`` is the podSet total)."""
    return {"name": name, "count": count, "flavors": dict(flavors or {}), "resourceUsage": dict(usage or {})}


def admitted(decisions: list[dict]) -> list[str]:
    """Workload names of the ``Admitted`` decisions, in decision order."""
    return [d["workload"] for d in decisions if d["type"] == "Admitted"]


def preempted(decisions: list[dict]) -> list[tuple[str, str, str]]:
    """``(victim, preemptor, reason)`` of the ``Preempted`` decisions, in decision order."""
    return [(d["workload"], d["preemptor"], d["reason"]) for d in decisions if d["type"] == "Preempted"]


def evicted(decisions: list[dict]) -> list[str]:
    """Workload names of the ``Evicted`` decisions, in decision order."""
    return [d["workload"] for d in decisions if d["type"] == "Evicted"]


class Scenario:
    """Builds EVENTS.md events and runs them through a fresh ``Engine`` (``self.engine``), fed by a
    ``Driver`` (``self.driver``)."""

    def __init__(self, cluster: str = "default") -> None:
        self.cluster = cluster
        self.driver = Driver()
        self.engine = self.driver.engine
        self.events: list[dict] = []
        self.decisions: list[dict] = []
        self.rejections: list[EventError] = []
        self._applied_upto = 0
        self._clock = -1.0
        self._ids = 0
        self._batch: list[dict] | None = None

    # -- low level ---------------------------------------------------------------------------

    def next_id(self) -> str:
        self._ids += 1
        return f"e-{self._ids:05d}"

    def emit(self, etype: str, at: float | None = None, **payload: Any) -> dict:
        """Append one event of ``etype`` (inside ``batch()``: to the batch, without its own time)."""
        event: dict[str, Any] = {"id": self.next_id()}
        if self._batch is None:
            self._clock = self._clock + 1 if at is None else max(float(at), self._clock)
            event["time"] = rfc3339(self._clock)
            event["cluster"] = self.cluster
        event["type"] = event_type = etype
        event["v"] = 1
        event.update(payload)
        if self._batch is not None:
            self._batch.append(event)
        else:
            self.events.append(event)
        assert event_type == etype
        return event

    def raw(self, event: dict) -> dict:
        """Append an event exactly as given (for duplicates, invalid events, hand-written JSON)."""
        self.events.append(event)
        return event

    @contextlib.contextmanager
    def batch(self, at: float | None = None) -> Iterator[None]:
        """Collect the events emitted inside into one ``Batch`` (admission once, after the last)."""
        assert self._batch is None, "a Batch may not contain a Batch"
        self._batch = []
        try:
            yield
        finally:
            inner, self._batch = self._batch, None
        self.emit("Batch", at=at, events=inner)

    def _apply(self, obj: dict, at: float | None = None) -> dict:
        return self.emit("Applied", at=at, object=obj)

    def _delete(self, kind: str, name: str, namespace: str | None = None, at: float | None = None) -> dict:
        meta = {"name": name}
        if namespace is not None:
            meta["namespace"] = namespace
        return self.emit("Deleted", at=at, object={"apiVersion": KUEUE, "kind": kind, "metadata": meta})

    # -- configuration objects ------------------------------------------------------------------

    def flavor(self, name: str, labels: dict | None = None, at: float | None = None) -> dict:
        spec = {"nodeLabels": labels} if labels else {}
        return self._apply({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}, at)

    def cohort(self, name: str, parent: str | None = None, quotas: dict | None = None, groups: list | None = None,
               flavor: str = "default", admission_mode: str | None = None, weight: Any = None,
               at: float | None = None) -> dict:
        spec: dict[str, Any] = {}
        if parent is not None:
            spec["parentName"] = parent
        rgs = resource_groups(quotas, groups, flavor)
        if rgs:
            spec["resourceGroups"] = rgs
        _fair_sharing(spec, admission_mode, weight)
        return self._apply({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}, at)

    def cq(self, name: str, cohort: str | None = None, quotas: dict | None = None, groups: list | None = None,
           flavor: str = "default", strategy: str | None = None, when_can_borrow: str | None = None,
           when_can_preempt: str | None = None, stop_policy: str | None = None, admission_mode: str | None = None,
           weight: Any = None, preemption: dict | None = None, preference: str | None = None,
           at: float | None = None) -> dict:
        """A ClusterQueue; ``preemption`` is ``spec.preemption`` as given (e.g.
        ``{"withinClusterQueue": "LowerPriority"}``), ``preference`` ``spec.flavorFungibility.preference``."""
        spec: dict[str, Any] = {}
        if cohort is not None:
            spec["cohortName"] = cohort
        _fair_sharing(spec, admission_mode, weight)
        spec["resourceGroups"] = resource_groups(quotas, groups, flavor)
        if strategy is not None:
            spec["queueingStrategy"] = strategy
        if when_can_borrow is not None or when_can_preempt is not None or preference is not None:
            ff = {}
            if when_can_borrow is not None:
                ff["whenCanBorrow"] = when_can_borrow
            if when_can_preempt is not None:
                ff["whenCanPreempt"] = when_can_preempt
            if preference is not None:
                ff["preference"] = preference
            spec["flavorFungibility"] = ff
        if preemption is not None:
            spec["preemption"] = preemption
        if stop_policy is not None:
            spec["stopPolicy"] = stop_policy
        return self._apply({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}, at)

    def lq(self, key: str, cluster_queue: str, stop_policy: str | None = None, weight: Any = None,
           afs_status: tuple[dict, float] | None = None, at: float | None = None) -> dict:
        """A LocalQueue; ``afs_status=(consumedResources, lastUpdate seconds)`` is Kueue's persisted
        ``status.fairSharing.admissionFairSharingStatus``."""
        ns, name = key.split("/")
        spec: dict[str, Any] = {"clusterQueue": cluster_queue}
        if stop_policy is not None:
            spec["stopPolicy"] = stop_policy
        if weight is not None:
            spec["fairSharing"] = {"weight": weight}
        obj: dict[str, Any] = {"apiVersion": KUEUE, "kind": "LocalQueue",
                               "metadata": {"namespace": ns, "name": name}, "spec": spec}
        if afs_status is not None:
            consumed, last_update = afs_status
            obj["status"] = {"fairSharing": {"admissionFairSharingStatus": {
                "consumedResources": dict(consumed), "lastUpdate": rfc3339(last_update)}}}
        return self._apply(obj, at)

    def engine_config(self, halfLife: str | None = "168h", interval: str | None = "5m", weights: dict | None = None,
                      reset: str | None = None, afs: bool = True, quota_model: str | None = None,
                      fair_sharing: bool | None = None, strategies: list[str] | None = None,
                      release_on: str | None = None, at: float | None = None) -> dict:
        """The ``EngineConfig`` (``quotaledger.io/v1alpha1``); ``afs=False`` omits ``admissionFairSharing``;
        ``quota_model`` sets ``spec.quotaModel``, ``release_on`` ``spec.preemption.releaseOn``;
        ``fair_sharing`` sets ``spec.fairSharing.enable`` and ``strategies`` its ``preemptionStrategies``.
        ``None`` leaves a field out (engine default)."""
        spec: dict[str, Any] = {}
        if fair_sharing is not None or strategies is not None:
            fs: dict[str, Any] = {}
            if fair_sharing is not None:
                fs["enable"] = fair_sharing
            if strategies is not None:
                fs["preemptionStrategies"] = list(strategies)
            spec["fairSharing"] = fs
        if quota_model is not None:
            spec["quotaModel"] = quota_model
        if release_on is not None:
            spec["preemption"] = {"releaseOn": release_on}
        if afs:
            a: dict[str, Any] = {}
            if halfLife is not None:
                a["usageHalfLifeTime"] = halfLife
            if interval is not None:
                a["usageSamplingInterval"] = interval
            if weights is not None:
                a["resourceWeights"] = dict(weights)
            if reset is not None:
                a["resetInactivityPeriod"] = reset
            spec["admissionFairSharing"] = a
        return self._apply({"apiVersion": ENGINE_CONFIG_API, "kind": "EngineConfig", "metadata": {"name": "c"},
                            "spec": spec}, at)

    def delete_engine_config(self, at: float | None = None) -> dict:
        return self.emit("Deleted", at=at, object={"apiVersion": ENGINE_CONFIG_API, "kind": "EngineConfig",
                                                   "metadata": {"name": "c"}})

    def delete_cohort(self, name: str, at: float | None = None) -> dict:
        return self._delete("Cohort", name, at=at)

    def delete_cq(self, name: str, at: float | None = None) -> dict:
        return self._delete("ClusterQueue", name, at=at)

    def delete_lq(self, key: str, at: float | None = None) -> dict:
        ns, name = key.split("/")
        return self._delete("LocalQueue", name, ns, at=at)

    def delete_flavor(self, name: str, at: float | None = None) -> dict:
        return self._delete("ResourceFlavor", name, at=at)

    def delete_workload(self, key: str, at: float | None = None) -> dict:
        ns, name = key.split("/")
        return self._delete("Workload", name, ns, at=at)

    # -- workloads ---------------------------------------------------------------------------------

    def workload_object(self, key: str, queue: str, *, cpu=None, gpu=None, memory=None, requests: dict | None = None,
                        count: int = 1, priority: int | None = None, pod_sets: list[dict] | None = None,
                        uid: str | None = None, created: float | None = None, template: bool = False,
                        admission: dict | None = None) -> dict:
        """A Kueue ``Workload`` object; ``pod_sets`` items are ``{"name", "count", "requests"}`` dicts."""
        ns, name = key.split("/")
        if pod_sets is None:
            pod_sets = [{"name": "main", "count": count, "requests": _requests(cpu, gpu, memory, requests)}]
        out_ps = []
        for ps in pod_sets:
            entry = {"name": ps.get("name", "main"), "count": ps.get("count", 1)}
            reqs = ps["requests"]
            if template:
                entry["template"] = {"spec": {"containers": [{"name": "c", "resources": {"requests": reqs}}]}}
            else:
                entry["requests"] = reqs
            out_ps.append(entry)
        meta: dict[str, Any] = {"namespace": ns, "name": name}
        if uid is not None:
            meta["uid"] = uid
        if created is not None:
            meta["creationTimestamp"] = rfc3339(created)
        spec: dict[str, Any] = {"queueName": queue, "podSets": out_ps}
        if priority is not None:
            spec["priority"] = priority
        obj = {"apiVersion": KUEUE, "kind": "Workload", "metadata": meta, "spec": spec}
        if admission is not None:
            obj["status"] = {"admission": admission}
        return obj

    def submit(self, key: str, queue: str, *, at: float | None = None, **kwargs: Any) -> dict:
        """Apply a Workload (see ``workload_object`` for the keyword arguments)."""
        return self._apply(self.workload_object(key, queue, **kwargs), at)

    def finish(self, key: str, at: float | None = None) -> dict:
        return self.emit("WorkloadFinished", at=at, workload=key)

    def evict(self, key: str, reason: str = "Preempted", at: float | None = None) -> dict:
        return self.emit("WorkloadEvicted", at=at, workload=key, reason=reason)

    def observe_admission(self, key: str, cluster_queue: str, pod_set_assignments: list[dict] | None = None, *,
                          cpu=None, gpu=None, flavor: str = "default", count: int = 1,
                          at: float | None = None) -> dict:
        """A ``WorkloadAdmitted`` event; by default one ``main`` podSet charged ``cpu``/``gpu`` in ``flavor``."""
        if pod_set_assignments is None:
            usage = _requests(cpu, gpu)
            pod_set_assignments = [assignment("main", count, {r: flavor for r in usage}, usage)]
        return self.emit("WorkloadAdmitted", at=at, workload=key,
                         admission={"clusterQueue": cluster_queue, "podSetAssignments": pod_set_assignments})

    def tick(self, at: float | None = None) -> dict:
        return self.emit("Tick", at=at)

    # -- running -----------------------------------------------------------------------------------

    def continue_on(self, engine: Engine, applied: int) -> None:
        """Go on with ``engine`` (e.g. one restored from a snapshot taken after the first ``applied``
        events): the next ``run`` applies the events from index ``applied`` to it."""
        self.driver = Driver(engine)
        self.engine = engine
        self._applied_upto = applied

    def run(self) -> list[dict]:
        """Apply every event not applied yet; the decisions they caused (JSON dicts), in order.

        An event that fails validation is counted as rejected by the driver and kept in ``rejections``.
        """
        out: list[dict] = []
        while self._applied_upto < len(self.events):
            raw = self.events[self._applied_upto]
            self._applied_upto += 1
            try:
                item: Event | EventError = parse_event(raw)
            except EventError as error:
                item = error
            step = self.driver.step(self._applied_upto, item)
            if step.rejection is not None:
                self.rejections.append(step.rejection)
            out.extend(d.to_json() for d in step.decisions)
        self.decisions.extend(out)
        return out

    def full_state(self) -> dict:
        self.run()
        return self.engine.state()

    def state(self) -> dict:
        """The state JSON of this scenario's cluster (after running pending events)."""
        return self.full_state()["clusters"][self.cluster]

    def workload(self, key: str) -> dict:
        return self.state()["workloads"][key]

    def cq_state(self, name: str) -> dict:
        return self.state()["clusterQueues"][name]

    def cq_resource(self, name: str, resource: str = "cpu", flavor: str = "default") -> dict:
        return self.cq_state(name)["resources"][flavor][resource]

    def cohort_state(self, name: str) -> dict:
        return self.state()["cohorts"][name]

    def lq_state(self, key: str) -> dict:
        return self.state()["localQueues"][key]

    def afs(self, kind: str, key: str) -> dict:
        """``admissionFairSharing`` of a ``"lq"``, ``"cq"`` or ``"cohort"``."""
        section = {"lq": "localQueues", "cq": "clusterQueues", "cohort": "cohorts"}[kind]
        return self.state()[section][key]["admissionFairSharing"]

    def cohort_resource(self, name: str, resource: str = "cpu", flavor: str = "default") -> dict:
        return self.cohort_state(name)["resources"][flavor][resource]

    def pending(self, key: str) -> tuple[str | None, str]:
        """``(reason, message)`` of a workload (asserting it is pending)."""
        wl = self.workload(key)
        assert wl["status"] == "Pending", (key, wl)
        return wl["reason"], wl["message"]

    def admitted_workloads(self) -> list[str]:
        """Names of every workload currently admitted, sorted."""
        return sorted(k for k, w in self.state()["workloads"].items() if w["status"] == "Admitted")

    def admitted_in(self, cluster_queue: str) -> list[str]:
        return sorted(k for k, w in self.state()["workloads"].items()
                      if w["status"] == "Admitted" and w["clusterQueue"] == cluster_queue)

    def decisions_ndjson(self) -> bytes:
        return b"".join(orjson.dumps(d) + b"\n" for d in self.decisions)

    def events_ndjson(self) -> bytes:
        return b"".join(orjson.dumps(e) + b"\n" for e in self.events)


def message_waiting(resource: str, flavor: str, more: str, pod_set: str = "main") -> str:
    """Kueue's WaitingForQuota message for one podSet and one flavor."""
    return (f"couldn't assign flavors to pod set {pod_set}: "
            f"insufficient unused quota for {resource} in flavor {flavor}, {more} more needed")


def message_exceeds(resource: str, flavor: str, previous: str, request: str, maximum: str, pod_set: str = "main") -> str:
    """Kueue's ExceedsMaxQuota message for one podSet and one flavor."""
    return (f"couldn't assign flavors to pod set {pod_set}: insufficient quota for {resource} in flavor {flavor}, "
            f"previously considered podsets requests ({previous}) + current podset request ({request}) "
            f"> maximum capacity ({maximum})")
