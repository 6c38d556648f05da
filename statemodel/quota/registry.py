"""Quota models by name: ``EngineConfig.spec.quotaModel`` → a factory of fresh ``QuotaModel``s.

``kueue`` (KEP-79 cohorts, ``statemodel.quota.kueue``) is the default and always present;
``koordinator`` (elastic quota, ``statemodel.quota.koordinator``) and ``volcano`` (queues and
PodGroups, ``statemodel.quota.volcano``) are shipped beside it.  A new
model registers itself with ``register`` (tests register theirs from the test package).  The
registry is read when a cluster is created or its ``EngineConfig`` names another model.
"""

from __future__ import annotations

from collections.abc import Callable

from statemodel.quota.koordinator import KoordinatorModel
from statemodel.quota.kueue import KueueModel
from statemodel.quota.protocol import QuotaModel
from statemodel.quota.volcano import VolcanoModel

DEFAULT = "kueue"
"""The model of a cluster whose ``EngineConfig`` names none (or that has no ``EngineConfig``)."""

_FACTORIES: dict[str, Callable[[], QuotaModel]] = {
    DEFAULT: KueueModel,
    # Koordinator's ElasticQuotas and Pods, and Volcano's queues and PodGroups: models that admit
    # their own units (``UnitModel``), with the answers of a model without ClusterQueue quota on the
    # Kueue side (``statemodel.quota.unit_seam``).
    "koordinator": KoordinatorModel,
    "volcano": VolcanoModel,
}

MODEL_OF_KIND = {"ClusterQueue": DEFAULT, "Cohort": DEFAULT, "ElasticQuota": "koordinator", "Queue": "volcano",
                 "PodGroup": "volcano"}
"""The model whose quota objects are of a kind (docs/events.md "A cluster runs one quota model"): a
cluster without an ``EngineConfig`` naming a model (and without Kueue quota objects yet) runs the
model of the first such object it sees; a cluster running one of these models rejects another's
objects.  Models not named here (test models) accept every kind."""


class UnknownQuotaModel(KeyError):
    """No model is registered under that name."""


def register(name: str, factory: Callable[[], QuotaModel]) -> None:
    """Make ``factory`` the model called ``name`` (replacing an earlier registration of ``name``).

    Raises:
        ValueError: ``name`` is the default model's name (it cannot be replaced).
    """
    if name == DEFAULT:
        raise ValueError(f"the {DEFAULT!r} quota model cannot be replaced")
    _FACTORIES[name] = factory


def names() -> list[str]:
    """Registered model names, sorted (an ``EngineConfig`` naming another one is rejected)."""
    return sorted(_FACTORIES)


def create(name: str) -> QuotaModel:
    """A fresh model of ``name``.

    Raises:
        UnknownQuotaModel: nothing is registered under ``name``.
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        raise UnknownQuotaModel(f"unknown quota model {name!r}; known: {', '.join(names())}")
    return factory()
