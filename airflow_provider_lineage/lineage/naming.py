"""Dataset identity per the OpenLineage naming spec (namespace + name), plus the table symlink.

* local files: namespace ``file``, name the absolute path (``file:/tmp/x`` -> ``file`` + ``/tmp/x``)
* HDFS: ``hdfs://host:port`` + path;  S3: ``s3://bucket`` + key (``s3a``/``s3n`` are folded into ``s3``)
* GCS: ``gs://bucket`` + key;  ABFSS/WASBS: ``abfss://container@account.dfs.core.windows.net`` + path
* JDBC: ``jdbc:postgresql://h:5432/db`` -> ``postgres://h:5432`` + ``db.<dbtable>`` (other drivers:
  ``<driver>://host:port``)
* a catalog table with a storage location is identified by its location (so that readers by path
  and readers by table name meet on the same dataset); the table name travels as ``table`` and
  becomes a ``symlinks`` facet.
* Hive-style partition folders at the end of a path (``.../events/day=2024-01-01/hour=3``) name a
  part of the table above them, not a dataset of their own: they are folded into it (``.../events``),
  so a job reading one day's partition per run reads the same dataset every run.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True, order=True)
class DatasetRef:
    """An OpenLineage dataset identity.

    :param namespace: naming-spec namespace (``file``, ``s3://bucket`` ...).
    :param name: naming-spec name (absolute path, object key, ``db.schema.table``).
    :param table: catalog identifier (``spark_catalog.default.t``) when the dataset is a catalog
        table; published as a ``symlinks`` facet. Not part of the identity.
    """

    namespace: str
    name: str
    table: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """The identity OpenLineage consumers match on."""
        return (self.namespace, self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatasetRef) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:
        return f"{self.namespace}:{self.name}"


_PARTITION_DIR = re.compile(r"^[^=/]+=[^/]*$")
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfs": "abfss", "wasb": "wasbs"}
_JDBC_ALIASES = {"postgresql": "postgres", "sqlserver": "mssql", "mariadb": "mysql"}


def dataset_for_location(uri: str, table: str | None = None) -> DatasetRef:
    """The dataset a storage URI names, per the naming spec.

    >>> dataset_for_location("file:/tmp/out")
    DatasetRef(namespace='file', name='/tmp/out', table=None)
    >>> dataset_for_location("s3a://bucket/a/b/")
    DatasetRef(namespace='s3://bucket', name='a/b', table=None)
    >>> dataset_for_location("/lake/events/day=2024-01-01/hour=3")
    DatasetRef(namespace='file', name='/lake/events', table=None)
    """
    uri = uri.strip()
    if uri.startswith("jdbc:"):
        return dataset_for_jdbc(uri, None, table=table)
    if "://" not in uri and not uri.startswith("file:"):
        # a bare path: a local file
        return DatasetRef("file", _clean_path(uri) or "/", table)
    parts = urlsplit(uri)
    scheme = _SCHEME_ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    path = unquote(parts.path)
    if scheme == "file":
        if parts.netloc and parts.netloc not in ("", "localhost"):
            return DatasetRef(f"file://{parts.netloc}", _clean_path(path) or "/", table)
        return DatasetRef("file", _clean_path(path) or "/", table)
    if scheme in ("s3", "gs", "abfss", "wasbs", "oss", "cos"):
        key = _clean_path(path).lstrip("/")
        return DatasetRef(f"{scheme}://{parts.netloc}", key or "/", table)
    if scheme in ("hdfs", "viewfs", "dbfs"):
        return DatasetRef(f"{scheme}://{parts.netloc}", _clean_path(path) or "/", table)
    # any other scheme: keep scheme://authority as namespace, path as name
    ns = f"{scheme}://{parts.netloc}" if parts.netloc else scheme
    return DatasetRef(ns, _clean_path(path) or "/", table)


def dataset_for_jdbc(url: str, dbtable: str | None, table: str | None = None) -> DatasetRef:
    """``jdbc:<driver>://host:port/db?...`` + ``dbtable`` -> ``<driver>://host:port`` + ``db.dbtable``."""
    rest = url.removeprefix("jdbc:")
    driver, _, tail = rest.partition(":")
    driver = _JDBC_ALIASES.get(driver.lower(), driver.lower())
    db = ""
    if tail.startswith("//"):
        parts = urlsplit(f"x:{tail}")
        authority = parts.netloc.rsplit("@", 1)[-1]
        db = parts.path.strip("/").split(";", 1)[0]
        ns = f"{driver}://{authority}"
    else:
        # jdbc:derby:memory:db;create=true, jdbc:sqlite:/path ...: no host; keep the locator as the namespace
        locator = tail.split(";", 1)[0].split("?", 1)[0]
        ns = f"{driver}:{locator}" if locator else driver
    name_parts = [p for p in (db, (dbtable or "").strip()) if p]
    return DatasetRef(ns, ".".join(name_parts) or (dbtable or "?"), table)


def symlink_namespace(ref: DatasetRef) -> str:
    """The namespace of a table's ``symlinks`` identifier: the warehouse directory holding it.

    Mirrors openlineage-spark for catalogs without a metastore URI: ``{dataset namespace}`` plus the
    warehouse path (the table location minus ``/<db>.db/<table>`` or ``/<table>``).
    """
    if not ref.table:
        return ref.namespace
    parts = ref.table.split(".")
    tbl = parts[-1].lower()
    path = ref.name.rstrip("/")
    parent = posixpath.dirname(path)
    if posixpath.basename(path).lower() == tbl:
        path = parent
        if path.lower().endswith(".db"):
            path = posixpath.dirname(path)
    if ref.namespace == "file":
        return f"file:{path}"
    return f"{ref.namespace}{path if path.startswith('/') else '/' + path}"


def table_name_without_catalog(table: str) -> str:
    """``spark_catalog.default.t`` -> ``default.t`` (the symlink name openlineage-spark uses)."""
    parts = table.split(".")
    if len(parts) >= 3 and parts[0] == "spark_catalog":
        parts = parts[1:]
    return ".".join(parts)


def _clean_path(path: str) -> str:
    if not path:
        return ""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return without_partition_dirs(norm)


def without_partition_dirs(path: str) -> str:
    """``/t/day=2024-01-01/hour=3`` -> ``/t``: trailing Hive partition folders name part of the table above."""
    parts = path.split("/")
    while len(parts) > 1 and _PARTITION_DIR.match(parts[-1]):
        parts.pop()
    return "/".join(parts) or "/"


def catalog_identifier(name: str) -> str:
    """A catalog table name in Spark's full form: ``t`` / ``db.t`` / ``cat.db.t`` -> ``spark_catalog.default.t``.

    Backticks are dropped and the name is lower-cased (Spark's identifiers are case-insensitive), so
    two spellings of one table compare equal.
    """
    parts = [p.strip("`").lower() for p in name.split(".")]
    if len(parts) == 1:
        parts = ["spark_catalog", "default", *parts]
    elif len(parts) == 2:
        parts = ["spark_catalog", *parts]
    return ".".join(parts)


def asset_uri(namespace: str, name: str) -> str:
    """The Airflow asset URI of an OpenLineage dataset identity (the inverse of Airflow's converters).

    ``file`` + ``/data/t`` -> ``file:///data/t``; ``hdfs://nn:8020`` + ``/data/t`` ->
    ``hdfs://nn:8020/data/t``; ``s3://bucket`` + ``key/t`` -> ``s3://bucket/key/t``. Airflow's
    ``file`` asset converter (apache-airflow-providers-common-io) maps the URI back to the same
    namespace and name, so an asset and the OpenLineage dataset are one thing.
    """
    if "://" not in namespace:
        return f"{namespace}://{name if name.startswith('/') else '/' + name}"
    return f"{namespace.rstrip('/')}/{name.lstrip('/')}"

