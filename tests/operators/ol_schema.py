"""Test helper: validate emitted events with :mod:`tests.support.ol_validate`, or skip.

The schemas are vendored in ``tests/support/openlineage_spec`` (Apache-2.0, see its NOTICE), so the
validation runs in every checkout; ``$OPENLINEAGE_SPEC_DIR`` points at another spec folder. A checkout
without the vendored folder fails (it is part of the repository), it never skips.
"""
from __future__ import annotations

from typing import Any

import pytest

from tests.support.ol_validate import facet_schemas_used, find_spec_dir, validate_event


def validate_or_skip(events: list[dict[str, Any]]) -> list[str]:
    """Assert every event is schema-valid; return the facet schema files that were checked."""
    if find_spec_dir() is None:
        pytest.fail("OpenLineage spec folder not found: tests/support/openlineage_spec is missing from the checkout")
    used: set[str] = set()
    for event in events:
        problems = validate_event(event)
        assert problems == [], f"event {event.get('eventType')} is not schema-valid: {problems}"
        used.update(facet_schemas_used(event))
    return sorted(used)
