"""The nodes of the Koordinator and Volcano scale benchmarks (``--nodes``).

``--nodes 0`` (default): the one Node whose cpu is the cluster total, with the EngineConfig's
``spec.placement.enable: false`` — quota-only admission, the decisions of the engine before the
pod-scheduling models placed pods.  ``--nodes N``: N Nodes sharing the same total (the first
``total % N`` one cpu more), placement on: every admitted pod is bound to one of them.
"""

from __future__ import annotations


def placement_spec(nodes: int) -> dict:
    """What the EngineConfig's ``spec`` gains: ``placement.enable: false`` without nodes, else nothing."""
    return {"placement": {"enable": False}} if nodes == 0 else {}


def node_objects(total_cpu: int, nodes: int) -> list[dict]:
    """The ``v1`` Nodes (``n0``, ``n1``, …) sharing ``total_cpu`` cores (one Node when ``nodes`` is 0)."""
    count = max(nodes, 1)
    base, extra = divmod(total_cpu, count)
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
             "status": {"allocatable": {"cpu": str(base + (1 if i < extra else 0))}}} for i in range(count)]
