"""The tree of Cohorts and ClusterQueues: edges, implicit cohorts and cycles (KEP-79).

Mirrors Kueue's ``pkg/cache/hierarchy/`` (reference/kueue.md §1.2): nothing here knows about
quota numbers.  The cluster's quota model (``statemodel.quota.protocol.QuotaModel``) is told every
spec change and which edges are linked, and does the arithmetic.

* A ClusterQueue's ``cohortName`` or a Cohort's ``parentName`` naming no Cohort object creates an
  **implicit** cohort: no quota, no parent (so always a root), removed once it has no children.
* Deleting an explicit Cohort that still has children leaves an implicit root of the same name
  holding those children; the old parent edge is dropped.
* A **cycle** of ``parentName`` edges makes every ClusterQueue whose cohort chain reaches it
  inactive.  For the arithmetic, an edge is linked unless it would close a loop; edges left
  unlinked are retried after every edge change, so fixing the cycle relinks the tree.
"""

from __future__ import annotations

from statemodel.objects import ClusterQueue, Cohort, ResourceGroup
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, QuotaModel


class CohortEntry:
    """A Cohort in the tree: ``spec`` is ``None`` for an implicit cohort; ``linked``: whether the
    edge to ``parent_name`` is linked in the quota model (it is not while it would close a loop)."""

    __slots__ = ("name", "spec", "parent_name", "linked", "linked_children", "child_cohorts", "child_cluster_queues")

    def __init__(self, name: str) -> None:
        self.name = name
        self.linked = False
        self.linked_children = 0
        self.spec: Cohort | None = None
        self.parent_name: str | None = None
        self.child_cohorts: set[str] = set()
        self.child_cluster_queues: set[str] = set()

    @property
    def explicit(self) -> bool:
        """Whether a Cohort object exists for this name."""
        return self.spec is not None


class ClusterQueueEntry:
    """A ClusterQueue in the tree; ``spec`` is ``None`` once deleted while still holding quota."""

    __slots__ = ("name", "spec", "cohort_name", "rg_by_resource", "covers_pods")

    def __init__(self, name: str) -> None:
        self.name = name
        self.spec: ClusterQueue | None = None
        self.cohort_name: str | None = None
        self.rg_by_resource: dict[str, ResourceGroup] = {}
        self.covers_pods = False


