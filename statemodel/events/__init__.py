"""Events as values (docs/events.md): ``envelope`` (the :class:`Event`), ``decode`` (NDJSON line ->
event, dispatch by apiVersion/kind), one parser module per API group (``kueue``, ``core``,
``config``), ``upcasters`` (older versions upgraded before parsing) and ``fields`` (shared checks)."""
