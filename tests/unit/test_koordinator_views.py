"""``explain`` of a Koordinator pod and the ``state`` tree view of elastic quotas, worked by hand on
the design doc's hierarchical example (quotatree2-4): ParentB (min 80, max 100) over B-1 (min 20,
max 40) and B-2 (min 40, max 70), all asking 100 GPUs on a 100-GPU cluster beside ParentA (min 20,
two leaves of 10 asking 100): the root gives A 20 and B 80; B-1 and B-2 get their mins and share the
20 left by 40:70 -> 7.27 / 12.73: 7 / 13 -> runtimes 27 and 53."""

from __future__ import annotations

from rich.console import Console

from quotaledger.views.explain import print_explanation
from quotaledger.views.state_tree import print_state_tree
from statemodel.explain import explain
from tests.scenario.koordinator.kbuilder import KoordScenario

GPU = "nvidia.com/gpu"


def _tree() -> KoordScenario:
    s = KoordScenario(capacity={GPU: 100})
    s.quota("pa", min={GPU: 20}, max={GPU: 100}, is_parent=True)
    s.quota("pb", min={GPU: 80}, max={GPU: 100}, is_parent=True)
    s.quota("a1", min={GPU: 10}, max={GPU: 10}, parent="pa")
    s.quota("a2", min={GPU: 10}, max={GPU: 10}, parent="pa")
    s.quota("b1", min={GPU: 20}, max={GPU: 40}, parent="pb")
    s.quota("b2", min={GPU: 40}, max={GPU: 70}, parent="pb")
    for q in ("a1", "a2", "b1", "b2"):
        s.pod(f"ns/{q}", quota=q, gpu=100)
    s.run()
    return s


def test_explain_a_pending_pod_level_by_level() -> None:
    s = _tree()
    out = explain(s.engine.clusters["default"], "ns/b1")
    assert (out["status"], out["quota"], out["reason"]) == ("Pending", "b1", "Unschedulable")
    # its last attempt was before b2's pod came (runtime 40 then); PreFilter now sees 27
    assert "runtime: map[nvidia.com/gpu:40]" in out["message"]
    assert out["preFilter"] == ("Insufficient quotas, quotaName: b1, runtime: map[nvidia.com/gpu:27], used: map[], "
                                "pod's request: map[nvidia.com/gpu:100], exceedDimensions: [nvidia.com/gpu]")
    assert out["shortfalls"] == [{"reason": "WaitingForQuota", "resource": GPU, "quota": "b1", "needed": 100,
                                  "available": 27, "shortBy": 73}]
    assert [level["quota"] for level in out["levels"]] == ["b1", "pb", "koordinator-root-quota"]
    b1, pb, root = (level["resources"][GPU] for level in out["levels"])
    assert b1 == {"parentTotal": 80, "min": 20, "autoScaleMin": 20, "guaranteed": 0, "max": 40, "sharedWeight": 40,
                  "request": 100, "limitedRequest": 40, "role": "borrower", "used": 0, "runtime": 27}
    assert (pb["parentTotal"], pb["limitedRequest"], pb["role"], pb["runtime"]) == (100, 100, "borrower", 80)
    assert root["runtime"] == 100
    console = Console(record=True, width=160)
    print_explanation(console, out)
    text = console.export_text()
    assert "ns/b1  Pending  quota b1" in text and "borrower" in text and "73" in text


def test_state_tree_draws_the_elastic_quotas() -> None:
    s = _tree()
    console = Console(record=True, width=160)
    print_state_tree(console, s.engine.state())
    lines = console.export_text().splitlines()
    row = next(line for line in lines if "b2" in line)
    assert row.split()[-6:] == ["40", "70", "100", "0", "53", "1"]
    assert any(line.strip().startswith("koordinator-root-quota") for line in lines)
    assert any("└─ pb" in line for line in lines)
