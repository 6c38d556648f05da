"""Build hook: compile the engine's hot path with mypyc.

The modules below are plain, fully annotated Python; mypyc turns them into C extensions that run
the same code about twice as fast (benchmarks/kueue_scale.py).  Results are identical either way:
all state arithmetic is on Python ints.  Set ``QUOTALEDGER_PURE_PYTHON=1`` to skip compilation.
"""

import os

from setuptools import setup

COMPILED = [
    "statemodel/quota/protocol.py",
    "statemodel/quota/kueue.py",
    "statemodel/quota/kueue_fair_sharing.py",
    "statemodel/quota/koordinator.py",
    "statemodel/quota/koordinator_runtime.py",
    "statemodel/quota/unit_seam.py",
    "statemodel/quota/volcano.py",
    "statemodel/quota/volcano_deserved.py",
    "statemodel/hierarchy.py",
    "statemodel/workload.py",
    "statemodel/queues/cluster_queue.py",
    "statemodel/queues/afs.py",
    "statemodel/admission/flavorassigner.py",
    "statemodel/admission/cycle.py",
    "statemodel/preemption/candidate_index.py",
    "statemodel/preemption/candidates.py",
    "statemodel/preemption/classical.py",
    "statemodel/preemption/context.py",
    "statemodel/preemption/hierarchical.py",
    "statemodel/preemption/preemptor.py",
    "statemodel/preemption/fair_sharing.py",
    "statemodel/placement/node_order.py",
    "statemodel/placement/topology.py",
    "statemodel/placement/nodes.py",
    "statemodel/placement/nodesets.py",
    "statemodel/placement/stage.py",
    "statemodel/events/placement.py",
    "statemodel/cluster.py",
    "statemodel/decisions.py",
    "statemodel/engine.py",
    "statemodel/driver.py",
    "statemodel/snapshot.py",
    "statemodel/events/decode.py",
    "statemodel/events/names.py",
    "statemodel/events/fields.py",
    "statemodel/events/kueue.py",
    "statemodel/events/core.py",
    "statemodel/events/config.py",
    "statemodel/events/volcano.py",
    "statemodel/events/upcasters.py",
    "statemodel/decimal_scan.py",
    "statemodel/limits.py",
    "statemodel/quantity.py",
    "statemodel/timefmt.py",
]

ext_modules = []
if os.environ.get("QUOTALEDGER_PURE_PYTHON") != "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3")

setup(ext_modules=ext_modules)
