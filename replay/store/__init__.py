"""The SQL store: schema use, archive rows, projections, restore and writers (used by replay and the live path)."""
