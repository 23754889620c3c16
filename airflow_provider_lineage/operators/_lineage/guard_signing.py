"""The estate tag map's signature: the scheduler signs what it publishes (Ed25519), the task verifies it.

:func:`sign_published` is the scheduler's (plugins/guard/estate.py), :func:`verify_published` the task's guard
(:mod:`.guard`, with ``[column_lineage] tag_map_public_key``); both are reached through :mod:`.guard` too.
"""
from __future__ import annotations

import json
from typing import Any

from airflow_provider_lineage import conf as settings
from airflow_provider_lineage.lineage import tags as tagging

#: Provider config section named in the messages (:mod:`...conf`).
SECTION = settings.SECTION


def _signed_bytes(value: dict[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in value.items() if k != "signature"}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def sign_published(value: dict[str, Any], private_pem: str) -> str:
    """The Ed25519 signature (base64) of a published tag map (the scheduler's private key, PEM)."""
    import base64

    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(private_pem.encode("utf-8"), password=None)
    return base64.b64encode(key.sign(_signed_bytes(value))).decode("ascii")  # type: ignore[call-arg,union-attr]


def verify_published(value: Any, public_pem: str) -> dict[str, Any]:
    """The published tag map, decoded, if the scheduler's key signed it; else :class:`..lineage.tags.TagsError`."""
    import base64

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    value = tagging.decoded_json(value, "the published estate tag map is not valid JSON ({error})")
    signature = value.get("signature") if isinstance(value, dict) else None
    if not isinstance(signature, str):
        raise tagging.TagsError(f"the published estate tag map carries no signature, and [{SECTION}] "
                                "tag_map_public_key says it must (a map not written by the scheduler)")
    try:
        key = load_pem_public_key(public_pem.encode("utf-8"))
        key.verify(base64.b64decode(signature, validate=True), _signed_bytes(value))  # type: ignore[call-arg,union-attr]
    except (InvalidSignature, ValueError, TypeError) as exc:
        raise tagging.TagsError(f"the published estate tag map's signature does not verify with [{SECTION}] "
                                f"tag_map_public_key ({type(exc).__name__}): not written by the scheduler") from None
    return value
