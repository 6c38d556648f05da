"""The ``quotaledger`` command-line interface (thin: parses arguments, calls ``replay`` and ``statemodel``)."""
