"""Simulation from real traces: trace importers, quota-tree generators, Kueue manifests, the closed-loop simulator."""
