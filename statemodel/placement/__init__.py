"""Placement: the cluster's nodes (``nodes.NodeLedger``); NodeSets and gang fit build on it."""