class Hierarchy:
    """Cohorts and ClusterQueues of one cluster, by name; ``model`` receives specs and linked edges.

    Every mutation is O(depth × flavor-resources) in the model except those that touch a cycle.
    """

    def __init__(self, model: QuotaModel) -> None:
        self.model = model
        self.cohorts: dict[str, CohortEntry] = {}
        self.cluster_queues: dict[str, ClusterQueueEntry] = {}
        self._unlinked: set[str] = set()

    def attach(self, model: QuotaModel) -> None:
        """Hand the tree to a fresh ``model``: every spec (in creation order), then every linked edge.
        Usage is the caller's to charge."""
        self.model = model
        for name, cohort in self.cohorts.items():
            if cohort.spec is not None:
                model.set_spec(COHORT, name, cohort.spec.resource_groups)
        for name, cq in self.cluster_queues.items():
            model.set_spec(CLUSTER_QUEUE, name, cq.spec.resource_groups if cq.spec is not None else ())
        for name, cohort in self.cohorts.items():
            if cohort.linked and cohort.parent_name is not None:
                model.link(COHORT, name, cohort.parent_name)
        for name, cq in self.cluster_queues.items():
            if cq.cohort_name is not None:
                model.link(CLUSTER_QUEUE, name, cq.cohort_name)

    def fair_weight(self, kind: str, name: str) -> int:
        """``spec.fairSharing.weight`` of node ``(kind, name)`` in thousandths: 1000 (Kueue's default
        1) for an implicit cohort or a deleted ClusterQueue still holding quota.  (Kueue leaves an
        implicit cohort's weight at 0, which only matters for a node with a parent, and an implicit
        cohort never has one.)"""
        if kind == CLUSTER_QUEUE:
            cq = self.cluster_queues.get(name)
            return cq.spec.fair_weight_milli if cq is not None and cq.spec is not None else 1000
        cohort = self.cohorts.get(name)
        return cohort.spec.fair_weight_milli if cohort is not None and cohort.spec is not None else 1000

    # -- cohorts ---------------------------------------------------------------------------

    def _cohort(self, name: str) -> CohortEntry:
        entry = self.cohorts.get(name)
        if entry is None:
            entry = self.cohorts[name] = CohortEntry(name)
        return entry

    def _collect_if_unused(self, name: str | None) -> None:
        """Drop an implicit cohort that has no children left (Kueue ``cleanupCohort``)."""
        if name is None:
            return
        entry = self.cohorts.get(name)
        if entry is not None and not entry.explicit and not entry.child_cohorts and not entry.child_cluster_queues:
            self._set_cohort_parent(entry, name, None)
            del self.cohorts[name]
            self.model.remove(COHORT, name)

    def apply_cohort(self, spec: Cohort) -> None:
        """Create or replace an explicit Cohort (quota and parent edge)."""
        entry = self._cohort(spec.name)
        entry.spec = spec
        self.model.set_spec(COHORT, spec.name, spec.resource_groups)
        self._set_cohort_parent(entry, spec.name, spec.parent)

    def delete_cohort(self, name: str) -> bool:
        """Delete an explicit Cohort; its children stay under an implicit root of the same name.

        Returns ``False`` when no explicit Cohort of that name exists.
        """
        entry = self.cohorts.get(name)
        if entry is None or not entry.explicit:
            return False
        entry.spec = None
        self.model.set_spec(COHORT, name, ())
        self._set_cohort_parent(entry, name, None)
        self._collect_if_unused(name)
        return True

    def _set_cohort_parent(self, entry: CohortEntry, name: str, parent_name: str | None) -> None:
        old = entry.parent_name
        if old == parent_name:
            return
        if entry.linked:
            self.model.unlink(COHORT, name)
            entry.linked = False
            assert old is not None
            self.cohorts[old].linked_children -= 1
        self._unlinked.discard(name)
        entry.parent_name = parent_name
        if old is not None:
            self.cohorts[old].child_cohorts.discard(name)
            self._collect_if_unused(old)
        if parent_name is not None:
            self._cohort(parent_name).child_cohorts.add(name)
            self._unlinked.add(name)
        self._relink()

    def _relink(self) -> None:
        """Link every pending cohort edge that no longer closes a loop, in name order.

        O(depth) per pending edge, O(1) for a cohort without linked child cohorts (a new level at the
        bottom of a chain), so building a deep chain in any order is linear in its length.
        """
        changed = True
        while changed and self._unlinked:
            changed = False
            for name in sorted(self._unlinked):
                entry = self.cohorts[name]
                parent = entry.parent_name
                assert parent is not None
                if not self._closes_loop(entry, parent):
                    self.model.link(COHORT, name, parent)
                    entry.linked = True
                    self.cohorts[parent].linked_children += 1
                    self._unlinked.discard(name)
                    changed = True

    def _closes_loop(self, entry: CohortEntry, parent: str) -> bool:
        """Whether linking ``entry`` under ``parent`` would close a loop: ``entry`` is ``parent`` or one of
        its linked ancestors.  Nothing can hang below a cohort with no linked child cohorts."""
        if entry.name == parent:
            return True
        if not entry.linked_children:
            return False
        node = self.cohorts[parent]
        while node.linked:
            assert node.parent_name is not None
            if node.parent_name == entry.name:
                return True
            node = self.cohorts[node.parent_name]
        return False

    def has_cycle(self, cohort_name: str | None) -> bool:
        """Whether the parent chain starting at ``cohort_name`` reaches a cycle (Kueue ``HasCycle``)."""
        seen: set[str] = set()
        name = cohort_name
        while name is not None:
            if name in seen:
                return True
            seen.add(name)
            entry = self.cohorts.get(name)
            if entry is None:
                return False
            name = entry.parent_name
        return False

    def cycle_status(self) -> dict[str, bool]:
        """``has_cycle`` of every cohort (name → whether its parent chain reaches a cycle), in O(cohorts)
        in all: each chain is walked until a cohort already decided."""
        status: dict[str, bool] = {}
        for start in self.cohorts:
            path: list[str] = []
            on_path: set[str] = set()
            name: str | None = start
            verdict = False
            while name is not None:
                known = status.get(name)
                if known is not None:
                    verdict = known
                    break
                if name in on_path:
                    verdict = True
                    break
                entry = self.cohorts.get(name)
                if entry is None:
                    break
                path.append(name)
                on_path.add(name)
                name = entry.parent_name
            for n in path:
                status[n] = verdict
        return status

    # -- cluster queues --------------------------------------------------------------------

    def apply_cluster_queue(self, spec: ClusterQueue) -> ClusterQueueEntry:
        """Create or replace a ClusterQueue (quota and cohort edge)."""
        entry = self.cluster_queues.get(spec.name)
        if entry is None:
            entry = self.cluster_queues[spec.name] = ClusterQueueEntry(spec.name)
        entry.spec = spec
        entry.rg_by_resource = {res: group for group in spec.resource_groups for res in group.covered_resources}
        entry.covers_pods = "pods" in entry.rg_by_resource
        self.model.set_spec(CLUSTER_QUEUE, spec.name, spec.resource_groups)
        self._set_cluster_queue_cohort(entry, spec.cohort)
        return entry

    def _set_cluster_queue_cohort(self, entry: ClusterQueueEntry, cohort_name: str | None) -> None:
        old = entry.cohort_name
        if old == cohort_name:
            return
        if old is not None:
            self.model.unlink(CLUSTER_QUEUE, entry.name)
        entry.cohort_name = cohort_name
        if old is not None:
            self.cohorts[old].child_cluster_queues.discard(entry.name)
            self._collect_if_unused(old)
        if cohort_name is not None:
            self._cohort(cohort_name).child_cluster_queues.add(entry.name)
            self.model.link(CLUSTER_QUEUE, entry.name, cohort_name)

    def delete_cluster_queue(self, name: str) -> bool:
        """Mark a ClusterQueue deleted; it leaves the tree once it holds no usage (see ``collect_cluster_queue``)."""
        entry = self.cluster_queues.get(name)
        if entry is None or entry.spec is None:
            return False
        entry.spec = None
        self.collect_cluster_queue(name)
        return True

    def collect_cluster_queue(self, name: str) -> None:
        """Remove a deleted ClusterQueue whose usage has drained to zero (Kueue's finalizer behaviour)."""
        entry = self.cluster_queues.get(name)
        if entry is None or entry.spec is not None or self.model.in_use(name):
            return
        self.model.set_spec(CLUSTER_QUEUE, name, ())
        self._set_cluster_queue_cohort(entry, None)
        del self.cluster_queues[name]
        self.model.remove(CLUSTER_QUEUE, name)
