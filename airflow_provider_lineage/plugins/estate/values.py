"""An XCom column value as plain JSON, whatever XCom backend wrote it.

Airflow's default backend keeps the JSON in the ``xcom.value`` column. common-io's
``XComObjectStorageBackend`` keeps values over its threshold in object storage and a reference (the
object's URL) in the column. :func:`read` parses the column with ``json.loads``; when that gives a
string and the deployment's XCom backend is ``XComObjectStorageBackend`` (or a subclass), the string
is resolved with the backend's own ``_get_full_path`` (which refuses a URL outside its configured
``xcom_objectstorage_path``) and the object is read (decompressed by its suffix) and parsed with
``json.loads``. Never unpickled, never through Airflow's XCom deserialiser (which can build classes).
"""
from __future__ import annotations

import json
from typing import Any

#: Bytes read from one stored object at most (a lineage record is bounded at 512 KiB of JSON).
MAX_OBJECT_BYTES = 64 * 1024 * 1024


class UnreadableValue(ValueError):
    """The XCom value could not be read as JSON (the message says why)."""


def _json(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def object_storage_backend() -> Any:
    """The configured XCom backend class if it is ``XComObjectStorageBackend`` (or a subclass), else None."""
    from airflow.configuration import conf

    name = conf.get("core", "xcom_backend", fallback="") or ""
    if "XComObjectStorageBackend" not in name and "common.io" not in name:
        return None
    try:
        import importlib

        from airflow.providers.common.io.xcom.backend import XComObjectStorageBackend

        module, _, attr = name.strip().rpartition(".")
        backend = getattr(importlib.import_module(module), attr)
    except Exception:  # noqa: BLE001 - a backend that does not import is "not object storage"
        return None
    return backend if isinstance(backend, type) and issubclass(backend, XComObjectStorageBackend) else None


def read_object(reference: str, backend: Any) -> Any:
    """The JSON of the object ``reference`` points to, resolved by ``backend._get_full_path``."""
    try:
        path = backend._get_full_path(reference)
    except (TypeError, ValueError) as exc:
        raise UnreadableValue(f"not an object storage reference of the XCom backend: {exc}") from None
    try:
        with path.open(mode="rb", compression="infer") as f:
            data = f.read(MAX_OBJECT_BYTES + 1)
    except Exception as exc:  # noqa: BLE001 - storage errors become a reason, never a crash
        raise UnreadableValue(f"the XCom object {reference} could not be read: {type(exc).__name__}: {exc}") from None
    if len(data) > MAX_OBJECT_BYTES:
        raise UnreadableValue(f"the XCom object {reference} is over {MAX_OBJECT_BYTES} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise UnreadableValue(f"the XCom object {reference} is not JSON: {exc}") from None


def read(raw: Any, backend: Any = ...) -> Any:
    """``raw`` (an ``xcom.value``) as plain JSON, following an object storage reference if any.

    :param raw: the column value (JSON text, bytes, or what the JSON column type already decoded).
    :param backend: the object storage backend class, ``None`` for none; default: the configured one.
    :raises UnreadableValue: a reference that cannot be read (the message says why).
    """
    value = _json(raw)
    if isinstance(value, str):
        value = _json(value)  # a JSON string inside the JSON column (BaseXCom.serialize_value of a str)
    if isinstance(value, str) and "://" in value:
        if backend is ...:
            backend = object_storage_backend()
        if backend is not None:
            return read_object(value, backend)
    if isinstance(value, str) and (value is raw or isinstance(raw, (bytes, bytearray))):
        # neither JSON nor a reference the backend resolves (a pickle, a custom backend's encoding):
        # never decoded any other way
        raise UnreadableValue("the XCom value is neither JSON nor an object storage reference")
    return value
