"""The commands of the ``quotaledger`` CLI, one module per group (``quotaledger.cli`` registers
them); each parses its options, calls ``replay`` / ``streams`` and renders with ``quotaledger.views``."""
