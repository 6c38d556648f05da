"""Names as Kubernetes validates them, and the printable-text rule for ids and free text.

Grammar and lengths follow ``k8s.io/apimachinery/pkg/util/validation``:

* ``IsDNS1123Subdomain`` (at most 253 characters, lowercase alphanumerics, ``-`` and ``.``, starting and
  ending alphanumeric): object names (Kubernetes validates every custom resource's and every Node's
  ``metadata.name`` so) and Kueue's references to them (``ClusterQueueReference``, ``CohortReference``,
  ``ResourceFlavorReference``, ``LocalQueueName``: same pattern and ``MaxLength`` in the CRDs);
* ``IsDNS1123Label`` (at most 63, no ``.``): namespaces and Kueue ``PodSetReference``;
* ``IsQualifiedName`` (``[prefix/]name``, prefix a subdomain, name at most 63 of
  ``[A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9]``): resource names, label and taint keys;
* ``IsValidLabelValue`` (at most 63, empty allowed): label and taint values.

Each ``*_problem`` function returns ``None`` for a valid value, else the problem in words (the caller
raises with the field's path).  Valid values are memoized (bounded), as names repeat across events.
Pure.
"""

from __future__ import annotations

import re

from statemodel.limits import DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, MAX_ID_BYTES

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*", re.ASCII).fullmatch
_DNS_LABEL = re.compile(_LABEL, re.ASCII).fullmatch
_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?", re.ASCII).fullmatch
QUALIFIED_NAME_MAX = 63
"""``validation.qualifiedNameMaxLength``: the name part of a qualified name, and a label value."""

_VALID_MAX = 16384
"""Each memo below holds at most this many values already found valid (cleared when full)."""
_SUBDOMAINS: dict[str, None] = {}
_LABELS: dict[str, None] = {}
_QUALIFIED: dict[str, None] = {}
_LABEL_VALUES: dict[str, None] = {}


def _remember(memo: dict[str, None], value: str) -> None:
    if len(memo) >= _VALID_MAX:
        memo.clear()
    memo[value] = None


def _subdomain(value: str) -> str | None:
    if not value:
        return "must not be empty"
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters, got {len(value)}"
    if _SUBDOMAIN(value) is None:
        return (f"invalid name {_shown(value)}: a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")
    return None


def subdomain_problem(value: str) -> str | None:
    """``None`` if ``value`` is a DNS-1123 subdomain (Kubernetes object names), else the problem."""
    if value in _SUBDOMAINS:
        return None
    problem = _subdomain(value)
    if problem is None:
        _remember(_SUBDOMAINS, value)
    return problem


def label_problem(value: str) -> str | None:
    """``None`` if ``value`` is a DNS-1123 label (namespaces, podSet names), else the problem."""
    if value in _LABELS:
        return None
    if not value:
        return "must not be empty"
    if len(value) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters, got {len(value)}"
    if _DNS_LABEL(value) is None:
        return (f"invalid name {_shown(value)}: a lowercase RFC 1123 label must consist of lower case "
                "alphanumeric characters or '-', and must start and end with an alphanumeric character")
    _remember(_LABELS, value)
    return None


def qualified_name_problem(value: str) -> str | None:
    """``None`` if ``value`` is a Kubernetes qualified name (resource names, label keys), else the problem."""
    if value in _QUALIFIED:
        return None
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix:
            return f"invalid name {_shown(value)}: prefix part must be non-empty"
        problem = _subdomain(prefix)
        if problem is not None:
            return f"prefix part {problem}"
    if not name:
        return f"invalid name {_shown(value)}: name part must be non-empty"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"name part must be no more than {QUALIFIED_NAME_MAX} characters, got {len(name)}"
    if _QUALIFIED_NAME(name) is None:
        return (f"invalid name {_shown(value)}: name part must consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character")
    _remember(_QUALIFIED, value)
    return None


def label_value_problem(value: str) -> str | None:
    """``None`` if ``value`` is a valid label value (empty allowed), else the problem."""
    if not value or value in _LABEL_VALUES:
        return None
    if len(value) > QUALIFIED_NAME_MAX:
        return f"must be no more than {QUALIFIED_NAME_MAX} characters, got {len(value)}"
    if _QUALIFIED_NAME(value) is None:
        return (f"invalid label value {_shown(value)}: must consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character")
    _remember(_LABEL_VALUES, value)
    return None


ANNOTATIONS_MAX_BYTES = 262144
"""Kubernetes' cap on the total size of an object's annotations (``TotalAnnotationSizeLimitB``, 256 KiB)."""


def annotation_value_problem(value: str) -> str | None:
    """``None`` if ``value`` can be an annotation value: any text (NUL is rejected for the whole
    event) up to Kubernetes' 256 KiB annotation limit; else the problem."""
    if len(value) > ANNOTATIONS_MAX_BYTES:
        return f"must be no more than {ANNOTATIONS_MAX_BYTES} characters, got {len(value)}"
    return None


def text_problem(value: str, max_bytes: int) -> str | None:
    """``None`` if ``value`` is printable text of at most ``max_bytes`` UTF-8 bytes, else the problem.

    Printable as ``str.isprintable``: no control (NUL included), format (zero-width, bidirectional
    marks), surrogate or separator character other than the ASCII space.  Used for event ids,
    cluster names and free text, which Kubernetes does not constrain further.
    """
    if value.isascii():
        size = len(value)
    else:
        size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"must be no more than {max_bytes} bytes, got {size}"
    if not value.isprintable():
        return "must be printable: no control, format or separator characters"
    return None


def id_problem(value: str) -> str | None:
    """``None`` for a valid event ``id`` or ``cluster`` name (:func:`text_problem` with ``MAX_ID_BYTES``)."""
    if len(value) <= MAX_ID_BYTES and value.isascii() and value.isprintable():
        return None
    return text_problem(value, MAX_ID_BYTES)


def _shown(value: str) -> str:
    """``value`` quoted for a message; never longer than what a valid name could be."""
    return repr(value) if len(value) <= DNS1123_SUBDOMAIN_MAX else repr(value[:DNS1123_SUBDOMAIN_MAX]) + "..."
