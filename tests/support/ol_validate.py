"""Validate OpenLineage events against the JSON schemas of a local spec folder (tests, CI, debugging).

The folder holds ``OpenLineage.json`` and ``facets/*.json`` (as in the OpenLineage repository's
``spec/``). Schemas reference each other by ``$id`` URL; a ``referencing`` registry maps those URLs to
the local files, so nothing is fetched from the network. ``jsonschema`` is imported lazily (it is a
``dev`` extra, not a run-time dependency).

>>> problems = validate_event(event_dict, spec_dir)   # [] when valid
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Where the spec folder is looked for when no ``spec_dir`` is given (first existing wins): the
#: environment variable, then the copy vendored in this repository (``tests/support/openlineage_spec``,
#: Apache-2.0, see its NOTICE), then ``shared/openlineage-spec`` beside the checkout.
SPEC_DIR_ENV = "OPENLINEAGE_SPEC_DIR"
_CHECKOUT = Path(__file__).resolve().parents[2]
VENDORED_SPEC_DIR = Path(__file__).resolve().parent / "openlineage_spec"
_DEFAULT_DIRS = (str(VENDORED_SPEC_DIR), str(_CHECKOUT.parent / "shared" / "openlineage-spec"))


def find_spec_dir(spec_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The spec folder: ``spec_dir``, else ``$OPENLINEAGE_SPEC_DIR``, else a known location; ``None`` if absent."""
    candidates = [spec_dir] if spec_dir else [os.environ.get(SPEC_DIR_ENV), *_DEFAULT_DIRS]
    for c in candidates:
        if c and (Path(c) / "OpenLineage.json").is_file():
            return Path(c)
    return None


@lru_cache(maxsize=4)
def _load(spec_dir: str) -> tuple[Any, dict[str, Any], dict[str, str]]:
    from referencing import Registry, Resource

    base = Path(spec_dir)
    files = [base / "OpenLineage.json", *sorted((base / "facets").glob("*.json"))]
    resources = []
    facet_by_key: dict[str, str] = {}
    schemas: dict[str, Any] = {}
    for f in files:
        doc = json.loads(f.read_text(encoding="utf-8"))
        sid = doc["$id"]
        schemas[sid] = doc
        resources.append((sid, Resource.from_contents(doc)))
        if f.parent.name == "facets":
            for key in doc.get("properties", {}):
                facet_by_key[key] = sid
    registry = Registry().with_resources(resources)
    return registry, schemas, facet_by_key


def validate_event(event: Any, spec_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Schema problems of one event (a dict, a JSON string, or an ``openlineage.client`` event).

    Validates the event against ``OpenLineage.json`` and every facet whose key has a schema in
    ``facets/`` against that schema. Returns human-readable problems; an empty list means valid.
    Raises ``FileNotFoundError`` when the spec folder is missing (the message says how to point at it).
    """
    import jsonschema

    found = find_spec_dir(spec_dir)
    if found is None:
        raise FileNotFoundError(
            f"OpenLineage spec folder not found (looked at "
            f"{spec_dir or [os.environ.get(SPEC_DIR_ENV), *_DEFAULT_DIRS]}): "
            f"pass spec_dir= or set ${SPEC_DIR_ENV} to a folder holding OpenLineage.json and facets/*.json"
        )
    registry, schemas, facet_by_key = _load(str(found))
    doc = _as_dict(event)
    problems: list[str] = []
    root_id = next(sid for sid in schemas if sid.endswith("/OpenLineage.json"))
    cls = jsonschema.validators.validator_for(schemas[root_id])
    for err in cls(schemas[root_id], registry=registry).iter_errors(doc):
        problems.append(f"event: {'/'.join(map(str, err.absolute_path))}: {err.message}")
    for where, facets in _facet_dicts(doc):
        for key, value in facets.items():
            sid = facet_by_key.get(key)
            if sid is None:
                continue
            fcls = jsonschema.validators.validator_for(schemas[sid])
            for err in fcls(schemas[sid], registry=registry).iter_errors({key: value}):
                problems.append(f"{where}.{key}: {'/'.join(map(str, err.absolute_path))}: {err.message}")
    return problems


def facet_schemas_used(event: Any, spec_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """File names of the facet schemas (``facets/*.json``) that :func:`validate_event` checks for ``event``."""
    found = find_spec_dir(spec_dir)
    if found is None:
        return []
    _registry, _schemas, facet_by_key = _load(str(found))
    used = {
        facet_by_key[key].rsplit("/", 1)[-1]
        for _where, facets in _facet_dicts(_as_dict(event))
        for key in facets
        if key in facet_by_key
    }
    return sorted(used)


def _as_dict(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return event
    if isinstance(event, str):
        return json.loads(event)
    from openlineage.client.serde import Serde

    return json.loads(Serde.to_json(event))


def _facet_dicts(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for part in ("run", "job"):
        facets = (doc.get(part) or {}).get("facets")
        if isinstance(facets, dict):
            out.append((f"{part}.facets", facets))
    for side in ("inputs", "outputs"):
        for i, ds in enumerate(doc.get(side) or []):
            for key in ("facets", "inputFacets", "outputFacets"):
                facets = ds.get(key)
                if isinstance(facets, dict):
                    out.append((f"{side}[{i}].{key}", facets))
    if isinstance(doc.get("dataset"), dict):
        facets = doc["dataset"].get("facets")
        if isinstance(facets, dict):
            out.append(("dataset.facets", facets))
    return out


def column_edges(output: dict) -> dict[str, set[tuple[str, str]]]:
    """An output dataset's column lineage as ``{column: {(input dataset's last path part, input column)}}``,
    whichever facet form the event uses (the ``dataset`` list, the default, is expanded into every column)."""
    from pathlib import PurePosixPath

    from airflow_provider_lineage.lineage.column_facet import column_inputs

    fields = [f["name"] for f in output["facets"]["schema"]["fields"]]
    return {col: {(PurePosixPath(src["name"]).name, src["field"]) for src in inputs}
            for col, inputs in column_inputs(output["facets"]["columnLineage"], fields).items()}
