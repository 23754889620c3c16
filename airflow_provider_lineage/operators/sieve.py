"""``SieveIndexOperator``: keep Sieve data-skipping indexes in step with their tables, as a Spark job.

The operator is a ``SparkSubmitOperator`` whose application is the package's job script
(:mod:`airflow_provider_lineage.sieve.job`): the index work (the key aggregation of a build) runs in
a Spark application submitted through the Spark connection, so big tables are indexed on the
cluster; ``local[*]`` works out of the box. The operator writes the job spec (which indexes, which
mode, which settings), submits, reads the job's result file, logs one line per index, returns the
results (XCom ``return_value``) and publishes OpenLineage datasets: each index is an output derived
from its table.

What to index comes from one of three places:

* ``table`` + ``columns``: one index per column;
* ``indexes``: a list of ``{"table", "column", "index_path"?, "mode"?}`` -- e.g. the XCom of a
  :class:`~airflow_provider_lineage.sensors.sieve.SieveMaintenanceSensor` (``indexes=sensor.output``);
* neither: the tables upstream ``SparkLineageSubmitOperator`` tasks wrote (their ``lineage_outputs``
  XCom), filtered by ``index_columns`` (which tables, which columns).
"""
from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_lineage import _compat
from airflow_provider_lineage.lineage import events, transport
from airflow_provider_lineage.lineage.logs import PrefixedLogger, get_logger
from airflow_provider_lineage.operators._lineage.task import EMISSION_MODES, XCOM_OUTPUTS_KEY
from airflow_provider_lineage.operators._lineage.templating import is_template
from airflow_provider_lineage.sieve import job as job_module
from airflow_provider_lineage.sieve.decisions import update_mode
from airflow_provider_lineage.sieve.errors import SieveError
from airflow_provider_lineage.sieve.fs import STORAGE_OPTIONS_ENV
from airflow_provider_lineage.sieve.job import IndexJob
from airflow_provider_lineage.sieve.maintain import BUILD_OPTIONS, MODES, MaintainResult

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Context

RESULT_FILE = "sieve-result.json"


