"""Size limits of the v1 event contract (docs/events.md "Limits"): what bounds the cost of one event.

Two kinds of bound live here:

* **Kubernetes and Kueue API limits**, enforced as validation because a real cluster's API server
  would never have stored a larger object: name lengths (``k8s.io/apimachinery``
  ``validation.IsDNS1123Subdomain`` / ``IsDNS1123Label``, ``IsQualifiedName``) and the CRD markers
  and webhook checks of Kueue ``apis/kueue/v1beta2`` (``clusterqueue_types.go``, ``workload_types.go``,
  ``pkg/webhooks/clusterqueue_webhook.go``).
* **Limits of this engine**, documented departures with no upstream counterpart: the size of one
  event, of one ``Batch``, of event ids, cluster names and quantity strings.

Together they make the cost of applying any single valid event bounded (docs/events.md "Limits").
Pure constants.
"""

from __future__ import annotations

from typing import Final

MAX_EVENT_BYTES: Final = 4 * 1024 * 1024
"""Largest event, in bytes of one NDJSON line or one Kafka message value (4 MiB): an object of the
Kubernetes API (at most 1.5 MiB in etcd) fits with room, and so does a ``Batch`` initial sync of a
few thousand objects."""

MAX_BATCH_EVENTS: Final = 10_000
"""Most inner events of one ``Batch``."""

MAX_ID_BYTES: Final = 253
"""Longest event ``id`` and ``cluster`` name, in UTF-8 bytes (the length of a Kubernetes name)."""

MAX_TEXT_BYTES: Final = 1024
"""Longest free-text field the engine keeps (a ``WorkloadEvicted`` ``reason``, a Workload ``uid``):
the ``maxLength`` of ``metav1.Condition.reason``."""

MAX_QUANTITY_CHARS: Final = 128
"""Longest quantity, weight, duration or timestamp string.  The largest accepted amount, ``2**63-1``,
has 19 digits; 128 characters leave room for any exact decimal spelling of a valid value while
keeping every number conversion far below Python's 4,300-digit ``int``/``str`` limit."""

DNS1123_SUBDOMAIN_MAX: Final = 253
"""``validation.DNS1123SubdomainMaxLength``: object names, Kueue references to them."""

DNS1123_LABEL_MAX: Final = 63
"""``validation.DNS1123LabelMaxLength``: namespaces, podSet names (Kueue ``PodSetReference``)."""

MAX_POD_SETS: Final = 18
"""Kueue ``WorkloadSpec.podSets`` and ``Admission.podSetAssignments`` ``MaxItems``."""

MAX_RESOURCE_GROUPS: Final = 16
"""Kueue ``ClusterQueueSpec.resourceGroups`` / ``CohortSpec.resourceGroups`` ``MaxItems``."""

MAX_COVERED_RESOURCES: Final = 64
"""Kueue ``ResourceGroup.coveredResources`` ``MaxItems``."""

MAX_FLAVORS: Final = 64
"""Kueue ``ResourceGroup.flavors`` ``MaxItems``."""

MAX_FLAVOR_TAINTS: Final = 8
"""Kueue ``ResourceFlavor.spec.nodeTaints`` and ``spec.tolerations`` ``MaxItems`` (each)."""

MAX_FLAVOR_RESOURCES: Final = 64
"""Kueue ``FlavorQuotas.resources`` ``MaxItems``."""

MAX_TOTAL_FLAVORS: Final = 256
"""Kueue ClusterQueue webhook ``validateTotalFlavors``: flavors over all resource groups."""

MAX_TOTAL_COVERED_RESOURCES: Final = 256
"""Kueue ClusterQueue webhook ``validateTotalCoveredResources``: covered resources over all groups."""

MAX_FLAVOR_RESOURCE_COMBINATIONS: Final = 512
"""Kueue ClusterQueue webhook ``validateFlavorResourceCombinations``: flavor-resources of one group."""

MAX_MESSAGE_STATUSES: Final = 64
"""Most flavor/resource reasons a pending workload's message keeps per podSet (the rest are counted,
``statemodel.admission.flavorassigner.NoFitMessage``): bounds the memory and state JSON of a waiting
workload whatever its ClusterQueue's size."""
