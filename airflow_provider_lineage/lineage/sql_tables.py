"""The tables a SQL query reads and where its columns come from: for JDBC reads with the ``query`` option.

``openlineage-sql`` (the parser openlineage-spark uses, installed with Airflow's OpenLineage provider)
when importable, else ``sqlglot``. Both imported lazily: only JDBC queries need them.
"""
from __future__ import annotations

from dataclasses import dataclass

_DIALECTS = {"postgresql": "postgres", "sqlserver": "mssql", "derby": "generic", "oracle": "oracle", "mysql": "mysql"}


@dataclass
class ParsedQuery:
    """:param tables: qualified names of the tables read, in order. :param columns: output column ->
    ``[(table, column)]``, or ``None`` when the parser gave none. :param reason: why it is partial."""

    tables: list[str]
    columns: dict[str, list[tuple[str, str]]] | None = None
    reason: str | None = None
    parser: str = ""


def parse_query(sql: str, dialect: str | None = None) -> ParsedQuery:
    """Tables and column origins of ``sql``; never raises (``reason`` says what went wrong)."""
    try:
        import openlineage_sql
    except ImportError:
        openlineage_sql = None
    if openlineage_sql is not None:
        try:
            meta = openlineage_sql.parse([sql], dialect=_DIALECTS.get((dialect or "").lower(), "generic"))
        except Exception as exc:  # noqa: BLE001 - a parse failure is a marked reason, never an error
            meta, err = None, repr(exc)
        else:
            err = "; ".join(str(e) for e in meta.errors) if meta is not None and meta.errors else None
        if meta is not None and not err and meta.in_tables:
            tables = [t.qualified_name for t in meta.in_tables]
            cols: dict[str, list[tuple[str, str]]] = {}
            for cl in meta.column_lineage:
                cols[cl.descendant.name] = [
                    (c.origin.qualified_name, c.name) for c in cl.lineage if c.origin is not None
                ]
            return ParsedQuery(
                tables, cols or None, None if cols else "openlineage-sql mapped no column", "openlineage-sql"
            )
        if err:
            return ParsedQuery([], None, f"openlineage-sql: {err[:200]}", "openlineage-sql")
    return _sqlglot(sql, dialect)


def _sqlglot(sql: str, dialect: str | None) -> ParsedQuery:
    try:
        import sqlglot
        from sqlglot import exp
        from sqlglot.lineage import lineage
    except ImportError:
        return ParsedQuery([], None, "neither openlineage-sql nor sqlglot is installed")
    dia = {"postgresql": "postgres", "sqlserver": "tsql"}.get((dialect or "").lower(), (dialect or "").lower() or None)
    try:
        tree = sqlglot.parse_one(sql, read=dia if dia in sqlglot.Dialect.classes else None)
    except Exception as exc:  # noqa: BLE001 - any parse failure is reported as the query's reason
        return ParsedQuery([], None, f"sqlglot: {str(exc)[:200]}", "sqlglot")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    tables = []
    for t in tree.find_all(exp.Table):
        if t.name in ctes:
            continue
        name = ".".join(p for p in (t.catalog, t.db, t.name) if p)
        if name not in tables:
            tables.append(name)
    cols: dict[str, list[tuple[str, str]]] = {}
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    try:
        for proj in (select.expressions if select is not None else []):
            out = proj.alias_or_name
            node = lineage(out, tree, schema=None, dialect=dia)
            origins = []
            for leaf in node.walk():
                if not leaf.downstream and isinstance(leaf.expression, exp.Table):
                    t = leaf.expression
                    origins.append((".".join(p for p in (t.catalog, t.db, t.name) if p), leaf.name.split(".")[-1]))
            cols[out] = origins
    except Exception as exc:  # noqa: BLE001 - tables kept, the column lineage failure becomes the reason
        return ParsedQuery(tables, None, f"sqlglot column lineage: {str(exc)[:200]}", "sqlglot")
    return ParsedQuery(tables, cols or None, None, "sqlglot")
