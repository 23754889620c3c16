"""Dataset identity per the OpenLineage naming spec (namespace + name), plus the table symlink.

One physical dataset gets one identity whatever API reached it (docs/lineage.md, "Dataset names"):

* files: ``file`` + absolute path; ``file://host`` + path for a remote file system; ``hdfs://nn:port``,
  ``viewfs://cluster``, ``dbfs`` (no authority) + path; object stores (``s3``, ``gs``, ``abfss``,
  ``wasbs``, ``oss``, ``cos``) ``scheme://bucket`` + key without the leading slash (``s3a``/``s3n`` fold
  into ``s3``). A host-less ``hdfs:/p`` takes its authority from ``fs.defaultFS`` (captured by the driver).
* a glob (``/src/*.parquet``) names the folder above its first wildcard; Spark part files
  (``part-00000-....parquet``) name their folder (the driver also replaces any file it reads by its
  folder, as openlineage-spark's ``PlanUtils.getDirectoryPath`` does).
* Hive-style partition folders at the end of a path (``.../events/day=2024-01-01/hour=3``) name a part
  of the table above them and are folded into it (``.../events``) unless
  ``AIRFLOW_LINEAGE_FOLD_PARTITION_FOLDERS=false`` (openlineage-spark's behaviour: the folder as read).
* JDBC: the OpenLineage Java client's rules (``JdbcDatasetUtils`` and its extractors): see
  :func:`dataset_for_jdbc`.
* a catalog table with a storage location is identified by its location; the table name travels as
  ``table`` and becomes a ``symlinks`` facet whose namespace is the table's folder's parent (or
  ``hive://host:port`` with a Hive metastore, ``arn:aws:glue:...`` with Glue: ``table_namespace``).
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True, order=True)
class DatasetRef:
    """An OpenLineage dataset identity.

    :param namespace: naming-spec namespace (``file``, ``s3://bucket`` ...).
    :param name: naming-spec name (absolute path, object key, ``db.schema.table``).
    :param table: catalog identifier (``spark_catalog.default.t``) when the dataset is a catalog
        table; published as a ``symlinks`` facet. Not part of the identity.
    :param table_namespace: the symlink's namespace when the catalog says it (``hive://h:9083`` for a
        Hive metastore, ``arn:aws:glue:region:account`` for Glue); else derived from the location.
        Not part of the identity.
    """

    namespace: str
    name: str
    table: str | None = None
    table_namespace: str | None = field(default=None, compare=False)

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
#: schemes whose name is an object key (no leading slash), per the naming spec
_OBJECT_STORES = frozenset({"s3", "gs", "abfss", "wasbs", "oss", "cos", "cosn", "obs", "r2"})
_GLOB = re.compile(r"[*?\[{]")
_PART_FILE = re.compile(r"^part-\d{5}")
FOLD_PARTITIONS_ENV = "AIRFLOW_LINEAGE_FOLD_PARTITION_FOLDERS"


def fold_partition_folders() -> bool:
    """The ``AIRFLOW_LINEAGE_FOLD_PARTITION_FOLDERS`` setting (default true: fold into the table root)."""
    return os.environ.get(FOLD_PARTITIONS_ENV, "true").strip().lower() not in ("0", "false", "no", "off")


def dataset_for_location(
    uri: str, table: str | None = None, *, default_fs: str | None = None, table_namespace: str | None = None
) -> DatasetRef:
    """The dataset a storage URI names, per the naming spec.

    :param uri: a path or URI (``file:/p``, ``s3a://b/k``, ``/p``, ``hdfs:/p``, a glob, a part file).
    :param table: the catalog table stored there (becomes the symlink).
    :param default_fs: Hadoop's ``fs.defaultFS`` of the application, for host-less ``hdfs:/p``.
    :param table_namespace: the symlink namespace when the catalog defines it (Hive metastore, Glue).

    >>> dataset_for_location("file:/tmp/out")
    DatasetRef(namespace='file', name='/tmp/out', table=None, table_namespace=None)
    >>> dataset_for_location("s3a://bucket/a/b/").key
    ('s3://bucket', 'a/b')
    """
    uri = uri.strip()
    if uri[:5].lower() == "jdbc:":
        return dataset_for_jdbc(uri, None, table=table)
    uri = _folder_of(uri)
    if "://" not in uri and not re.match(r"^[A-Za-z][\w+.-]*:/", uri):
        # a bare path: a local file
        return DatasetRef("file", _clean_path(uri) or "/", table, table_namespace)
    parts = urlsplit(uri)
    scheme = _SCHEME_ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    path = unquote(parts.path)
    netloc = parts.netloc
    if scheme == "file":
        if netloc and netloc.lower() != "localhost":
            return DatasetRef(f"file://{netloc.lower()}", _clean_path(path) or "/", table, table_namespace)
        return DatasetRef("file", _clean_path(path) or "/", table, table_namespace)
    if scheme in _OBJECT_STORES:
        key = _clean_path(path).lstrip("/")
        return DatasetRef(f"{scheme}://{netloc}", key or "/", table, table_namespace)
    if not netloc and scheme == "hdfs" and default_fs:
        dfs = urlsplit(default_fs.strip())
        if dfs.scheme.lower() == "hdfs" and dfs.netloc:
            netloc = dfs.netloc
    if not netloc:
        # dbfs:/p, hdfs:/p without fs.defaultFS: the scheme alone (PathUtils: no authority -> scheme)
        return DatasetRef(scheme, _clean_path(path) or "/", table, table_namespace)
    return DatasetRef(f"{scheme}://{netloc}", _clean_path(path) or "/", table, table_namespace)


def _folder_of(uri: str) -> str:
    """A glob or a Spark part file -> the folder holding it (the dataset its writer published)."""
    head, sep, tail = uri.partition("://")
    if not sep:
        head, tail = "", uri
    m = re.match(r"^([^/]*)(/.*)?$", tail) if sep else None
    authority, path = (m.group(1), m.group(2) or "") if m else ("", tail)
    segments = path.split("/")
    for i, seg in enumerate(segments):
        if _GLOB.search(seg):
            segments = segments[:i]
            break
    else:
        if segments and _PART_FILE.match(segments[-1]):
            segments = segments[:-1]
    path = "/".join(segments) or ("/" if path.startswith("/") else "")
    return f"{head}://{authority}{path}" if sep else path


# -- JDBC ---------------------------------------------------------------------------------------
#: scheme prefix -> (namespace scheme, default port), as the Java client's extractors
_JDBC_DEFAULT_PORTS = {"postgres": ("postgres", "5432"), "mysql": ("mysql", "3306"), "oracle": ("oracle", "1521")}


@dataclass(frozen=True)
class JdbcLocation:
    """Where a JDBC URL points (the Java client's ``JdbcLocation``): namespace parts and the database."""

    scheme: str
    authority: str | None = None
    instance: str | None = None
    database: str | None = None
    qualified_names_keep: bool = False  # MySQL: ``db.t`` in dbtable is already qualified

    @property
    def namespace(self) -> str:
        if self.scheme == "derby" and self.instance:
            return f"derby:{self.instance}"
        out = self.scheme.lower() + ":"
        if self.authority:
            out = f"{out}//{self.authority.lower()}"
        if self.instance:
            out = f"{out}/{self.instance.lstrip('/')}"
        return out

    def name(self, parts: list[str]) -> str:
        if self.qualified_names_keep and len(parts) >= 2:
            return ".".join(parts)
        return ".".join([self.database, *parts] if self.database else parts)


def jdbc_location(url: str) -> JdbcLocation:
    """Parse a JDBC URL as the OpenLineage Java client does (``JdbcDatasetUtils``' extractors).

    :raises ValueError: the URL has no form the client understands.
    """
    uri = re.sub(r"^(?i:jdbc:)", "", url.strip())
    low = uri.lower()
    if low.startswith("sqlserver"):
        return _sqlserver(uri)
    if low.startswith("oracle"):
        rest = re.sub(r"^.*@(//)?", "", uri)
        rest = re.sub(r"\?.*$", "", rest)
        if "(" in rest:
            raise ValueError("Oracle TNS descriptors are not supported (as in the OpenLineage Java client)")
        rest = re.sub(r"^\w+://", "", rest)
        if ":" in rest:
            comps = rest.split(":")
            last = comps[-1]
            if not ("]" in last or last.isdigit() or "/" in last):
                rest = ":".join(comps[:-1]) + "/" + last  # host:1521:sid -> host:1521/sid
        return _overriding("oracle://" + rest, "oracle", "1521")
    if low.startswith("postgres"):
        return _overriding(uri, "postgres", "5432")
    if low.startswith("mysql"):
        loc = _overriding(re.sub(r"^[\w+:]+://", "mysql://", uri), "mysql", "3306")
        return JdbcLocation(loc.scheme, loc.authority, loc.instance, loc.database, qualified_names_keep=True)
    if low.startswith("derby:"):
        return _derby(uri)
    return _generic(uri)


def _generic(uri: str) -> JdbcLocation:
    m = re.match(r"^(?P<scheme>[\w+.-]+)://(?P<rest>.*)$", uri)
    if not m:
        # jdbc:sqlite:/path, jdbc:h2:mem:x: no host; keep the locator (credentials dropped)
        scheme, _, tail = uri.partition(":")
        locator = tail.split(";", 1)[0].split("?", 1)[0]
        if not scheme or not locator:
            raise ValueError(f"unsupported JDBC URL {uri!r}")
        return JdbcLocation(scheme, None, locator, None)
    scheme, rest = m.group("scheme"), m.group("rest")
    rest = rest.split("?", 1)[0].split(";", 1)[0]
    authority, _, path = rest.partition("/")
    authority = authority.rsplit("@", 1)[-1]
    if not authority:
        raise ValueError(f"JDBC URL {uri!r} has no host")
    database = path.strip("/").split("/", 1)[0] or None
    return JdbcLocation(scheme, authority, None, database)


def _overriding(uri: str, scheme: str, port: str) -> JdbcLocation:
    loc = _generic(uri)
    hosts = []
    for host in (loc.authority or "").split(","):
        if host and not re.match(r"^[\[\]\w.-]+:\d+$", host):
            host = f"{host}:{port}"
        hosts.append(host)
    return JdbcLocation(scheme, ",".join(hosts) or None, loc.instance, loc.database)


def _sqlserver(uri: str) -> JdbcLocation:
    m = re.match(r"(?:\w+)://(?P<host>[\w.-]+)?(?:\\(?P<instance>\w+))?(?::(?P<port>\d+))?(?P<params>.*)", uri)
    if not m:
        raise ValueError(f"unsupported SQL Server JDBC URL {uri!r}")
    props: dict[str, str] = {}
    for p in (m.group("params") or "").lstrip(";").split(";"):
        k, eq, v = p.partition("=")
        if eq and k and "=" not in v:
            props[k.strip().lower()] = v.strip()
    host = m.group("host") or props.get("servername")
    if not host:
        raise ValueError(f"SQL Server JDBC URL {uri!r} has no host")
    port = m.group("port") or props.get("portnumber")
    instance = m.group("instance") or props.get("instancename")
    database = props.get("databasename") or props.get("database")
    return JdbcLocation("sqlserver", f"{host}:{port}" if port else host, instance, database)


def _derby(uri: str) -> JdbcLocation:
    """Derby: an in-memory database keeps ``derby:memory:<db>``; a file database is ``file`` + its path.

    The Java client names every Derby database ``file:{derby.system.home or user.dir}/{databaseName or
    metastore_db}``, which depends on the driver's working directory: a deliberate difference.
    """
    body = uri[len("derby:"):].split(";", 1)[0]
    m = re.search(r"databaseName=([^;]+)", uri)
    if body.startswith("memory:"):
        return JdbcLocation("derby", None, f"memory:{body[len('memory:'):]}".replace("/", ":"), None)
    path = m.group(1) if m and not body else body
    path = re.sub(r"^(directory|classpath|jar):", "", path)
    return JdbcLocation("file", None, posixpath.normpath(path) if path.startswith("/") else path, None)


def dataset_for_jdbc(url: str, dbtable: str | None, table: str | None = None) -> DatasetRef:
    """``jdbc:<driver>://host[:port]/db`` + ``dbtable`` -> the Java client's namespace and name.

    Lower-case scheme and host, the default port of PostgreSQL (5432), MySQL (3306) and Oracle (1521),
    SQL Server's ``;databaseName=`` and ``\\instance``, Oracle thin URLs (``@host:1521:SID``,
    ``@//host:1521/service``), MySQL ``db.table`` kept as given. The name is the URL's database, then
    ``dbtable`` split on dots. An unparseable URL keeps ``dbtable`` as name and the URL without
    credentials as namespace (the Java client's fallback).
    """
    # quoted identifiers ("app"."t5", `db`.`t`, [dbo].[t]) name the same table as the catalog's app.t5
    parts = [p.strip().strip('"`[]') for p in (dbtable or "").strip().split(".") if p.strip()] or ["?"]
    try:
        loc = jdbc_location(url)
    except ValueError:
        return DatasetRef(_sanitize_jdbc(url), ".".join(parts), table)
    return DatasetRef(loc.namespace, loc.name(list(parts)), table)


# -- Kafka -------------------------------------------------------------------------------------------
#: Source/sink options that name Kafka topics and brokers (lower case, as ``CaseInsensitiveStringMap`` keys).
KAFKA_OPTIONS = ("kafka.bootstrap.servers", "subscribe", "assign", "subscribepattern", "topic")


def kafka_namespace(bootstrap_servers: str) -> str:
    """``kafka://{bootstrap server host}:{port}`` of the first server listed (naming spec); a listener's security
    protocol prefix (``SASL_SSL://``) is dropped, the host lower-cased, a missing port is Kafka's 9092."""
    first = (bootstrap_servers or "").split(",")[0].strip()
    first = re.sub(r"^[A-Za-z_]+://", "", first).rstrip("/")
    host, sep, port = first.rpartition(":") if first.count(":") == 1 or first.startswith("[") else ("", "", "")
    if not sep:
        host, port = first, "9092"
    return f"kafka://{host.lower()}:{port or '9092'}"


def kafka_topics(options: dict[str, str]) -> list[str]:
    """The topics a Kafka source reads or a sink writes: ``topic`` (sink), ``subscribe`` (comma list) or ``assign``
    (JSON ``{"topic": [partitions]}``); empty for ``subscribePattern`` (the topics are not known from the plan)."""
    import json

    opts = {k.lower(): v for k, v in options.items()}
    if opts.get("topic"):
        return [opts["topic"].strip()]
    if opts.get("subscribe"):
        return [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
    if opts.get("assign"):
        try:
            return [str(t) for t in json.loads(opts["assign"])]
        except (ValueError, TypeError):
            return []
    return []


def datasets_for_kafka(options: dict[str, str]) -> list[DatasetRef]:
    """One dataset per topic (namespace :func:`kafka_namespace`, name = topic); empty without brokers or topics."""
    opts = {k.lower(): v for k, v in options.items()}
    servers = opts.get("kafka.bootstrap.servers")
    if not servers:
        return []
    namespace = kafka_namespace(servers)
    return list(dict.fromkeys(DatasetRef(namespace, topic) for topic in kafka_topics(opts)))


def is_kafka(fmt: str | None, options: dict[str, str] | None) -> bool:
    return "kafka" in (fmt or "").lower() or any(k.lower() == "kafka.bootstrap.servers" for k in options or {})


def _sanitize_jdbc(url: str) -> str:
    uri = re.sub(r"^(?i:jdbc:)", "", url.strip())
    uri = re.sub(r"//[^/@]*@", "//", uri)
    return re.sub(r"[;?&](user|password|username|pwd)=[^;&]*", "", uri, flags=re.IGNORECASE)


# -- catalog tables --------------------------------------------------------------------------------
def symlink_namespace(ref: DatasetRef) -> str:
    """The namespace of a table's ``symlinks`` identifier.

    ``ref.table_namespace`` when the catalog gave one (Hive metastore ``hive://host:port``, Glue);
    otherwise openlineage-spark's ``PathUtils.fromCatalogTable``: the table location's parent folder
    (``file:/wh`` for ``file:/wh/t``, ``file:/wh/db.db`` for ``file:/wh/db.db/t``).
    """
    if ref.table_namespace:
        return ref.table_namespace
    path = ref.name.rstrip("/")
    parent = posixpath.dirname(path) if "/" in path else ""
    if ref.namespace == "file":
        return f"file:{parent or '/'}"
    if "://" in ref.namespace:
        return f"{ref.namespace}{'/' if parent and not parent.startswith('/') else ''}{parent}"
    return f"{ref.namespace}:{parent or '/'}"


def hive_symlink_namespace(metastore_uris: str) -> str | None:
    """``thrift://h:9083,thrift://h2:9083`` -> ``hive://h:9083`` (openlineage-spark uses the first URI)."""
    first = (metastore_uris or "").split(",")[0].strip()
    if not first:
        return None
    parts = urlsplit(first)
    if not parts.hostname:
        return None
    return f"hive://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def glue_symlink_namespace(region: str, account: str) -> str:
    """openlineage-spark's Glue symlink namespace for a Hive table through the Glue client factory."""
    return f"aws:glue:{region}:{account}"


def table_name_without_catalog(table: str) -> str:
    """``spark_catalog.default.t`` -> ``default.t``, ``ice.db.t`` -> ``db.t``: the symlink name openlineage-spark
    uses (``PathUtils.nameFromTableIdentifier`` for V1 tables, ``Identifier.toString()`` in the Iceberg and
    Delta handlers: namespace + name, without the catalog)."""
    parts = re.findall(r"`(?:[^`]|``)*`|[^.]+", table)  # a backticked part may hold dots (a path identifier)
    if len(parts) >= 3:
        parts = parts[1:]
    return ".".join(parts)


def quote_if_needed(part: str) -> str:
    """Spark's ``quoteIfNeeded``: a part that is not ``[A-Za-z0-9_]+`` is backticked (as ``Identifier.toString``)."""
    return part if re.fullmatch(r"[A-Za-z0-9_]+", part) else "`" + part.replace("`", "``") + "`"


def iceberg_symlink_namespace(catalog_conf: dict[str, str]) -> str | None:
    """The symlink namespace of an Iceberg catalog's tables from its ``spark.sql.catalog.<name>.*`` settings
    (openlineage-spark ``IcebergHandler`` + its catalog type handlers): ``type=hive`` (the default) with
    ``uri=thrift://h:9083`` -> ``hive://h:9083``; ``type=rest`` -> the catalog ``uri``; ``type=hadoop`` -> the
    ``warehouse`` location. ``None`` otherwise (the table location's folder is used)."""
    kind = (catalog_conf.get("type") or "").lower()
    uri = catalog_conf.get("uri") or ""
    if kind in ("", "hive") and uri.startswith("thrift://"):
        return hive_symlink_namespace(uri)
    if kind == "rest" and uri:
        return uri.rstrip("/")
    if kind == "hadoop" and catalog_conf.get("warehouse"):
        wh = dataset_for_location(catalog_conf["warehouse"])
        return symlink_namespace(DatasetRef(wh.namespace, wh.name.rstrip("/") + "/x", "t"))
    return None


def _clean_path(path: str) -> str:
    if not path:
        return ""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return without_partition_dirs(norm) if fold_partition_folders() else norm


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


# -- the guard ------------------------------------------------------------------------------------
_JAVA_CLASS = re.compile(r"\b(?:org|com|io|java|javax|scala|net)\.[a-z_][\w]*\.(?:[\w$]+\.)*[A-Z][\w$]*")
_OBJECT_HASH = re.compile(r"[A-Za-z_$][\w$]*@[0-9a-f]{5,}\b")
_PLAN_TEXT = re.compile(
    r"Resolved(?:Identifier|Table|DBObjectName)|UnresolvedRelation|DataSourceV2Relation|LogicalRelation|"
    r"\+- |:- |\bRelation\[|#\d+L?\b"
)


def identity_problem(namespace: str, name: str) -> str | None:
    """Why ``(namespace, name)`` cannot be a dataset identity, or ``None`` when it is a fine one.

    Refused: empty parts, control characters (newlines), Java object hashes (``Foo@2e385d57``), Java class
    names and Catalyst plan text: such a name changes from run to run and makes an orphan dataset.
    """
    for label, text in (("namespace", namespace), ("name", name)):
        if not text or not text.strip():
            return f"empty dataset {label}"
        if any(ord(c) < 32 for c in text):
            return f"dataset {label} {text[:80]!r} holds a control character (newline)"
        if _OBJECT_HASH.search(text):
            return f"dataset {label} {text[:80]!r} holds a JVM object hash"
        if _JAVA_CLASS.search(text):
            return f"dataset {label} {text[:80]!r} holds a Java class name"
        if _PLAN_TEXT.search(text):
            return f"dataset {label} {text[:80]!r} holds Spark plan text"
    return None


def asset_uri(namespace: str, name: str) -> str:
    """The Airflow asset URI of an OpenLineage dataset identity (the inverse of Airflow's converters).

    Files and object stores: ``file`` + ``/data/t`` -> ``file:///data/t``; ``hdfs://nn:8020`` +
    ``/data/t`` -> ``hdfs://nn:8020/data/t``; ``s3://bucket`` + ``key/t`` -> ``s3://bucket/key/t``.
    Databases in each Airflow provider's own form (its ``sanitize_uri``): ``postgres://h:5432/db/schema/t``,
    ``mysql://h:3306/db/t``, ``trino://h:8080/catalog/schema/t``; other JDBC-style namespaces join the
    dotted name with slashes.
    """
    if "://" not in namespace:
        return f"{namespace}://{name if name.startswith('/') else '/' + name}"
    scheme = namespace.split("://", 1)[0]
    if scheme in _DB_SCHEMES:
        parts = name.split(".")
        if scheme in ("postgres", "redshift") and len(parts) == 2:
            parts = [parts[0], "default", parts[1]]  # the provider's sanitize_uri: an empty schema is "default"
        return f"{namespace.rstrip('/')}/{'/'.join(parts)}"
    return f"{namespace.rstrip('/')}/{name.lstrip('/')}"


#: namespaces whose name is a dotted database path: their Airflow asset URIs use slashes
_DB_SCHEMES = frozenset(
    {"postgres", "mysql", "trino", "sqlserver", "mssql", "oracle", "redshift", "teradata", "db2", "snowflake",
     "hive", "crate", "oceanbase", "vertica", "clickhouse"}
)
