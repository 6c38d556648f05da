"""Quota models: the arithmetic a cluster's quota tree runs.

``protocol`` is the seam (``QuotaModel`` and its records), ``kueue`` the KEP-79 cohort model, and
``registry`` maps ``EngineConfig.spec.quotaModel`` names to models.  The hierarchy, the admission
cycle, flavor assignment and the views reach quota numbers only through ``QuotaModel``.
"""
