"""Quota models: the arithmetic a cluster's quota tree runs (Kueue KEP-79 cohorts today)."""
