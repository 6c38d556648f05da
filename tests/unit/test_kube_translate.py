"""The pure translation of ``quotaledger watch`` (streams/kube/translate.py): watch events → envelopes.

Expected envelopes are written from the rules of the module docstring (docs/events.md "The
Kubernetes source"): ids ``uid@resourceVersion:what``, the time rule, and a Workload's status
conditions as Kueue sets them (QuotaReserved, Evicted, Finished).
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from statemodel.timefmt import format_time, parse_time
from streams.kube.kinds import KINDS, kinds_for
from streams.kube.translate import ADDED, DELETED, MODIFIED, EventClock, Translator

SPECS = {spec.kind: spec for spec in kinds_for("kueue")}
CQ, WL, NODE = SPECS["ClusterQueue"], SPECS["Workload"], SPECS["Node"]
T0 = parse_time("2026-03-01T09:00:00Z", "")
RECEIVED = parse_time("2026-03-01T12:00:00Z", "")


def _translator(last: str | None = None) -> Translator:
    return Translator("prod", EventClock(parse_time(last, "") if last else 0))


def _cq(rv: str, nominal: str = "4", uid: str = "u-cq") -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "team-a", "uid": uid, "resourceVersion": rv,
                         "creationTimestamp": "2026-03-01T09:00:00Z",
                         "managedFields": [{"manager": "kubectl", "time": "2026-03-01T09:05:00Z"},
                                           {"manager": "kueue", "time": "2026-03-01T09:07:30Z"}]},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]}}


ADMISSION = {"clusterQueue": "team-a", "podSetAssignments": [
    {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}]}


def _wl(rv: str, *conditions: tuple[str, str, str, str], admission: dict | None = None, priority: int = 0) -> dict:
    """A Workload with ``(type, status, reason, lastTransitionTime)`` conditions."""
    status: dict = {"conditions": [{"type": t, "status": s, "reason": r, "lastTransitionTime": when}
                                   for t, s, r, when in conditions]}
    if admission is not None:
        status["admission"] = admission
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "train", "namespace": "ml", "uid": "u-wl", "resourceVersion": rv,
                         "creationTimestamp": "2026-03-01T10:00:00Z"},
            "spec": {"queueName": "lq", "priority": priority,
                     "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"}}]},
            "status": status}


def test_applied_keeps_the_object_without_managed_fields_and_takes_the_last_write_time() -> None:
    tr = _translator()
    out = tr.translate(CQ, ADDED, _cq("7"), None, RECEIVED)
    (event,) = out.events
    assert event["id"] == "u-cq@7:applied"
    assert (event["type"], event["cluster"], event["v"]) == ("Applied", "prod", 1)
    # the later of creationTimestamp (09:00) and the managedFields times (09:05, 09:07:30)
    assert event["time"] == "2026-03-01T09:07:30Z"
    assert "managedFields" not in event["object"]["metadata"]
    assert event["object"]["spec"] == _cq("7")["spec"]
    assert out.remembered == event["object"]


def test_a_list_item_without_api_version_and_kind_gets_them_from_the_kind_table() -> None:
    node = {"metadata": {"name": "n1", "uid": "u-n1", "resourceVersion": "3"},
            "status": {"allocatable": {"cpu": "8"}}}
    (event,) = _translator().translate(NODE, ADDED, node, None, RECEIVED).events
    assert (event["object"]["apiVersion"], event["object"]["kind"]) == ("v1", "Node")
    assert event["time"] == format_time(RECEIVED)  # no timestamp in the object: the receive time


def test_deleted_names_the_object_only_and_uses_the_deletion_timestamp() -> None:
    obj = _cq("9")
    obj["metadata"]["deletionTimestamp"] = "2026-03-01T11:00:00Z"
    (event,) = _translator().translate(CQ, DELETED, obj, _cq("8"), RECEIVED).events
    assert event == {"id": "u-cq@9:deleted", "time": "2026-03-01T11:00:00Z", "cluster": "prod", "type": "Deleted",
                     "v": 1, "object": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                        "metadata": {"name": "team-a", "uid": "u-cq"}}}


def test_time_never_goes_back_within_the_cluster() -> None:
    tr = _translator("2026-03-01T10:00:00Z")
    (event,) = tr.translate(CQ, ADDED, _cq("7"), None, RECEIVED).events  # written 09:07:30, before the clock
    assert event["time"] == "2026-03-01T10:00:00Z"
    (later,) = tr.translate(NODE, ADDED, {"metadata": {"name": "n", "uid": "n", "resourceVersion": "1"}},
                            None, RECEIVED).events
    assert later["time"] == "2026-03-01T12:00:00Z"


def test_ids_fall_back_to_kind_and_name_and_a_content_digest() -> None:
    obj = {"metadata": {"name": "n1"}}
    first = _translator().translate(NODE, ADDED, obj, None, RECEIVED).events[0]["id"]
    again = _translator().translate(NODE, ADDED, obj, None, RECEIVED).events[0]["id"]
    other = _translator().translate(NODE, ADDED, {"metadata": {"name": "n1", "labels": {"a": "b"}}}, None,
                                    RECEIVED).events[0]["id"]
    assert first == again and first.startswith("Node/n1@sha256-") and first.endswith(":applied")
    assert other != first


def test_workload_lifecycle_pending_admitted_evicted_readmitted_finished() -> None:
    tr = _translator()
    known: dict[str, dict] = {}
    pending = _wl("10", ("QuotaReserved", "False", "Pending", "2026-03-01T10:00:00Z"))
    (applied,) = tr.watch_event(WL, ADDED, pending, known, RECEIVED)
    assert applied["type"] == "Applied" and "admission" not in applied["object"]["status"]
    assert applied["time"] == "2026-03-01T10:00:00Z"  # its creationTimestamp

    # Kueue reserves quota: status.admission appears, QuotaReserved turns True -> an observed admission
    reserved = _wl("11", ("QuotaReserved", "True", "QuotaReserved", "2026-03-01T10:01:00Z"),
                   ("Admitted", "True", "Admitted", "2026-03-01T10:01:00Z"), admission=ADMISSION)
    (admitted,) = tr.watch_event(WL, MODIFIED, reserved, known, RECEIVED)
    assert admitted == {"id": "u-wl@11:admitted", "time": "2026-03-01T10:01:00Z", "cluster": "prod",
                        "type": "WorkloadAdmitted", "v": 1, "workload": "ml/train", "admission": ADMISSION}

    # a status-only update that changes nothing the engine reads gives nothing
    assert tr.watch_event(WL, MODIFIED, {**reserved, "metadata": {**reserved["metadata"], "resourceVersion": "12"}},
                          known, RECEIVED) == []

    # preempted: Evicted=True (the admission is still set until the job stops) -> observed eviction
    evicted = _wl("13", ("QuotaReserved", "True", "QuotaReserved", "2026-03-01T10:01:00Z"),
                  ("Evicted", "True", "Preempted", "2026-03-01T10:20:00Z"), admission=ADMISSION)
    (eviction,) = tr.watch_event(WL, MODIFIED, evicted, known, RECEIVED)
    assert eviction == {"id": "u-wl@13:evicted", "time": "2026-03-01T10:20:00Z", "cluster": "prod",
                        "type": "WorkloadEvicted", "v": 1, "workload": "ml/train", "reason": "Preempted"}
    # then the reservation is released: nothing new (already evicted)
    released = _wl("14", ("QuotaReserved", "False", "Pending", "2026-03-01T10:20:05Z"),
                   ("Evicted", "True", "Preempted", "2026-03-01T10:20:00Z"))
    assert tr.watch_event(WL, MODIFIED, released, known, RECEIVED) == []

    # admitted again (Kueue resets Evicted when it reserves again)
    again = _wl("15", ("QuotaReserved", "True", "QuotaReserved", "2026-03-01T10:30:00Z"),
                ("Evicted", "False", "QuotaReserved", "2026-03-01T10:30:00Z"), admission=ADMISSION)
    (readmitted,) = tr.watch_event(WL, MODIFIED, again, known, RECEIVED)
    assert (readmitted["type"], readmitted["id"], readmitted["time"]) == (
        "WorkloadAdmitted", "u-wl@15:admitted", "2026-03-01T10:30:00Z")

    done = _wl("16", ("QuotaReserved", "True", "QuotaReserved", "2026-03-01T10:30:00Z"),
               ("Finished", "True", "JobFinished", "2026-03-01T11:00:00Z"), admission=ADMISSION)
    (finished,) = tr.watch_event(WL, MODIFIED, done, known, RECEIVED)
    assert finished == {"id": "u-wl@16:finished", "time": "2026-03-01T11:00:00Z", "cluster": "prod",
                        "type": "WorkloadFinished", "v": 1, "workload": "ml/train"}
    # a finished Workload is not applied again (that would queue it again) until it is deleted
    assert tr.watch_event(WL, MODIFIED, {**done, "metadata": {**done["metadata"], "resourceVersion": "17",
                                                              "labels": {"x": "y"}}}, known, RECEIVED) == []
    (gone,) = tr.watch_event(WL, DELETED, {**done, "metadata": {**done["metadata"], "resourceVersion": "18"}},
                             known, RECEIVED)
    assert gone["type"] == "Deleted" and known == {}


def test_admission_cleared_without_an_evicted_condition_is_an_eviction_with_the_reservation_reason() -> None:
    tr = _translator()
    known: dict[str, dict] = {}
    tr.watch_event(WL, ADDED, _wl("1", ("QuotaReserved", "True", "QuotaReserved", "2026-03-01T10:01:00Z"),
                                  admission=ADMISSION), known, RECEIVED)
    (evicted,) = tr.watch_event(WL, MODIFIED, _wl("2", ("QuotaReserved", "False", "Deactivated",
                                                        "2026-03-01T10:05:00Z")), known, RECEIVED)
    assert (evicted["type"], evicted["reason"], evicted["time"]) == (
        "WorkloadEvicted", "Deactivated", "2026-03-01T10:05:00Z")


def test_first_sight_of_an_admitted_workload_is_one_applied_with_its_admission() -> None:
    obj = _wl("5", ("QuotaReserved", "True", "QuotaReserved", "2026-03-01T10:01:00Z"), admission=ADMISSION)
    (event,) = _translator().translate(WL, ADDED, obj, None, RECEIVED).events
    assert event["type"] == "Applied" and event["object"]["status"]["admission"] == ADMISSION


def test_first_sight_of_a_finished_workload_sends_nothing() -> None:
    obj = _wl("5", ("Finished", "True", "JobFinished", "2026-03-01T10:01:00Z"), admission=ADMISSION)
    assert _translator().translate(WL, ADDED, obj, None, RECEIVED).events == []


def test_a_spec_change_while_evicted_is_applied_without_the_stale_admission_then_evicted() -> None:
    tr = _translator()
    known: dict[str, dict] = {}
    tr.watch_event(WL, ADDED, _wl("1", admission=ADMISSION), known, RECEIVED)
    changed = _wl("2", ("Evicted", "True", "InactiveWorkload", "2026-03-01T10:09:00Z"), admission=ADMISSION,
                  priority=5)
    applied, evicted = tr.watch_event(WL, MODIFIED, changed, known, RECEIVED)
    assert applied["type"] == "Applied" and "admission" not in applied["object"]["status"]
    assert applied["object"]["spec"]["priority"] == 5
    assert (evicted["type"], evicted["reason"]) == ("WorkloadEvicted", "InactiveWorkload")


def test_a_redelivered_version_gives_nothing_and_a_new_uid_deletes_the_old_object_first() -> None:
    tr = _translator()
    known: dict[str, dict] = {}
    assert len(tr.watch_event(CQ, ADDED, _cq("7"), known, RECEIVED)) == 1
    assert tr.watch_event(CQ, ADDED, _cq("7"), known, RECEIVED) == []
    deleted, applied = tr.watch_event(CQ, ADDED, _cq("20", uid="u-new"), known, RECEIVED)
    assert (deleted["id"], applied["id"]) == ("u-cq@7:deleted", "u-new@20:applied")


def test_relist_gives_the_differences_in_key_order() -> None:
    tr = _translator()
    def node(name: str, rv: str) -> dict:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"u-{name}", "resourceVersion": rv}}
    known = {"a": node("a", "1"), "b": node("b", "1"), "d": node("d", "4")}
    events, now = tr.relist(NODE, known, [node("c", "5"), node("d", "4"), node("a", "6")], RECEIVED)
    assert [(e["type"], e["id"]) for e in events] == [
        ("Applied", "u-a@6:applied"), ("Deleted", "u-b@1:deleted"), ("Applied", "u-c@5:applied")]
    assert sorted(now) == ["a", "c", "d"] and now["d"] is known["d"]


def test_batches_split_by_count_and_size_with_content_ids() -> None:
    tr = _translator()
    events = [tr.translate(NODE, ADDED, {"metadata": {"name": f"n{i}", "uid": f"u{i}", "resourceVersion": "1"}},
                           None, RECEIVED).events[0] for i in range(5)]
    (one,) = tr.batches("sync", events, 10, 1 << 20)
    assert one["type"] == "Batch" and one["events"] == events and one["time"] == events[-1]["time"]
    assert one["id"].startswith("sync:") and one["id"] == tr.batches("sync", events, 10, 1 << 20)[0]["id"]
    assert [len(b["events"]) for b in tr.batches("sync", events, 2, 1 << 20)] == [2, 2, 1]
    assert [len(b["events"]) for b in tr.batches("sync", events, 10, 1)] == [1, 1, 1, 1, 1]  # each alone
    assert tr.batches("sync", [], 10, 1 << 20) == []


def test_an_event_the_engine_rejects_is_sent_beside_the_batch_not_inside_it() -> None:
    tr = _translator()
    bad = _cq("1")
    bad["metadata"]["name"] = "Team_A"  # not a DNS-1123 subdomain: rejected at object.metadata.name
    invalid = tr.translate(CQ, ADDED, bad, None, RECEIVED).events[0]
    node = tr.translate(NODE, ADDED, {"metadata": {"name": "n1", "uid": "n", "resourceVersion": "2"}},
                        None, RECEIVED).events[0]
    batch, alone = tr.batches("sync", [invalid, node], 10, 1 << 20)
    assert batch["type"] == "Batch" and batch["events"] == [node]
    assert alone == invalid  # dead-lettered on its own, with its reason


def test_the_kind_table_is_data_and_filters_by_model() -> None:
    kueue = [s.kind for s in kinds_for("kueue")]
    assert kueue == ["ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "Node", "Topology", "Topology",
                     "Workload"]
    assert [s.kind for s in kinds_for("koordinator")] == ["Node", "Topology", "Topology", "ElasticQuota", "Pod"]
    assert [s.kind for s in kinds_for("volcano")] == ["Node", "Topology", "Topology", "Queue", "PodGroup", "Pod"]
    kueue_kinds = [s for s in kinds_for("kueue", "v1beta1") if s.group == "kueue.x-k8s.io" and s.kind != "Topology"]
    assert {(s.version, s.fallbacks) for s in kueue_kinds} == {("v1beta1", ())}
    auto = [s for s in kinds_for("kueue") if s.group == "kueue.x-k8s.io" and s.kind != "Topology"]
    assert {(s.version, s.fallbacks) for s in auto} == {("v1beta2", ("v1beta1",))}
    assert all(s.path.startswith("/api/v1/") for s in KINDS if not s.group)


_objects = st.builds(lambda name, rv, cpu: {"metadata": {"name": name, "uid": f"u-{name}", "resourceVersion": str(rv),
                                                          "creationTimestamp": format_time(T0 + cpu * 1000)},
                                             "status": {"allocatable": {"cpu": str(cpu)}}},
                     st.sampled_from(["a", "b", "c"]), st.integers(1, 5), st.integers(0, 100))


@given(st.lists(st.tuples(st.sampled_from([ADDED, MODIFIED, DELETED]), _objects, st.integers(0, 10**6)), max_size=30))
def test_times_never_decrease_and_a_replayed_stream_adds_nothing(stream) -> None:
    tr = _translator()
    known: dict[str, dict] = {}
    times = []
    for wtype, obj, received in stream:
        for event in tr.watch_event(NODE, wtype, obj, known, T0 + received):
            times.append(parse_time(event["time"], ""))
    assert times == sorted(times)
    # the same ADDED/MODIFIED versions delivered again (a reconnect) give nothing new
    for wtype, obj, received in stream:
        if wtype != DELETED and obj["metadata"]["name"] in known \
                and known[obj["metadata"]["name"]]["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]:
            assert tr.watch_event(NODE, wtype, obj, known, T0 + received) == []
