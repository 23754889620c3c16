"""The current dataset identity of a *stored* ``(namespace, name)`` pair: the naming rules of
:mod:`.naming` re-applied to a name written by an older version of this provider.

Records already kept (XCom, the estate index, events files) hold the identity their run computed. When
the naming rules change (one identity per dataset: JDBC default ports and lower-case hosts, part files
and globs folded into their folder, partition folders folded into the table, ``s3a``/``s3n`` into
``s3``), :func:`canonical_identity` maps an old pair to what the current rules give for the same
dataset, so that a re-index (``python -m airflow_provider_lineage.plugins.estate reindex``) leaves one
dataset per identity. Pairs it cannot read are returned unchanged; it never raises, and applying it
twice gives what applying it once gives.

Not recoverable from a stored pair (the run's context is gone): a host-less ``hdfs:/p`` (needs the
application's ``fs.defaultFS``), a JDBC ``query`` option's tables, catalog tables named by their catalog
alias instead of their storage. Those identities change only when their jobs run again.
"""
from __future__ import annotations

from airflow_provider_lineage.lineage import naming

#: JDBC namespace schemes whose stored namespace is re-parsed as a JDBC URL
_JDBC_SCHEMES = ("postgres", "postgresql", "mysql", "oracle", "sqlserver")


def canonical_identity(namespace: str, name: str) -> tuple[str, str]:
    """``(namespace, name)`` under the current naming rules (unchanged when no rule applies).

    >>> canonical_identity("s3a://bucket", "data/events/part-00000-1a2b.snappy.parquet")
    ('s3://bucket', 'data/events')
    >>> canonical_identity("postgres://DB.example.com", "shop.public.orders")
    ('postgres://db.example.com:5432', 'shop.public.orders')
    >>> canonical_identity("file", "/data/events/day=2024-01-01")
    ('file', '/data/events')
    """
    try:
        out = _canonical(namespace, name)
    except (ValueError, TypeError, IndexError, AttributeError):  # a pair the rules cannot read stays as it is
        return namespace, name
    if out != (namespace, name) and naming.identity_problem(*out) is not None:
        return namespace, name
    return out


def _canonical(namespace: str, name: str) -> tuple[str, str]:
    scheme = namespace.split(":", 1)[0].lower() if ":" in namespace else namespace.lower()
    if scheme in _JDBC_SCHEMES:
        return _jdbc(namespace, name)
    if namespace == "file" or namespace.startswith("file://"):
        if not name.startswith("/"):  # not a path the rules wrote: leave it
            return namespace, name
        return naming.dataset_for_location(name if namespace == "file" else f"{namespace}{name}").key
    if "://" in namespace and scheme in _FILE_SCHEMES:
        sep = "" if name.startswith("/") else "/"
        return naming.dataset_for_location(f"{namespace}{sep}{name}").key
    if scheme in ("dbfs", "hdfs") and "://" not in namespace and name.startswith("/"):
        return naming.dataset_for_location(f"{scheme}:{name}").key
    return namespace, name


_FILE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos", "cosn",
                           "obs", "r2", "hdfs", "viewfs", "dbfs"})


def _jdbc(namespace: str, name: str) -> tuple[str, str]:
    loc = naming.jdbc_location("jdbc:" + namespace)
    parts = [p for p in name.split(".") if p]
    if loc.database and parts and parts[0].lower() != loc.database.lower() and not loc.qualified_names_keep:
        # the database was kept in the namespace (``;databaseName=db``, ``/db``): it leads the name now
        parts = [loc.database, *parts]
    return loc.namespace, ".".join(parts) if parts else name



def declared_identity(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity of a pair a *user* wrote (a tag declaration), however it is spelled: what
    :func:`canonical_identity` gives, after reading the spellings the naming rules never write themselves:

    * a full location in ``name`` (``"file:///data/customers"``, ``"s3a://bucket/data/customers"``), whatever the
      namespace says;
    * a ``file:``/``file://``/``file:///`` namespace, a bucket namespace with a trailing ``/``;
    * a relative name under a bucket (``"s3a://bucket"`` + ``"data/customers"``), a trailing slash, a partition
      folder, ``s3a``/``s3n`` (as :func:`canonical_identity`).

    Never raises; a pair it cannot read is returned as :func:`canonical_identity` gives it.
    """
    ns, nm = namespace.strip(), name.strip()
    try:
        if "://" in nm or nm.lower().startswith("file:"):
            return naming.dataset_for_location(nm).key
        if ns.lower() in ("file:", "file:/", "file://", "file:///"):
            return naming.dataset_for_location("file://" + "/" + nm.lstrip("/")).key
    except (ValueError, TypeError, IndexError, AttributeError):
        pass
    return canonical_identity(ns.rstrip("/") if "://" in ns and not ns.endswith("://") else ns, nm)


def match_key(namespace: str, name: str) -> tuple[str, str]:
    """What a declaration and a lineage dataset are matched on: :func:`declared_identity` with the namespace's
    authority (host, bucket, account) lower-cased (host names are case-insensitive; bucket and container names
    are lower-case by their stores' rules). The path keeps its case. Never raises.

    >>> match_key("s3a://Bucket/", "/data/customers/")
    ('s3://bucket', 'data/customers')
    """
    return _lower_authority(*declared_identity(namespace, name))


def index_key(namespace: str, name: str) -> tuple[str, str]:
    """The identity a *stored* pair is kept under where datasets are keyed (the estate index, the guard's tag
    maps): :func:`canonical_identity` with the namespace's authority lower-cased as :func:`match_key` does, so
    that ``s3a://Bucket`` and ``s3://bucket``, ``hdfs://NameNode:8020`` and ``hdfs://namenode:8020`` are one
    dataset, and a declaration's :func:`match_key` finds it. Never raises.

    >>> index_key("hdfs://NameNode:8020", "/warehouse/Orders")
    ('hdfs://namenode:8020', '/warehouse/Orders')
    """
    return _lower_authority(*canonical_identity(namespace, name))


def _lower_authority(namespace: str, name: str) -> tuple[str, str]:
    scheme, sep, rest = namespace.partition("://")
    if sep:
        authority, slash, tail = rest.partition("/")
        namespace = f"{scheme.lower()}://{authority.lower()}{slash}{tail}"
    return namespace, name
