"""Every ``[column_lineage]`` setting the provider reads, in one place (as the OpenLineage provider's ``conf.py``).

The section and its options are declared in :func:`~airflow_provider_lineage.get_provider_info.get_provider_info`
(``config``), so ``airflow config list`` shows them; each can also be set as ``AIRFLOW__COLUMN_LINEAGE__<OPTION>``.
Each function reads its option when called (a test or a process may change the configuration); a bad value raises
``ValueError`` naming the option and the fix. Airflow is imported on first use only.
"""
from __future__ import annotations

import math
from pathlib import Path

from airflow_provider_lineage import _compat
from airflow_provider_lineage.lineage import tags as tagging
from airflow_provider_lineage.lineage.model import INDIRECT_PLACEMENTS

#: The provider's configuration section (``AIRFLOW__COLUMN_LINEAGE__TAGS_FILE`` ...).
SECTION = "column_lineage"


def get(option: str, fallback: str | None = None) -> str | None:
    """The raw text of ``[column_lineage] <option>`` (``fallback`` when unset)."""
    value = _compat.airflow_conf().get(SECTION, option, fallback=fallback)
    return None if value is None else str(value)


def setting_list(option: str, default: list[str] | None) -> list[str] | None:
    """A list setting: a JSON list or comma-separated names; ``default`` when unset or empty."""
    raw = get(option)
    if raw is None or not raw.strip():
        return default
    try:
        return tagging.parse_tag_list(raw, f"[{SECTION}] {option}")
    except tagging.TagsError as exc:
        raise ValueError(f"{exc} (provider setting, environment AIRFLOW__COLUMN_LINEAGE__{option.upper()})") from None


def require_masked() -> list[str]:
    """``require_masked``: the tags no output column may receive unmasked when a task gives none (empty: none)."""
    return setting_list("require_masked", None) or []


def stopped_by_masking() -> list[str]:
    """``stopped_by_masking``: the tags a masking step stops (default ``pii``)."""
    return setting_list("stopped_by_masking", list(tagging.DEFAULT_STOPPED_BY_MASKING)) or []


def tags() -> str | None:
    """``tags``: the column-tag declaration itself (JSON), ``None`` when unset or empty."""
    raw = get("tags")
    return raw if raw is not None and raw.strip() else None


def tags_file() -> str | None:
    """``tags_file``: the path of a JSON file of column tags, ``None`` when unset."""
    return get("tags_file") or None


def tags_variable() -> str | None:
    """``tags_variable``: the Airflow Variable the declaration is read from (default ``lineage_column_tags``);
    ``None`` when the setting is empty or ``none``: no Variable is read, so no task can change the declaration."""
    raw = get("tags_variable", tagging.VARIABLE)
    name = tagging.VARIABLE if raw is None else raw.strip()
    return None if name.lower() in ("", "none", "off", "false") else name


def key_setting(option: str) -> str | None:
    """``tag_map_private_key`` / ``tag_map_public_key``: the PEM text, given itself or as the path of a PEM file
    (``None``: unset)."""
    raw = get(option)
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    if raw.startswith("-----BEGIN"):
        return raw
    try:
        return Path(raw).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"[{SECTION}] {option}: cannot read the key file {raw}: {exc}") from None


def indirect_lineage() -> str | None:
    """``indirect_lineage``: where dataset-wide INDIRECT edges go (``dataset``, ``fields``, ``both``); ``None``
    when unset (then chosen by where the events go)."""
    raw = get("indirect_lineage")
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value not in INDIRECT_PLACEMENTS:
        raise ValueError(f"[{SECTION}] indirect_lineage = {raw!r} is not one of {INDIRECT_PLACEMENTS}: set it to "
                         "'dataset' (compact), 'fields' (what Marquez shows) or 'both', or unset it (then chosen by "
                         "where the events go)")
    return value


def sieve_badge_roots() -> str:
    """``sieve_badge_roots``: the local folders whose Sieve indexes the UI badge checks (raw, comma-separated)."""
    return get("sieve_badge_roots", "") or ""


def sieve_badge_max_files(default: int) -> str:
    """``sieve_badge_max_files`` as written (the caller bounds and parses it)."""
    return get("sieve_badge_max_files", str(default)) or str(default)


def sieve_badge_timeout(default: float) -> str:
    """``sieve_badge_timeout`` as written (the caller bounds and parses it)."""
    return get("sieve_badge_timeout", str(default)) or str(default)


def api_admission_limit() -> int:
    """``api_admission_limit``: how many reader requests each api-server worker runs at once (the others wait in
    arrival order, :mod:`~airflow_provider_lineage.plugins.admission`); ``0`` (the default): no limit."""
    raw = (get("api_admission_limit", "0") or "0").strip() or "0"
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"[{SECTION}] api_admission_limit = {raw!r} is not a whole number >= 0: set it to the "
                         "number of requests an api-server worker runs at once (e.g. 8 for 2 workers on 2 cores), "
                         "or 0 for no limit (environment AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT)")
    return value


def api_admission_wait_timeout() -> float:
    """``api_admission_wait_timeout``: seconds a request waits for its turn under ``api_admission_limit`` before it
    is answered 503 with ``Retry-After`` (default 30)."""
    raw = (get("api_admission_wait_timeout", "30") or "30").strip() or "30"
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"[{SECTION}] api_admission_wait_timeout = {raw!r} is not a number of seconds > 0: set it "
                         "to how long a request may wait for its turn before the api-server answers 503 (default "
                         "30; environment AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_WAIT_TIMEOUT)")
    return value
