"""Validate OpenLineage events (dicts) against the JSON schemas in /work/shared/openlineage-spec/.

The run event is validated against ``OpenLineage.json#/$defs/RunEvent``; every facet whose schema
is in ``facets/`` is validated against it too (the core schema leaves facets open). Tests call
:func:`validate_or_skip`, which skips with a message when the spec folder is not there.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

def _spec_dir() -> Path:
    """``$OPENLINEAGE_SPEC_DIR``, else ``shared/openlineage-spec`` beside the checkout (as CI lays it out)."""
    try:
        from airflow_provider_lineage.lineage.validate import find_spec_dir

        found = find_spec_dir()
        if found is not None:
            return found
    except ImportError:
        pass
    checkout = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("OPENLINEAGE_SPEC_DIR") or checkout.parent / "shared" / "openlineage-spec")


SPEC_DIR = _spec_dir()


@lru_cache(maxsize=1)
def _schemas() -> tuple[Any, dict[str, tuple[str, dict[str, Any]]]]:
    from referencing import Registry, Resource

    core = json.loads((SPEC_DIR / "OpenLineage.json").read_text())
    resources = [(core["$id"], Resource.from_contents(core))]
    facets: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted((SPEC_DIR / "facets").glob("*.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
        for key in schema.get("properties", {}):
            facets[key] = (path.name, schema)
    return Registry().with_resources(resources), facets


def validate_event(event: dict[str, Any]) -> list[str]:
    """Return the names of the facet schemas used; raise ``jsonschema.ValidationError`` on a violation."""
    import jsonschema

    registry, facets = _schemas()
    core_id = json.loads((SPEC_DIR / "OpenLineage.json").read_text())["$id"]
    jsonschema.Draft202012Validator(
        {"$ref": f"{core_id}#/$defs/RunEvent"}, registry=registry, format_checker=jsonschema.FormatChecker()
    ).validate(event)
    used: list[str] = []
    groups = [event["run"].get("facets") or {}, event["job"].get("facets") or {}]
    for ds in [*(event.get("inputs") or []), *(event.get("outputs") or [])]:
        groups += [ds.get("facets") or {}, ds.get("inputFacets") or {}, ds.get("outputFacets") or {}]
    for group in groups:
        for key, value in group.items():
            if key not in facets:
                continue
            name, schema = facets[key]
            jsonschema.Draft202012Validator(schema, registry=registry).validate({key: value})
            used.append(name)
    return used


def validate_or_skip(events: list[dict[str, Any]]) -> list[str]:
    if not (SPEC_DIR / "OpenLineage.json").is_file():
        pytest.skip(f"OpenLineage spec not found at {SPEC_DIR}: set OPENLINEAGE_SPEC_DIR to validate events")
    used: list[str] = []
    for event in events:
        used += validate_event(event)
    return sorted(set(used))
