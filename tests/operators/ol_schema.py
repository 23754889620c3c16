"""Test helper: validate emitted events with :mod:`tests.support.ol_validate`, or skip.

The spec folder is ``shared/openlineage-spec`` beside the checkout (or ``$OPENLINEAGE_SPEC_DIR``);
without it the calling test skips with a message saying how to point at it.
"""
from __future__ import annotations

from typing import Any

import pytest

from tests.support.ol_validate import facet_schemas_used, find_spec_dir, validate_event


def validate_or_skip(events: list[dict[str, Any]]) -> list[str]:
    """Assert every event is schema-valid; return the facet schema files that were checked."""
    if find_spec_dir() is None:
        pytest.skip("OpenLineage spec folder not found: set OPENLINEAGE_SPEC_DIR to validate events")
    used: set[str] = set()
    for event in events:
        problems = validate_event(event)
        assert problems == [], f"event {event.get('eventType')} is not schema-valid: {problems}"
        used.update(facet_schemas_used(event))
    return sorted(used)
