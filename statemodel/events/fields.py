"""Field validation shared by the parsers of every API group (``statemodel.events.kueue``, ``core``, ``config``).

Each helper reads one value of a decoded JSON object and either returns it in typed form or raises
:class:`~statemodel.errors.EventError` with the field's path (Kubernetes ``field.Path`` style:
``object.spec.resourceGroups[0].flavors[1].name``, ``object.spec.podSets[0].requests[nvidia.com/gpu]``).
Helpers ending in ``_rel`` raise with a path *relative* to the value they were given (``""``,
``".count"``, ``"[cpu]"``) and their callers re-raise with their own prefix through :func:`rebase`, so
the hot path (one Workload per event) builds no path strings unless something fails.

Pure: no I/O, clock, randomness or environment.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NoReturn

from statemodel.errors import EventError
from statemodel.events.names import label_value_problem, qualified_name_problem, subdomain_problem
from statemodel.quantity import parse_quantity

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
"""Bounds of a Kubernetes ``int32`` field."""


def positional_constructor(cls: type) -> Callable[..., Any]:
    """A constructor taking every field of a frozen, slotted dataclass positionally, in field order.

    Equivalent to ``cls(*args)`` for these plain-value classes (no ``__post_init__``, no converters), but
    about twice as fast: it sets the slots through their member descriptors instead of the frozen
    ``__init__``'s ``object.__setattr__`` calls.  Used for the per-event hot classes only.
    """
    fields = [f.name for f in dataclasses.fields(cls)]
    params = getattr(cls, "__dataclass_params__")
    if hasattr(cls, "__post_init__") or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} must be a frozen, slotted dataclass without __post_init__")
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for f in fields:
        ns[f"_set_{f}"] = cls.__dict__[f].__set__
    body = "".join(f"    _set_{f}(o, {f})\n" for f in fields)
    src = f"def make({', '.join(fields)}):\n    o = _new(_cls)\n{body}    return o\n"
    exec(src, ns)  # noqa: S102 - generated from dataclass field names only
    return ns["make"]


def fail(path: str, problem: str) -> NoReturn:
    """Reject the event: raise :class:`EventError` at ``path``."""
    raise EventError(path, problem)


def shown(v: Any) -> str:
    """``repr(v)`` for a problem text, cut after ``MAX_KEY_SHOWN`` characters: a rejected value can be
    megabytes long, its reason stays short."""
    text = repr(v)
    return text if len(text) <= MAX_KEY_SHOWN else text[:MAX_KEY_SHOWN] + "..."


def type_problem(v: Any, what: str) -> str:
    """``required`` for a missing value, else ``must be <what>``."""
    return "required" if v is None else f"must be {what}"


def as_obj(v: Any, path: str) -> dict:
    """``v`` as a JSON object (required)."""
    if isinstance(v, dict):
        return v
    fail(path, type_problem(v, "an object"))


def opt_obj(d: dict, key: str, prefix: str) -> dict | None:
    """``d[key]`` as an object; ``None`` when absent or null."""
    v = d.get(key)
    if v is None or isinstance(v, dict):
        return v
    fail(f"{prefix}.{key}", "must be an object")


def opt_list(d: dict, key: str, prefix: str) -> list | None:
    """``d[key]`` as a list; ``None`` when absent or null."""
    v = d.get(key)
    if v is None or isinstance(v, list):
        return v
    fail(f"{prefix}.{key}", "must be a list")


def req_str(d: dict, key: str, prefix: str) -> str:
    """``d[key]`` as a non-empty string (required)."""
    v = d.get(key)
    if isinstance(v, str) and v:
        return v
    fail(f"{prefix}.{key}", "must not be empty" if v == "" else type_problem(v, "a string"))


def req_name(d: dict, key: str, prefix: str) -> str:
    """``d[key]`` as a DNS-1123 subdomain (required): an object name or a Kueue reference to one."""
    v = req_str(d, key, prefix)
    problem = subdomain_problem(v)
    if problem is not None:
        fail(f"{prefix}.{key}", problem)
    return v


def opt_name(d: dict, key: str, prefix: str) -> str | None:
    """``d[key]`` as a DNS-1123 subdomain; ``None`` when absent, null or empty."""
    v = opt_str(d, key, prefix, None)
    if v is not None:
        problem = subdomain_problem(v)
        if problem is not None:
            fail(f"{prefix}.{key}", problem)
    return v


def opt_str(d: dict, key: str, prefix: str, default: Any) -> Any:
    """``d[key]`` as a string; ``default`` when absent, null or empty."""
    v = d.get(key)
    if v is None or v == "":
        return default
    if isinstance(v, str):
        return v
    fail(f"{prefix}.{key}", "must be a string")


def choice(d: dict, key: str, prefix: str, allowed: dict[str, Any], default: Any) -> Any:
    """``d[key]`` as the enum member ``allowed[value]``; ``default`` when absent or null.

    ``allowed`` maps each accepted string to its member, in the order the error message lists them.
    """
    v = d.get(key)
    if v is None:
        return default
    if isinstance(v, str):
        member = allowed.get(v)
        if member is not None:
            return member
        fail(f"{prefix}.{key}", f"unsupported value {shown(v)}: must be one of {', '.join(allowed)}")
    fail(f"{prefix}.{key}", "must be a string")


def members(*values: Any) -> dict[str, Any]:
    """The ``allowed`` table of :func:`choice` for these enum members, in the order given."""
    return {str(m): m for m in values}


def int_in(v: Any, path: str, lo: int, hi: int) -> int:
    """``v`` as a JSON integer in ``[lo, hi]`` (``bool`` rejected)."""
    if type(v) is not int:
        fail(path, type_problem(v, "an integer"))
    if v < lo:
        fail(path, f"must be greater than or equal to {lo}, got {v}")
    if v > hi:
        fail(path, f"must be less than or equal to {hi}, got {v}")
    return v


def opt_bool(d: dict, key: str, prefix: str, default: bool) -> bool:
    """``d[key]`` as a JSON boolean; ``default`` when absent or null."""
    v = d.get(key)
    if v is None:
        return default
    if type(v) is bool:
        return v
    fail(f"{prefix}.{key}", "must be a boolean")


def qmap(v: Any, path: str) -> dict[str, int]:
    """A resource → quantity map in base units (zeros kept); ``None`` → ``{}``."""
    try:
        return qmap_rel(v)
    except EventError as e:
        raise rebase(path, e) from None


def smap(v: Any, path: str, key_rule: Callable[[str], str | None] = qualified_name_problem,
         value_rule: Callable[[str], str | None] = label_value_problem) -> tuple[tuple[str, str], ...]:
    """A string → string map as sorted pairs.  ``None`` → ``()``.

    Keys must pass ``key_rule``, values ``value_rule`` (default: Kubernetes label keys and values,
    ``statemodel.events.names``).
    """
    if v is None:
        return ()
    if not isinstance(v, dict):
        fail(path, "must be an object (string → string)")
    for k, s in v.items():
        problem = key_rule(k)
        if problem is not None:
            fail(f"{path}[{k[:MAX_KEY_SHOWN]}]", f"key {problem}")
        if not isinstance(s, str):
            fail(f"{path}[{k}]", "must be a string")
        problem = value_rule(s)
        if problem is not None:
            fail(f"{path}[{k}]", problem)
    return tuple(sorted(v.items()))


def flavor_map(v: Any, path: str) -> tuple[tuple[str, str], ...]:
    """A resource name → ResourceFlavor name map (Kueue ``PodSetAssignment.flavors``) as sorted pairs."""
    return smap(v, path, qualified_name_problem, subdomain_problem)


MAX_KEY_SHOWN = 253
"""A map key longer than any valid one is cut to this many characters in an error path."""


_AMOUNTS: dict[tuple[str, str], int] = {}
"""Memo of ``(resource, quantity string) → amount`` for valid quantities (bounded; cleared when full)."""
_AMOUNTS_MAX = 65536


def rebase(prefix: str, e: EventError) -> EventError:
    """``e`` with ``prefix`` put in front of its (relative) path."""
    return EventError(prefix + e.path, e.problem)


def qmap_rel(v: Any) -> dict[str, int]:
    """A resource → quantity map in base units (zeros kept); ``None`` → ``{}``.  Relative error paths."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise EventError("", "must be an object (resource → quantity)")
    out = {}
    cache = _AMOUNTS
    for res, q in v.items():
        if type(q) is str:
            amount = cache.get((res, q))
            if amount is not None:
                out[res] = amount
                continue
        if not res:
            raise EventError("", "resource name must not be empty")
        problem = qualified_name_problem(res)
        if problem is not None:
            raise EventError(f"[{res[:MAX_KEY_SHOWN]}]", f"resource name {problem}")
        try:
            amount = parse_quantity(res, q, "")
        except EventError as e:
            raise EventError(f"[{res}]", e.problem) from None
        if type(q) is str:
            if len(cache) >= _AMOUNTS_MAX:
                cache.clear()
            cache[(res, q)] = amount
        out[res] = amount
    return out