def job_path() -> str:
    """Absolute path of the job script submitted as the spark-submit application."""
    return str(Path(job_module.__file__).resolve())


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class SieveIndexOperator(SparkSubmitOperator):
    """Build, sync, compact or rebuild Sieve indexes with a Spark job.

    Accepts the arguments of
    :class:`~airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator` (``conn_id``,
    ``conf``, ``deploy_mode``, ``executor_memory`` ...) except ``application``/``application_args``.

    :param table: table directory, ``file:`` URI or catalog table name (with ``columns``). (templated)
    :param columns: the column(s) to index in ``table``. (templated)
    :param indexes: instead of ``table``: a list of ``{"table", "column", "index_path"?, "mode"?}``,
        e.g. ``SieveMaintenanceSensor(...).output``. (templated)
    :param index_columns: without ``table``/``indexes``: which written tables to index and on which
        columns, ``{table: column or [columns]}``; a key matches a written dataset's name (absolute
        path), catalog table name, location, last path element, or is a glob on the name. (templated)
    :param lineage_task_ids: the task(s) whose ``lineage_outputs`` XCom is read (default: the
        direct upstream tasks). (templated)
    :param mode: ``auto`` (default: decide from cheap checks and log why), ``build``, ``sync``,
        ``compact`` or ``rebuild``. (templated)
    :param update_strategy: ``copy_on_write`` or ``merge_on_read`` (default: keep the index's;
        copy-on-write for a new one). In ``auto`` mode another strategy than the index's rebuilds it.
    :param error_bound: segment error bound ``e`` (default 0: exact segments; larger = cheaper syncs).
    :param max_segment_keys: keys per segment at most (driver memory bound of a build).
    :param keep_versions: index versions kept on disk.
    :param gap_factor: key gap (in multiples of the typical spacing) that starts a new segment.
    :param rows_per_partition: rows per Spark partition of a build's aggregation.
    :param engine: how a build reads the keys: ``auto`` (default: pyarrow on the Spark driver for
        tables up to 8 M rows, no Spark job; Spark above), ``spark`` or ``pyarrow``.
    :param structure: ``auto`` (default: chosen from a sample of the column), ``segments`` (ordered
        keys), ``hashed`` (keys without order: UUIDs, random ids; one-file keys in a retrieval structure
        when numba is installed and that is smaller), ``fuse`` or ``pages`` (a hashed index with or
        without that structure, forced; see docs/sieve.md).
    :param fpp: ``hashed``: share of absent keys that may read a file (default 0.008).
    :param freshness: ``footer`` builds indexes that record every file's Parquet footer checksum:
        syncs and readers with ``freshness="footer"`` then see a file rewritten with the same size and
        its mtime set back (each check reads every file's footer); ``auto`` rebuilds an index without
        them. Default (None or ``stat``): paths, sizes and mtimes.
    :param index_path: index folder; may contain ``{table}`` (the table directory's name) and
        ``{column}``; default ``<table>/_sieve/<column>``. Several columns need ``{column}``. (templated)
    :param max_deltas: ``auto``: compact a merge-on-read index at this many delta files.
    :param max_budget_fraction: ``auto``: rebuild when this share of the error budget is used.
    :param progress_interval: seconds (or a timedelta) between progress lines of a long job.
    :param result_dir: folder for the job's result file (default: a temporary folder); cluster deploy
        mode needs a folder both the driver and this worker see. (templated)
    :param storage_options: for tables or indexes on an object store (``s3://``, ``gs://``, ...): the
        keyword arguments of the store's ``pyarrow.fs`` class (e.g. ``region``, ``endpoint_override``,
        ``access_key``/``secret_key``) the job uses for listing and for the index files; default:
        the store's usual environment on the Spark driver. They reach the job in its environment
        (``$SIEVE_STORAGE_OPTIONS``), never on the command line; in YARN or Kubernetes cluster
        mode Spark passes that environment as a conf entry, so prefer the store's own credential
        chain (instance roles) there. Spark reads the data through Hadoop's connector, configured
        with ``conf`` (``spark.hadoop.fs.s3a.*``). (templated)
    :param lineage_emission: ``auto``: through Airflow's OpenLineage provider when configured, else
        emitted by the operator itself (never both); ``self``; ``off``.
    :param openlineage_config: openlineage-python config for self-emission.
    """

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "conn_id",
        "table",
        "columns",
        "indexes",
        "index_columns",
        "lineage_task_ids",
        "mode",
        "update_strategy",
        "index_path",
        "result_dir",
        "storage_options",
    )
    ui_color = "#b7d7a8"

    def __init__(
        self,
        *,
        table: str | None = None,
        columns: str | Sequence[str] | None = None,
        indexes: Sequence[Mapping[str, Any]] | str | None = None,
        index_columns: Mapping[str, str | Sequence[str]] | None = None,
        lineage_task_ids: str | Sequence[str] | None = None,
        lineage_xcom_key: str = XCOM_OUTPUTS_KEY,
        mode: str = "auto",
        update_strategy: str | None = None,
        error_bound: int | None = None,
        max_segment_keys: int | None = None,
        keep_versions: int | None = None,
        gap_factor: float | None = None,
        rows_per_partition: int | None = None,
        engine: str | None = None,
        structure: str | None = None,
        fpp: float | None = None,
        freshness: str | None = None,
        index_path: str | None = None,
        max_deltas: int | None = None,
        max_budget_fraction: float | None = None,
        progress_interval: float | timedelta = 30.0,
        result_dir: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        lineage_emission: str = "auto",
        openlineage_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        for arg in ("application", "application_args"):
            if arg in kwargs:
                raise ValueError(f"SieveIndexOperator submits its own job script: do not pass {arg}= "
                                 "(use table/columns, indexes or index_columns to say what to index)")
        kwargs.setdefault("name", "sieve-index")
        super().__init__(application=job_path(), **kwargs)
        if not is_template(mode) and mode not in MODES:
            raise ValueError(f"mode={mode!r} is unknown: use one of {', '.join(MODES)}")
        if update_strategy is not None and not is_template(update_strategy):
            try:
                update_mode(update_strategy)
            except SieveError as exc:
                raise ValueError(str(exc)) from None
        if freshness is not None:
            from airflow_provider_lineage.sieve.query import FRESHNESS

            if freshness not in FRESHNESS:
                raise ValueError(f"freshness={freshness!r} is unknown: use one of {', '.join(FRESHNESS)} "
                                 "('footer' records and checks every file's Parquet footer checksum)")
        if lineage_emission not in EMISSION_MODES:
            raise ValueError(f"lineage_emission={lineage_emission!r} is not one of {EMISSION_MODES}")
        if table is not None and indexes is not None:
            raise ValueError("pass either table= (with columns=) or indexes=, not both")
        if table is not None and not columns:
            raise ValueError(f"table={table!r} needs columns= (the column or columns to index)")
        if table is None and indexes is None and not index_columns:
            raise ValueError("say what to index: table= and columns=, indexes=[{'table': ..., 'column': ...}], "
                             "or index_columns={table: column} for the tables upstream lineage tasks wrote")
        self.table = table
        self.columns = columns
        self.indexes = indexes
        self.index_columns = index_columns
        self.lineage_task_ids = lineage_task_ids
        self.lineage_xcom_key = lineage_xcom_key
        self.mode = mode
        self.update_strategy = update_strategy
        self.index_options = {"error_bound": error_bound, "max_segment_keys": max_segment_keys,
                              "keep_versions": keep_versions, "gap_factor": gap_factor,
                              "rows_per_partition": rows_per_partition, "engine": engine,
                              "structure": structure, "fpp": fpp, "freshness": freshness}
        self.index_path = index_path
        self.thresholds = {k: v for k, v in (("max_deltas", max_deltas),
                                             ("max_budget_fraction", max_budget_fraction)) if v is not None}
        self.progress_interval = _seconds(progress_interval)
        self.result_dir = result_dir
        self.storage_options = dict(storage_options) if storage_options else None
        self.lineage_emission = lineage_emission
        self.openlineage_config = openlineage_config
        self.results: list[MaintainResult] = []
        assert set(self.index_options) == set(BUILD_OPTIONS)

    @property
    def lineage_log(self) -> PrefixedLogger:
        """The task log with the provider's prefix in front of every line."""
        return get_logger(self.log)

    # airflow internal: SparkSubmitOperator keeps the connection id in ``_conn_id``; this property makes
    # it a template field under its public argument name.
    @property
    def conn_id(self) -> str:
        return self._conn_id

    @conn_id.setter
    def conn_id(self, value: str) -> None:
        self._conn_id = value

    # -- what to index --------------------------------------------------------------------------
    def _index_path_for(self, table: str, column: str, n_columns: int, explicit: str | None = None) -> str | None:
        template = explicit or self.index_path
        if not template:
            return None
        if n_columns > 1 and "{column}" not in template and not explicit:
            raise ValueError(f"index_path={template!r} is one folder but {n_columns} columns are indexed: "
                             "put {column} in it (e.g. '/indexes/{table}/{column}'), or leave it unset")
        name = posixpath.basename(table.rstrip("/")) if "/" in table or table.startswith("file:") else table
        return template.replace("{table}", name).replace("{column}", column)

    def _job(self, table: str, column: str, mode: str | None = None, index_path: str | None = None) -> IndexJob:
        return IndexJob(table=table, column=column, mode=mode or self.mode, index_path=index_path,
                        update_strategy=self.update_strategy,
                        options={k: v for k, v in self.index_options.items() if v is not None},
                        thresholds=dict(self.thresholds))

    def resolve_jobs(self, context: Context | None = None) -> list[IndexJob]:
        """The index jobs of this run (after templating; reads upstream XCom in lineage mode)."""
        jobs: list[IndexJob] = []
        if self.table is not None:
            cols = [self.columns] if isinstance(self.columns, str) else list(self.columns or [])
            jobs = [self._job(self.table, c, index_path=self._index_path_for(self.table, c, len(cols))) for c in cols]
        elif self.indexes is not None:
            entries = self.indexes
            if isinstance(entries, str):
                entries = json.loads(entries)
            for e in entries or []:
                if not isinstance(e, Mapping) or not e.get("table") or not e.get("column"):
                    raise ValueError(f"indexes entry {e!r} needs 'table' and 'column'")
                jobs.append(self._job(str(e["table"]), str(e["column"]), e.get("mode"),
                                      self._index_path_for(str(e["table"]), str(e["column"]), 1, e.get("index_path"))))
        else:
            jobs = self._jobs_from_lineage(self._written_datasets(context))
        seen: set[tuple[str, str]] = set()
        unique = []
        for j in jobs:
            if (j.table, j.column) not in seen:
                seen.add((j.table, j.column))
                unique.append(j)
        return unique

    def _written_datasets(self, context: Context | None) -> list[dict[str, Any]]:
        if context is None:
            return []
        ti = context["ti"]
        ids = self.lineage_task_ids
        if ids is None:
            ids = sorted(self.upstream_task_ids)
        elif isinstance(ids, str):
            ids = [ids]
        out: list[dict[str, Any]] = []
        for task_id in ids:
            value = ti.xcom_pull(task_ids=task_id, key=self.lineage_xcom_key)
            if isinstance(value, list):
                out.extend(d for d in value if isinstance(d, Mapping))
        self.log.info("datasets written upstream (%s): %s", ", ".join(ids) or "no upstream task",
                      ", ".join(str(d.get("name")) for d in out) or "none")
        return out

    def _jobs_from_lineage(self, written: list[dict[str, Any]]) -> list[IndexJob]:
        from airflow_provider_lineage._compat import AirflowException

        jobs: list[IndexJob] = []
        unmatched = []
        for key, cols in (self.index_columns or {}).items():
            columns = [cols] if isinstance(cols, str) else list(cols)
            matches = [d for d in written if _matches(key, d)]
            if not matches:
                unmatched.append(key)
                continue
            for d in matches:
                table = _table_of(d)
                known = list(d.get("columns") or [])
                for c in columns:
                    if known and c not in known:
                        raise AirflowException(
                            f"column {c!r} is not in {d.get('name')} (its columns: {', '.join(known)}): "
                            f"fix index_columns[{key!r}]")
                    jobs.append(self._job(table, c, index_path=self._index_path_for(table, c, len(columns))))
        if unmatched:
            names = ", ".join(str(d.get("name")) for d in written) or "nothing"
            raise AirflowException(
                f"index_columns names {', '.join(map(repr, unmatched))} but the upstream tasks wrote {names}: "
                "use a written table's path, catalog name, last path element or a glob (and check lineage_task_ids)")
        return jobs

    # -- execution ------------------------------------------------------------------------------
    def submit_env(self) -> dict[str, Any] | None:
        """``env_vars`` of the spark-submit: the user's, plus ``$SIEVE_STORAGE_OPTIONS`` (JSON)."""
        if not self.storage_options:
            return self.env_vars
        if isinstance(self.storage_options, str):  # a template rendered as text
            try:
                self.storage_options = json.loads(self.storage_options)
            except json.JSONDecodeError:
                pass
        if not isinstance(self.storage_options, Mapping):
            raise TypeError(f"storage_options={self.storage_options!r} is not a mapping: pass a dict of the "
                             "store's pyarrow.fs options")
        return {**(self.env_vars or {}), STORAGE_OPTIONS_ENV: json.dumps(dict(self.storage_options))}

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from airflow_provider_lineage._compat import AirflowException

        jobs = self.resolve_jobs(context)
        if not jobs:
            self.log.info("Sieve: nothing to index")
            self.results = []
            return []
        for j in jobs:
            self.log.info("Sieve: %s.%s mode=%s index_path=%s", j.table, j.column, j.mode, j.index_path or "(default)")
        deploy_mode = _compat.spark_submit_deploy_mode(self)
        if deploy_mode == "cluster" and not self.result_dir:
            raise AirflowException("cluster deploy mode: pass result_dir= on storage both the Spark driver and this "
                                   "worker see (the job writes its result file there)")
        created = None if self.result_dir else tempfile.mkdtemp(prefix="sieve-job-")
        folder = self.result_dir or created
        assert folder is not None
        os.makedirs(folder, exist_ok=True)
        result_file = os.path.join(folder, f"{self.task_id}-{os.getpid()}-{RESULT_FILE}")
        spec = job_module.spec_to_json(jobs, progress_seconds=self.progress_interval)
        emission = self._resolved_emission()
        task_run, client = None, None
        if emission == "self":
            task_run, client = self._self_emit_start(context)
        saved, saved_env = self.application_args, self.env_vars
        self.application_args = [spec, result_file]
        self.env_vars = self.submit_env()
        _compat.reset_spark_submit_hook(self)
        submit_error: BaseException | None = None
        try:
            super().execute(context)
        except Exception as exc:  # noqa: BLE001 - the result file, if any, says why; re-raised below
            submit_error = exc
        finally:
            self.application_args, self.env_vars = saved, saved_env
        error: BaseException | None = None
        try:
            self.results = job_module.read_results(result_file)
        except (OSError, ValueError) as exc:
            self.results = []
            error = AirflowException(f"the Sieve job wrote no readable result file ({submit_error or exc!r}): "
                                     "see the spark-submit output above")
        else:
            for r in self.results:
                self.log.info("Sieve: %s", r.summary())
            failed = [r for r in self.results if r.status != "ok"]
            if failed:
                lines = "\n".join(f"  {r.table}.{r.column}: {r.error_type}: {r.error}" for r in failed)
                error = AirflowException(f"{len(failed)} of {len(self.results)} Sieve index job(s) failed "
                                         f"(no index was left half-written):\n{lines}")
            else:
                error = submit_error
        finally:
            if created:
                shutil.rmtree(created, ignore_errors=True)
        if client is not None and task_run is not None:
            self._self_emit_end(client, task_run, error)
        if error is not None:
            raise error
        return [_xcom_record(r) for r in self.results]

    # -- OpenLineage ----------------------------------------------------------------------------
    def _resolved_emission(self) -> str:
        if self.lineage_emission in ("off", "self"):
            return self.lineage_emission
        return "provider" if _compat.openlineage_provider_active() else "self"

    def openlineage_datasets(self) -> tuple[list[Any], list[Any]]:
        """(inputs, outputs): each indexed table (input) and its index folder (output, derived from it)."""
        from openlineage.client.event_v2 import InputDataset, OutputDataset
        from openlineage.client.generated import column_lineage_dataset as cl
        from openlineage.client.generated import schema_dataset as sd

        from airflow_provider_lineage.lineage.naming import dataset_for_location

        in_fields: dict[tuple[str, str], dict[str, str]] = {}
        outputs: list[Any] = []
        for r in self.results:
            if r.status != "ok" or not r.table_root or not r.index_path:
                continue
            src = dataset_for_location(r.table_root)
            dst = dataset_for_location(r.index_path)
            in_fields.setdefault(src.key, {})[r.column] = r.key_type or ""
            schema = sd.SchemaDatasetFacet(
                fields=[sd.SchemaDatasetFacetFields(name=r.column, type=r.key_type or "unknown")]
            )
            lineage = cl.ColumnLineageDatasetFacet(fields={r.column: cl.Fields(
                inputFields=[cl.InputField(namespace=src.namespace, name=src.name, field=r.column, transformations=[
                    cl.Transformation(type="DIRECT", subtype="TRANSFORMATION", description="Sieve index keys",
                                      masking=False)])],
                # the deprecated field-level pair is what Marquez shows (it ignores ``transformations``)
                transformationType="TRANSFORMATION",
                transformationDescription=f"DIRECT/TRANSFORMATION: {r.column} (Sieve index keys)")})
            outputs.append(OutputDataset(namespace=dst.namespace, name=dst.name,
                                         facets={"schema": schema, "columnLineage": lineage}))
        inputs = [InputDataset(namespace=ns, name=name, facets={"schema": sd.SchemaDatasetFacet(fields=[
            sd.SchemaDatasetFacetFields(name=c, type=t or "unknown") for c, t in cols.items()])})
            for (ns, name), cols in in_fields.items()]
        return inputs, outputs

    def get_openlineage_facets_on_start(self) -> OperatorLineage | None:
        return _compat.operator_lineage()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage | None:
        """Inputs: the indexed tables (schema: the indexed columns); outputs: the index folders."""
        inputs, outputs = self.openlineage_datasets()
        return _compat.operator_lineage(inputs=inputs, outputs=outputs)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> OperatorLineage | None:
        return self.get_openlineage_facets_on_complete(task_instance)

    def _self_emit_start(self, context: Context) -> tuple[Any, Any]:
        # Reuses the lineage operator's run identity helpers (same job names and run ids as the provider).
        from airflow_provider_lineage.operators._lineage.openlineage_identity import (
            emit_task_start,
            task_run_identity,
        )

        try:
            task_run = task_run_identity(context.get("ti"), dag_id=self.dag_id if self.has_dag() else None,
                                         task_id=self.task_id)
            client, where = emit_task_start(self.openlineage_config, task_run, self.lineage_log)
            self.log.info("lineage: OpenLineage events go to %s", where)
            return task_run, client
        except Exception as exc:  # noqa: BLE001 - never fail the task for lineage
            self.lineage_log.warning("cannot emit OpenLineage events: %r", exc)
            return None, None

    def _self_emit_end(self, client: Any, task_run: Any, error: BaseException | None) -> None:
        from airflow_provider_lineage.operators._lineage.openlineage_identity import dag_parent

        try:
            inputs, outputs = self.openlineage_datasets()
            event = events.build_event("FAIL" if error is not None else "COMPLETE", job_namespace=task_run.namespace,
                                     job_name=task_run.name, run_id=task_run.run_id, inputs=inputs, outputs=outputs,
                                     run_facets=events.run_facets(None, parent=dag_parent(task_run), error=error),
                                     job_facets=events.job_facets(integration="AIRFLOW", job_type="TASK"))
            for msg in transport.emit_all(client, [event]):
                self.lineage_log.warning("%s", msg)
        except Exception as exc:  # noqa: BLE001 - never fail the task for lineage
            self.lineage_log.warning("lineage publication failed: %r", exc)


def _matches(key: str, d: Mapping[str, Any]) -> bool:
    name = str(d.get("name") or "")
    candidates = {name, str(d.get("table") or ""), str(d.get("location") or ""), posixpath.basename(name.rstrip("/"))}
    if key in candidates:
        return True
    return any(fnmatch.fnmatchcase(c, key) for c in (name, str(d.get("table") or "")) if c)


def _table_of(d: Mapping[str, Any]) -> str:
    """What the Sieve job is given: the local path of a file dataset, else the catalog table name."""
    if d.get("namespace") == "file" and d.get("name"):
        return str(d["name"])
    if d.get("table"):
        return str(d["table"])
    return str(d.get("location") or d.get("name"))


def _xcom_record(r: MaintainResult) -> dict[str, Any]:
    out = r.to_dict()
    out.pop("details", None)
    return out
