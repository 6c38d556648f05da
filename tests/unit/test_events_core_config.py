"""``statemodel.events.core`` (v1 Node) and ``statemodel.events.config`` (quotaledger.io EngineConfig),
called through their ``KINDS`` tables."""

from __future__ import annotations

from typing import Any

import pytest

from statemodel.errors import EventError
from statemodel.events import config, core
from statemodel.events.decode import parse_event
from statemodel.quota import registry
from statemodel.objects import (
    AdmissionFairSharingConfig,
    EngineConfig,
    FairSharingPreemptionStrategy,
    Node,
    Taint,
    TaintEffect,
    VolcanoArgs,
)

GI = 2**30


def _call(module: Any, kind: str, o: dict) -> Any:
    parser, namespaced = module.KINDS[module.API_VERSION][kind]
    assert not namespaced
    return parser({"apiVersion": module.API_VERSION, "kind": kind, **o}, o["metadata"]["name"], 0)


def node(**o: Any) -> Node:
    return _call(core, "Node", {"metadata": {"name": "n1"}, **o})


def engine_config(spec: dict | None) -> EngineConfig:
    return _call(config, "EngineConfig", {"metadata": {"name": "config"}, **({} if spec is None else {"spec": spec})})


def rejection(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(EventError) as ei:
        call(*args, **kwargs)
    return ei.value.path, ei.value.problem


# --------------------------------------------------------------------------- core: Node


def test_node_as_kubectl_prints_it() -> None:
    n = node(metadata={"name": "n1", "labels": {"zone": "a", "arch": "amd64"}},
             status={"allocatable": {"cpu": "7910m", "memory": "30Gi", "nvidia.com/gpu": "8", "pods": "110"}},
             spec={"unschedulable": True, "taints": [{"key": "gpu", "value": "a100", "effect": "NoSchedule"},
                                                      {"key": "spot", "effect": "PreferNoSchedule"}]})
    assert n == Node("n1", (("arch", "amd64"), ("zone", "a")),
                     (("cpu", 7910), ("memory", 30 * GI), ("nvidia.com/gpu", 8), ("pods", 110)), True,
                     (Taint("gpu", "a100", TaintEffect.NO_SCHEDULE), Taint("spot", "", TaintEffect.PREFER_NO_SCHEDULE)))
    assert type(n.taints[0].effect) is TaintEffect


def test_node_defaults() -> None:
    assert node() == Node("n1")


@pytest.mark.parametrize(("o", "path", "problem"), [
    ({"spec": {"taints": [{"key": "k"}]}}, "object.spec.taints[0].effect", "required"),
    ({"spec": {"taints": [{"key": "k", "effect": "NoRun"}]}}, "object.spec.taints[0].effect",
     "unsupported value 'NoRun': must be one of NoSchedule, PreferNoSchedule, NoExecute"),
    ({"spec": {"taints": [{"effect": "NoExecute"}]}}, "object.spec.taints[0].key", "required"),
    ({"spec": {"unschedulable": "yes"}}, "object.spec.unschedulable", "must be a boolean"),
    ({"status": {"allocatable": ["cpu"]}}, "object.status.allocatable", "must be an object (resource → quantity)"),
])
def test_node_rejections(o: dict, path: str, problem: str) -> None:
    assert rejection(node, **o) == (path, problem)


# --------------------------------------------------------------------------- config: EngineConfig


def test_default_engine_config_is_the_kueue_model() -> None:
    default = engine_config(None)
    assert default.quota_model == "kueue"
    # fair-sharing strategies default to Kueue's pair; everything else off
    assert default == EngineConfig(None, False, (FairSharingPreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
                                                 FairSharingPreemptionStrategy.LESS_THAN_INITIAL_SHARE))
    assert EngineConfig().quota_model == "kueue"


@pytest.mark.parametrize("spec", [{}, {"quotaModel": "kueue"}, {"quotaModel": None}])
def test_quota_model_kueue(spec: dict) -> None:
    assert engine_config(spec).quota_model == "kueue"


def test_quota_model_koordinator_is_shipped() -> None:
    assert engine_config({"quotaModel": "koordinator"}).quota_model == "koordinator"


def test_quota_model_volcano_is_shipped_with_its_plugin_arguments() -> None:
    cfg = engine_config({"quotaModel": "volcano", "volcano": {"plugin": "capacity", "enabledHierarchy": True,
                                                              "ancestorReclaimLevel": 2}})
    assert (cfg.quota_model, cfg.volcano) == ("volcano", VolcanoArgs("capacity", True, 2))
    assert engine_config({"quotaModel": "volcano"}).volcano is None


@pytest.mark.parametrize(("volcano", "path", "problem"), [
    ({"plugin": "drf"}, "object.spec.volcano.plugin", "unsupported value 'drf': must be one of proportion, capacity"),
    ({"enabledHierarchy": True}, "object.spec.volcano.plugin",
     "enabledHierarchy and ancestorReclaimLevel are arguments of the capacity plugin (proportion is flat upstream)"),
    ({"plugin": "capacity", "ancestorReclaimLevel": 1}, "object.spec.volcano.ancestorReclaimLevel",
     "needs enabledHierarchy: true"),
    ({"plugin": "capacity", "enabledHierarchy": True, "ancestorReclaimLevel": -1},
     "object.spec.volcano.ancestorReclaimLevel", "must be greater than or equal to 0, got -1"),
    ({"tiers": []}, "object.spec.volcano.tiers", "unknown field: must be one of plugin, enabledHierarchy, ancestorReclaimLevel"),
])
def test_volcano_arguments_rejected(volcano: dict, path: str, problem: str) -> None:
    assert rejection(engine_config, {"quotaModel": "volcano", "volcano": volcano}) == (path, problem)


@pytest.mark.parametrize(("value", "problem"), [
    ("Kueue", "unsupported value 'Kueue': must be one of {known}"),
    ("", "unsupported value '': must be one of {known}"),
    (1, "must be a string"),
    (["kueue"], "must be a string"),
])
def test_quota_model_the_engine_cannot_run_is_rejected(value: Any, problem: str) -> None:
    # the registered models: kueue, and those the test packages register (tests/scenario/hardlimit)
    known = ", ".join(registry.names())
    assert "kueue" in registry.names()
    assert rejection(engine_config, {"quotaModel": value}) == ("object.spec.quotaModel", problem.format(known=known))


def test_quota_model_rejection_is_an_event_rejection() -> None:
    raw = {"id": "cfg-1", "time": 0, "type": "Applied",
           "object": {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"},
                      "spec": {"quotaModel": "Volcano"}}}
    with pytest.raises(EventError) as ei:
        parse_event(raw)
    assert (ei.value.event_id, ei.value.path) == ("cfg-1", "object.spec.quotaModel")


def test_engine_config_sections() -> None:
    cfg = engine_config({"admissionFairSharing": {"usageHalfLifeTime": "10m", "resourceWeights": {"cpu": 0.5, "memory": 2}},
                         "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]}})
    assert cfg == EngineConfig(AdmissionFairSharingConfig(600_000, 300_000, (("cpu", 500), ("memory", 2000)), 0), True,
                               (FairSharingPreemptionStrategy.LESS_THAN_INITIAL_SHARE,), "kueue")
    assert type(cfg.preemption_strategies[0]) is FairSharingPreemptionStrategy


@pytest.mark.parametrize(("spec", "path", "problem"), [
    ({"fairSharing": {"preemptionStrategies": ["Fair"]}}, "object.spec.fairSharing.preemptionStrategies[0]",
     "unsupported value 'Fair': must be one of LessThanOrEqualToFinalShare, LessThanInitialShare"),
    ({"fairSharing": {"preemptionStrategies": [["LessThanInitialShare"]]}}, "object.spec.fairSharing.preemptionStrategies[0]",
     "must be a string"),
    ({"fairSharing": {"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]}},
     "object.spec.fairSharing.preemptionStrategies",
     "must be [LessThanOrEqualToFinalShare], [LessThanInitialShare] or [LessThanOrEqualToFinalShare, LessThanInitialShare]"),
    ({"admissionFairSharing": {"resourceWeights": {"cpu": 0.0005}}}, "object.spec.admissionFairSharing.resourceWeights[cpu]",
     "must be a multiple of 0.001, got 0.0005"),
])
def test_engine_config_rejections(spec: dict, path: str, problem: str) -> None:
    assert rejection(engine_config, spec) == (path, problem)
