"""Projection tables of the SQL store: the current state of each cluster, per model, in SQL.

One module per model or concern builds its tables' rows from the engine's domain records (never
from the state JSON, so exact values stay exact): ``kueue`` (cohorts, cluster_queues,
local_queues, quotas), ``afs`` (fair_sharing), ``workloads``, ``nodes``, ``koordinator``
(elastic_quotas).  ``registry`` lists them
(a new model adds its module and one entry there) and builds all rows of a cluster
(``projection_rows``); ``writer.ProjectionWriter`` keeps the tables equal to a cluster's state,
deleting and inserting only the rows that changed.
"""

from replay.store.projections.registry import CLUSTER_TABLES, PROJECTIONS, REGISTRY, projection_rows
from replay.store.projections.workloads import WORKLOAD_COLUMNS, workload_row
from replay.store.projections.writer import ProjectionWriter

__all__ = ["CLUSTER_TABLES", "PROJECTIONS", "REGISTRY", "WORKLOAD_COLUMNS", "ProjectionWriter", "projection_rows",
           "workload_row"]
