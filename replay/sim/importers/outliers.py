"""Outlier warnings for an imported trace: jobs whose requests are implausible for it.

A corrupt row (one job asking for 100,000 GPUs) is a valid row, so it is imported — but it would
size the generated quota tree (``replay.sim.quota_tree``) by its demand.  Two rules flag it; each
yields a warning, never a rejection (the user decides):

* **larger than the largest node**: with a node list (``ImportResult.nodes``), a per-pod request
  above the largest ``status.allocatable`` of that resource on any node — no node could run one
  of its pods;
* **far above the trace's distribution**: a job's total request of a resource (pods × per pod)
  above ``MEDIAN_FACTOR`` × the median (nearest rank) of the non-zero job totals of that
  resource in the trace.
"""

from __future__ import annotations

from replay.sim.importers.jobs import ImportResult, quantity_string
from statemodel.errors import EventError
from statemodel.quantity import parse_quantity

__all__ = ["MEDIAN_FACTOR", "outlier_warnings"]

MEDIAN_FACTOR = 100
"""A job total above this many times the trace's median job total of a resource is flagged."""


def _largest_node(result: ImportResult) -> dict[str, int]:
    """Per resource, the largest allocatable of any node, base units (unreadable values skipped)."""
    largest: dict[str, int] = {}
    for node in result.nodes:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        for res, text in alloc.items():
            try:
                amount = parse_quantity(res, text, "allocatable")
            except EventError:
                continue
            largest[res] = max(largest.get(res, 0), amount)
    return largest


def outlier_warnings(result: ImportResult, limit: int = 10) -> list[str]:
    """Warnings (module docstring) for the jobs of ``result``, in trace order, at most ``limit``
    lines and one more saying how many were left out."""
    largest = _largest_node(result)
    totals: dict[str, list[int]] = {}
    for job in result.jobs:
        for res, amount in job.total().items():
            if amount:
                totals.setdefault(res, []).append(amount)
    medians = {res: sorted(v)[(len(v) + 1) // 2 - 1] for res, v in totals.items()}
    lines: list[str] = []
    for job in result.jobs:
        where = f"job {job.id} (line {job.line})" if job.line else f"job {job.id}"
        for res, per_pod in job.requests:
            if res in largest and per_pod > largest[res]:
                lines.append(f"warning: {where} asks {quantity_string(res, per_pod)} {res} per pod, more than the "
                             f"largest node has ({quantity_string(res, largest[res])})")
            total = per_pod * job.count
            if total > MEDIAN_FACTOR * medians[res]:
                lines.append(f"warning: {where} asks {quantity_string(res, total)} {res} in total, over "
                             f"{MEDIAN_FACTOR}x the trace's median job ({quantity_string(res, medians[res])}); "
                             "a corrupt row? the generated quota is sized by it")
    if len(lines) > limit:
        lines = lines[:limit] + [f"warning: … {len(lines) - limit} more outlier warnings"]
    return lines
