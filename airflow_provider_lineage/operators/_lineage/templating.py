"""Whether an operator argument is still a template at ``__init__`` (checked after rendering, at task start)."""
from __future__ import annotations

from typing import Any

#: What starts a Jinja expression or statement (``{# ... #}`` alone renders to nothing: not a value to wait for).
_MARKERS = ("{{", "{%")


def is_template(value: Any) -> bool:
    """``True`` when ``value`` is known only after Airflow renders or resolves it: a string with a Jinja expression
    or statement, a list/tuple holding one, or an ``XComArg`` (any Airflow ``ResolveMixin``)."""
    if isinstance(value, str):
        return any(marker in value for marker in _MARKERS)
    if isinstance(value, (list, tuple)):
        return any(is_template(v) for v in value)
    try:
        from airflow.sdk.definitions._internal.mixins import ResolveMixin
    except ImportError:  # an Airflow without the task SDK's mixin: nothing else resolves at run time
        return False
    return isinstance(value, ResolveMixin)
