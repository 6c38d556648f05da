"""``statemodel.events.upcasters``: older object versions and envelope versions, upgraded or rejected.

The expected objects are written out by hand from Kueue's v1beta1 -> v1beta2 field changes
(``spec.cohort`` -> ``spec.cohortName``, ``spec.parent`` -> ``spec.parentName``, fungibility
``Borrow``/``Preempt`` -> ``MayStopSearch``).
"""

from __future__ import annotations

import copy

import orjson
import pytest

from statemodel.errors import EventError
from statemodel.events.decode import parse_event
from statemodel.events.upcasters import (
    ENVELOPE_VERSION,
    check_envelope_version,
    current_version,
    is_older_version,
    original_path,
    upcast,
)
from statemodel.objects import FlavorFungibility, FlavorFungibilityPolicy

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def _obj(kind: str, spec: dict | None = None, api: str = V1, **meta) -> dict:
    o = {"apiVersion": api, "kind": kind, "metadata": {"name": "x", **meta}}
    if spec is not None:
        o["spec"] = spec
    return o


UPCASTS = [
    pytest.param(_obj("ClusterQueue", {"cohort": "org", "queueingStrategy": "StrictFIFO"}),
                 _obj("ClusterQueue", {"cohortName": "org", "queueingStrategy": "StrictFIFO"}, V2), id="cq-cohort"),
    pytest.param(_obj("ClusterQueue", {"cohortName": "ignored-in-v1beta1"}),
                 _obj("ClusterQueue", {}, V2), id="cq-v1beta2-name-pruned"),
    pytest.param(_obj("ClusterQueue", {"cohort": "org", "cohortName": "other"}),
                 _obj("ClusterQueue", {"cohortName": "org"}, V2), id="cq-old-name-wins"),
    pytest.param(_obj("ClusterQueue", {"cohort": 7}),
                 _obj("ClusterQueue", {"cohortName": 7}, V2), id="cq-wrong-type-moved-unchanged"),
    pytest.param(_obj("ClusterQueue", {"flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt",
                                                            "preference": None}}),
                 _obj("ClusterQueue", {"flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                                            "whenCanPreempt": "MayStopSearch", "preference": None}}, V2),
                 id="cq-fungibility-aliases"),
    pytest.param(_obj("ClusterQueue", {"flavorFungibility": {"whenCanBorrow": "Preempt", "whenCanPreempt": "Borrow"}}),
                 _obj("ClusterQueue", {"flavorFungibility": {"whenCanBorrow": "Preempt", "whenCanPreempt": "Borrow"}}, V2),
                 id="cq-alias-only-on-its-own-field"),
    pytest.param(_obj("ClusterQueue"), _obj("ClusterQueue", api=V2), id="cq-no-spec"),
    pytest.param(_obj("Cohort", {"parent": "root", "fairSharing": {"weight": "2"}}),
                 _obj("Cohort", {"parentName": "root", "fairSharing": {"weight": "2"}}, V2), id="cohort-parent"),
    pytest.param(_obj("LocalQueue", {"clusterQueue": "cq"}, namespace="ns"),
                 _obj("LocalQueue", {"clusterQueue": "cq"}, V2, namespace="ns"), id="local-queue-same-shape"),
    pytest.param(_obj("ResourceFlavor", {"nodeLabels": {"a": "b"}}),
                 _obj("ResourceFlavor", {"nodeLabels": {"a": "b"}}, V2), id="flavor-same-shape"),
    pytest.param(_obj("Workload", {"queueName": "q", "podSets": []}, namespace="ns"),
                 _obj("Workload", {"queueName": "q", "podSets": []}, V2, namespace="ns"), id="workload-same-shape"),
]


@pytest.mark.parametrize(("old", "new"), UPCASTS)
def test_v1beta1_objects_upcast_to_v1beta2(old: dict, new: dict) -> None:
    before = copy.deepcopy(old)
    assert upcast(old) == new
    assert old == before  # the input (whose canonical bytes enter the hash chain) is untouched


@pytest.mark.parametrize(("api", "kind", "current"), [
    (V1, "ClusterQueue", V2),
    (V1, "Workload", V2),
    (V1, "Node", None),  # v1beta1 never had it
    (V2, "ClusterQueue", None),  # already current
    ("v1", "Node", None),
    ("example.com/v1", "ClusterQueue", None),
])
def test_current_version(api: str, kind: str, current: str | None) -> None:
    assert current_version(api, kind) == current


def test_is_older_version() -> None:
    assert is_older_version(V1)
    assert not is_older_version(V2)
    assert not is_older_version("quotaledger.io/v1alpha1")


@pytest.mark.parametrize(("kind", "path", "written"), [
    ("ClusterQueue", "object.spec.cohortName", "object.spec.cohort"),
    ("Cohort", "object.spec.parentName", "object.spec.parent"),
    ("Cohort", "object.spec.cohortName", "object.spec.cohortName"),  # renames are per kind
    ("ClusterQueue", "object.spec.cohortNames", "object.spec.cohortNames"),  # a whole field name only
    ("ClusterQueue", "object.spec.flavorFungibility.whenCanBorrow", "object.spec.flavorFungibility.whenCanBorrow"),
])
def test_original_path(kind: str, path: str, written: str) -> None:
    assert original_path(V1, kind, path) == written


def _applied(obj: dict) -> dict:
    return {"id": "e-1", "time": 0, "type": "Applied", "object": obj}


@pytest.mark.parametrize(("obj", "path", "problem"), [
    (_obj("ClusterQueue", {"cohort": 7}), "object.spec.cohort", "must be a string"),
    (_obj("Cohort", {"parent": ["root"]}), "object.spec.parent", "must be a string"),
    (_obj("ClusterQueue", {"flavorFungibility": {"whenCanBorrow": "Sometimes"}}),
     "object.spec.flavorFungibility.whenCanBorrow", "unsupported value 'Sometimes': must be one of MayStopSearch, TryNextFlavor"),
    (_obj("Node"), "object.kind", f"unknown kind 'Node' for apiVersion '{V1}'"),
])
def test_v1beta1_rejections_name_the_field_as_written(obj: dict, path: str, problem: str) -> None:
    with pytest.raises(EventError) as ei:
        parse_event(_applied(obj))
    assert (ei.value.path, ei.value.problem) == (path, problem)


def test_v1beta1_event_decodes_like_v1beta2_and_keeps_its_own_canonical_bytes() -> None:
    old = _applied(_obj("ClusterQueue", {"cohort": "org", "flavorFungibility": {"whenCanBorrow": "Borrow"}}))
    new = _applied(_obj("ClusterQueue", {"cohortName": "org", "flavorFungibility": {"whenCanBorrow": "MayStopSearch"}}, V2))
    assert parse_event(old).obj == parse_event(new).obj
    assert parse_event(old).obj.flavor_fungibility == FlavorFungibility(FlavorFungibilityPolicy.MAY_STOP_SEARCH)
    assert parse_event(old).canonical == orjson.dumps(old, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("v", [None, 1])
def test_envelope_version_accepted(v: int | None) -> None:
    raw = {"id": "a", "time": 0, "type": "Tick"} if v is None else {"id": "a", "time": 0, "type": "Tick", "v": v}
    check_envelope_version(raw)
    assert parse_event(raw).type == "Tick"
    assert ENVELOPE_VERSION == 1


@pytest.mark.parametrize(("v", "shown"), [(2, "2"), (0, "0"), (True, "True"), ("1", "'1'"), (1.0, "1.0"), ([1], "[1]")])
def test_unknown_envelope_version_rejected(v: object, shown: str) -> None:
    with pytest.raises(EventError) as ei:
        parse_event({"id": "a", "time": 0, "type": "Tick", "v": v})
    assert (ei.value.path, ei.value.problem, ei.value.event_id) == ("v", f"unsupported version {shown}: must be 1", "a")
