"""How the launcher is configured: Spark properties (``spark.airflow_lineage.*``) or environment variables.

The operator passes these as ``--conf`` properties, so they reach the driver in client and cluster
deploy mode alike. A launcher started by hand (``spark-submit launcher.py app.py``, or plain
``python launcher.py app.py``) can use the same properties or the ``AIRFLOW_LINEAGE_*`` environment
variables; a Spark property wins over the environment.

Each setting: the Spark property, the environment variable, then what it means.

``spark.airflow_lineage.captureDir`` / ``AIRFLOW_LINEAGE_CAPTURE_DIR``
    write one capture record per write into this folder
``spark.airflow_lineage.emit`` / ``AIRFLOW_LINEAGE_EMIT``
    ``true``: the driver emits OpenLineage events itself
``spark.airflow_lineage.openlineageConfig`` / ``AIRFLOW_LINEAGE_OPENLINEAGE_CONFIG``
    openlineage-python client config as JSON (``{"transport": {...}}``)
``spark.airflow_lineage.jobNamespace`` / ``AIRFLOW_LINEAGE_JOB_NAMESPACE``
    job namespace of the driver's events (default ``OPENLINEAGE_NAMESPACE`` or ``default``)
``spark.airflow_lineage.jobName`` / ``AIRFLOW_LINEAGE_JOB_NAME``
    job name of the driver's events (default: the Spark app name)
``spark.airflow_lineage.drainTimeoutSeconds`` / ``AIRFLOW_LINEAGE_DRAIN_TIMEOUT_SECONDS``
    bound on waiting for Spark's listener bus at stop/exit (default 60)
``spark.airflow_lineage.indirectLineage`` / ``AIRFLOW_LINEAGE_INDIRECT_LINEAGE``
    where dataset-wide INDIRECT edges go: ``dataset`` (default), ``fields``, ``both``; unset: ``both`` when
    emitting to Marquez
``spark.airflow_lineage.udfAnalysis`` / ``AIRFLOW_LINEAGE_UDF_ANALYSIS``
    ``false``: Python UDFs stay black boxes (every argument DIRECT), no body analysis
``spark.airflow_lineage.captureToken`` / ``AIRFLOW_LINEAGE_CAPTURE_TOKEN``
    the task run's token: records go to ``captureDir/<token>/`` as envelopes (:mod:`.remote`)
``spark.airflow_lineage.taskRun`` / ``AIRFLOW_LINEAGE_TASK_RUN``
    the task run (``namespace/name/runId``) written into each envelope
``spark.airflow_lineage.maxRecordBytes`` / ``AIRFLOW_LINEAGE_MAX_RECORD_BYTES``
    bound on one record written with a token (default 32 MiB); a bigger one is reported, not written
``spark.airflow_lineage.writeBudgetSeconds`` / ``AIRFLOW_LINEAGE_WRITE_BUDGET_SECONDS``
    capture time one write may take (default 30); past it the write is published incomplete
``spark.airflow_lineage.totalBudgetSeconds`` / ``AIRFLOW_LINEAGE_TOTAL_BUDGET_SECONDS``
    capture time the whole application may take (default 600); later writes are published incomplete
``spark.airflow_lineage.minFreeHeap`` / ``AIRFLOW_LINEAGE_MIN_FREE_HEAP``
    memory guard: stop reading a plan when the driver heap's free share falls below this (default 0.10)
``spark.airflow_lineage.planJson`` / ``AIRFLOW_LINEAGE_PLAN_JSON``
    ``true``: also keep the whole plans as ``toJSON()`` in each record (debugging only: costly on big plans)
``spark.airflow_lineage.sievePruning`` / ``AIRFLOW_LINEAGE_SIEVE_PRUNING``
    ``true``: Parquet scans of tables with Sieve indexes read only the index's candidate files
    (``sieve.spark.enable``)
``spark.openlineage.parentJobNamespace`` etc. / ``OPENLINEAGE_PARENT_ID`` (``ns/name/runId``)
    parent run (the Airflow task), as injected by Airflow's OpenLineage provider

No Airflow and no Spark imports: the operator and the launcher share this module.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lineage.lineage.model import DEFAULT_INDIRECT, INDIRECT_PLACEMENTS, ParentRun

PREFIX = "spark.airflow_lineage."
ENV_PREFIX = "AIRFLOW_LINEAGE_"

#: property suffix -> environment variable suffix
_KEYS = {
    "captureDir": "CAPTURE_DIR",
    "emit": "EMIT",
    "openlineageConfig": "OPENLINEAGE_CONFIG",
    "jobNamespace": "JOB_NAMESPACE",
    "jobName": "JOB_NAME",
    "drainTimeoutSeconds": "DRAIN_TIMEOUT_SECONDS",
    "indirectLineage": "INDIRECT_LINEAGE",
    "udfAnalysis": "UDF_ANALYSIS",
    "captureToken": "CAPTURE_TOKEN",
    "taskRun": "TASK_RUN",
    "maxRecordBytes": "MAX_RECORD_BYTES",
    "writeBudgetSeconds": "WRITE_BUDGET_SECONDS",
    "totalBudgetSeconds": "TOTAL_BUDGET_SECONDS",
    "minFreeHeap": "MIN_FREE_HEAP",
    "planJson": "PLAN_JSON",
    "sievePruning": "SIEVE_PRUNING",
}


@dataclass
class CaptureBudget:
    """How much the capture of a write may cost the driver (issue 36).

    :param write_s: seconds of capture work one write may take (reading its plan, relations, UDF analysis);
        past it the write's lineage is published incomplete, with the reason.
    :param total_s: seconds of capture work the whole application may take; once spent, every later write
        is published incomplete (its output and schema, no column lineage).
    :param min_free_heap: the plan walk stops when less than this share of the driver's max heap is free
        (live data: garbage not yet collected counts as free, as the last collection measured it).
    :param max_nodes: distinct plan and expression nodes one write may have.
    :param max_chars: characters of one write's plan extract.
    :param plan_json: also keep ``toJSON()`` of both plans in the record (debugging; exponential on shared
        sub-expressions, so never on by default).
    """

    write_s: float = 30.0
    total_s: float = 600.0
    min_free_heap: float = 0.10
    max_nodes: int = 2_000_000
    max_chars: int = 128 * 1024 * 1024
    plan_json: bool = False

#: Name of the status file the launcher leaves in the capture folder (client deploy mode).
STATUS_FILE = "_launcher.status"  # not *.json: read_records() globs those
STATUS_FORMAT_VERSION = 1


@dataclass
class LauncherConfig:
    """What the launcher does with each capture record."""

    capture_dir: str | None = None
    emit: bool = False
    openlineage_config: dict[str, Any] | None = None
    job_namespace: str | None = None
    job_name: str | None = None
    drain_timeout_s: float = 60.0
    parent: ParentRun | None = None
    indirect: str = DEFAULT_INDIRECT
    #: why :attr:`indirect` was chosen when ``indirectLineage`` was not set (the driver logs it once)
    indirect_reason: str | None = None
    spark_openlineage: dict[str, str] = field(default_factory=dict)
    udf_analysis: bool = True
    #: with a token, records go to ``capture_dir/<token>/`` in envelopes (a driver that runs elsewhere)
    capture_token: str | None = None
    task_run: str | None = None
    max_record_bytes: int | None = None
    budget: CaptureBudget = field(default_factory=CaptureBudget)
    #: enable Sieve's pruning of Parquet scans in the driver (``airflow_provider_lineage.sieve.spark.enable``)
    sieve_pruning: bool = False

    @property
    def active(self) -> bool:
        """Whether there is anything to capture for."""
        return bool(self.capture_dir) or self.emit

    def to_spark_conf(self) -> dict[str, str]:
        """The ``--conf`` properties that reproduce this configuration in the driver."""
        conf: dict[str, str] = {}
        if self.capture_dir:
            conf[PREFIX + "captureDir"] = self.capture_dir
        if self.emit:
            conf[PREFIX + "emit"] = "true"
        if self.openlineage_config is not None:
            conf[PREFIX + "openlineageConfig"] = json.dumps(self.openlineage_config, separators=(",", ":"))
        if self.job_namespace:
            conf[PREFIX + "jobNamespace"] = self.job_namespace
        if self.job_name:
            conf[PREFIX + "jobName"] = self.job_name
        conf[PREFIX + "drainTimeoutSeconds"] = f"{self.drain_timeout_s:g}"
        # always stated: a driver that emits itself chooses by its transport when the key is absent
        conf[PREFIX + "indirectLineage"] = self.indirect
        if not self.udf_analysis:
            conf[PREFIX + "udfAnalysis"] = "false"
        if self.capture_token:
            conf[PREFIX + "captureToken"] = self.capture_token
        if self.task_run:
            conf[PREFIX + "taskRun"] = self.task_run
        if self.max_record_bytes:
            conf[PREFIX + "maxRecordBytes"] = str(int(self.max_record_bytes))
        default = CaptureBudget()
        if self.budget.write_s != default.write_s:
            conf[PREFIX + "writeBudgetSeconds"] = f"{self.budget.write_s:g}"
        if self.budget.total_s != default.total_s:
            conf[PREFIX + "totalBudgetSeconds"] = f"{self.budget.total_s:g}"
        if self.budget.min_free_heap != default.min_free_heap:
            conf[PREFIX + "minFreeHeap"] = f"{self.budget.min_free_heap:g}"
        if self.budget.plan_json:
            conf[PREFIX + "planJson"] = "true"
        if self.sieve_pruning:
            conf[PREFIX + "sievePruning"] = "true"
        if self.parent is not None:
            p = self.parent
            conf["spark.openlineage.parentJobNamespace"] = p.namespace
            conf["spark.openlineage.parentJobName"] = p.name
            conf["spark.openlineage.parentRunId"] = p.run_id
            if p.root_run_id and p.root_name:
                conf["spark.openlineage.rootParentJobNamespace"] = p.root_namespace or p.namespace
                conf["spark.openlineage.rootParentJobName"] = p.root_name
                conf["spark.openlineage.rootParentRunId"] = p.root_run_id
        return conf

    @classmethod
    def resolve(
        cls,
        get_conf: Callable[[str], str | None],
        environ: Mapping[str, str] | None = None,
        spark_openlineage: Mapping[str, str] | None = None,
    ) -> LauncherConfig:
        """Read the configuration from Spark properties (``get_conf``), falling back to ``environ``.

        :param get_conf: returns a Spark property's value or ``None``.
        :param environ: environment (default ``os.environ``).
        :param spark_openlineage: every ``spark.openlineage.*`` property of the application (the
            Airflow OpenLineage provider's transport injection), used when no
            ``openlineageConfig`` is given.
        :raises ValueError: on a malformed value, naming the property and the fix.
        """
        env = os.environ if environ is None else environ

        def get(key: str) -> str | None:
            value = get_conf(PREFIX + key)
            if value is None or value == "":
                value = env.get(ENV_PREFIX + _KEYS[key]) or None
            return value

        ol_config = None
        raw = get("openlineageConfig")
        if raw:
            try:
                ol_config = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{PREFIX}openlineageConfig is not valid JSON ({exc}): pass the openlineage-python client "
                    'config as JSON, e.g. {"transport": {"type": "file", "log_file_path": "/tmp/ol.jsonl", "append": '
                    'true}}'
                ) from exc
            if not isinstance(ol_config, dict):
                raise ValueError(f"{PREFIX}openlineageConfig must be a JSON object, got {type(ol_config).__name__}")
        timeout_raw = get("drainTimeoutSeconds")
        try:
            timeout = float(timeout_raw) if timeout_raw else 60.0
        except ValueError as exc:
            raise ValueError(f"{PREFIX}drainTimeoutSeconds must be a number of seconds, got {timeout_raw!r}") from exc
        emit = (get("emit") or "").strip().lower() in ("1", "true", "yes")
        indirect = (get("indirectLineage") or "").strip().lower()
        indirect_reason = None
        # nobody chose: follow the consumer the driver's events go to (lineage.transport.auto_indirect)
        if not indirect:
            indirect, indirect_reason = DEFAULT_INDIRECT, None
            if emit:
                from airflow_provider_lineage.lineage import transport

                if ol_config is not None:  # the same order as the launcher's client (Launcher._new_client)
                    target = ol_config.get("transport")
                else:
                    target = (
                        transport_from_spark_properties(spark_openlineage or {}) or transport.environment_transport()
                    )
                indirect, indirect_reason = transport.auto_indirect(target)
        if indirect not in INDIRECT_PLACEMENTS:
            raise ValueError(f"{PREFIX}indirectLineage must be one of {INDIRECT_PLACEMENTS}, got {indirect!r}")
        limit_raw = get("maxRecordBytes")
        try:
            max_record_bytes = int(limit_raw) if limit_raw else None
        except ValueError as exc:
            raise ValueError(f"{PREFIX}maxRecordBytes must be a number of bytes, got {limit_raw!r}") from exc
        budget = CaptureBudget(
            write_s=_positive(get("writeBudgetSeconds"), "writeBudgetSeconds", CaptureBudget.write_s),
            total_s=_positive(get("totalBudgetSeconds"), "totalBudgetSeconds", CaptureBudget.total_s),
            min_free_heap=_fraction(get("minFreeHeap"), CaptureBudget.min_free_heap),
            plan_json=(get("planJson") or "").strip().lower() in ("1", "true", "yes"),
        )
        return cls(
            budget=budget,
            capture_dir=get("captureDir"),
            capture_token=get("captureToken"),
            task_run=get("taskRun"),
            max_record_bytes=max_record_bytes,
            emit=emit,
            openlineage_config=ol_config,
            job_namespace=get("jobNamespace"),
            job_name=get("jobName"),
            drain_timeout_s=timeout,
            parent=_parent(get_conf, env),
            indirect=indirect,
            indirect_reason=indirect_reason,
            spark_openlineage=dict(spark_openlineage or {}),
            udf_analysis=(get("udfAnalysis") or "true").strip().lower() not in ("0", "false", "no", "off"),
            sieve_pruning=(get("sievePruning") or "").strip().lower() in ("1", "true", "yes"),
        )


def _number(raw: str | None, key: str, default: float, what: str, out_of_range: Callable[[float], bool],
            bound: str) -> float:
    """``raw`` as a float (``default`` when unset); ``ValueError`` naming ``what`` it must be, or its ``bound``."""
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{PREFIX}{key} must be {what}, got {raw!r}") from exc
    if out_of_range(value):
        raise ValueError(f"{PREFIX}{key} must be {bound}, got {raw!r}")
    return value


def _positive(raw: str | None, key: str, default: float) -> float:
    return _number(raw, key, default, "a number of seconds", lambda v: v <= 0, "more than 0 seconds")


def _fraction(raw: str | None, default: float) -> float:
    what = "a fraction of the heap between 0 and 1"
    return _number(raw, "minFreeHeap", default, what, lambda v: not 0 <= v < 1, f"{what} (e.g. 0.1)")


def _parent(get_conf: Callable[[str], str | None], env: Mapping[str, str]) -> ParentRun | None:
    ns = get_conf("spark.openlineage.parentJobNamespace")
    name = get_conf("spark.openlineage.parentJobName")
    run_id = get_conf("spark.openlineage.parentRunId")
    if not (ns and name and run_id):
        # openlineage-python's convention: OPENLINEAGE_PARENT_ID=namespace/name/runId
        raw = env.get("OPENLINEAGE_PARENT_ID", "")
        parts = raw.split("/")
        if len(parts) < 3:
            return None
        ns, name, run_id = parts[0], "/".join(parts[1:-1]), parts[-1]
        root = env.get("OPENLINEAGE_ROOT_PARENT_ID", "").split("/")
        if len(root) >= 3:
            return ParentRun(ns, name, run_id, root[0], "/".join(root[1:-1]), root[-1])
        return ParentRun(ns, name, run_id)
    return ParentRun(
        namespace=ns,
        name=name,
        run_id=run_id,
        root_namespace=get_conf("spark.openlineage.rootParentJobNamespace"),
        root_name=get_conf("spark.openlineage.rootParentJobName"),
        root_run_id=get_conf("spark.openlineage.rootParentRunId"),
    )


def transport_from_spark_properties(props: Mapping[str, str]) -> dict[str, Any] | None:
    """Turn ``spark.openlineage.transport.*`` properties into an openlineage-python transport dict.

    The Airflow OpenLineage provider injects its transport this way for the JVM listener
    (``openlineage_inject_transport_info``); the launcher understands the same properties.
    """
    prefix = "spark.openlineage.transport."
    out: dict[str, Any] = {}
    for key, value in props.items():
        if not key.startswith(prefix):
            continue
        parts = key[len(prefix):].split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    if not out.get("type"):
        return None
    if out.get("type") == "http" and "url" in out and "endpoint" in out:
        # the JVM listener's http transport takes url + endpoint like openlineage-python
        pass
    return out
