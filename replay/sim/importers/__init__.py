"""Trace importers: the Alibaba DLRM (``dlrm``) and openb (``openb``) traces, and generic CSV files
read through a YAML mapping (``mapping``).  Each returns a ``jobs.ImportResult``."""
