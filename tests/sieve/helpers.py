"""Shared helpers for sieve tests: small Parquet tables written with pyarrow."""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_counter = [0]


def write_file(path: str, keys: Sequence[Any], typ: pa.DataType | None = None) -> None:
    """Write one Parquet file with columns ``k`` (the key) and ``v`` (a payload); bump its mtime."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(
        pa.table({"k": pa.array(list(keys), typ or pa.int64()), "v": pa.array(range(len(keys)), pa.int64())}), path
    )
    _counter[0] += 1
    # Distinct mtimes even within one clock tick, so rewrites are always detected.
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + _counter[0] * 1000))


def exact_files(layout: dict[str, list[int | None]], lo: int | None, hi: int | None) -> set[str]:
    """Files holding a non-null key in [lo, hi]."""
    return {p for p, ks in layout.items()
            if any(k is not None and (lo is None or k >= lo) and (hi is None or k <= hi) for k in ks)}


def matches(pred: object, key: Any) -> bool:
    """Whether one column value satisfies a predicate (any orderable key type; NULL is None)."""
    from airflow_provider_lineage import sieve as S

    if isinstance(pred, S.IsNull):
        return key is None
    if key is None:
        return False
    if isinstance(pred, S.Eq):
        return key == pred.value
    if isinstance(pred, S.In):
        return key in pred.values
    lo_ok = pred.low is None or (key >= pred.low if pred.low_inclusive else key > pred.low)
    hi_ok = pred.high is None or (key <= pred.high if pred.high_inclusive else key < pred.high)
    return lo_ok and hi_ok


def exact_for(layout: dict[str, list[Any]], pred: object) -> set[str]:
    """Files holding a row that matches ``pred`` (the ideal answer an index approximates)."""
    return {p for p, ks in layout.items() if any(matches(pred, k) for k in ks)}


def apply_op(root: str, layout: dict[str, list[Any]], op: tuple[Any, ...], step: int,
             typ: pa.DataType | None = None) -> str:
    """Apply one random table operation to the files under ``root`` and to ``layout``.

    ``op`` is ``("append", keys)``, ``("overwrite", i, keys)``, ``("delete", i)``, ``("copy", i)``
    (append a file with the keys of file ``i``, or of every file with ``i`` < 0: values that recur
    in each new file), ``("span", lo, n)`` (append a file with every key of ``[lo, lo + n]``: full
    files of the segments inside that range) or ``("compact",)`` (``i`` picks an existing file modulo their number).
    Returns what the caller must do next: ``"sync"`` after a change of the table, ``"compact"`` to compact
    the index, ``"none"``.
    """
    names = sorted(layout)
    if op[0] == "append":
        path = f"{root}/g{step}.parquet"
        layout[path] = list(op[1])
        write_file(path, op[1], typ)
        return "sync"
    if op[0] == "span":
        return apply_op(root, layout, ("append", list(range(op[1], op[1] + op[2] + 1))), step, typ)
    if op[0] == "copy" and names:
        keys = ([k for n in names for k in layout[n]] if op[1] < 0 else layout[names[op[1] % len(names)]])
        return apply_op(root, layout, ("append", sorted(set(keys), key=lambda k: (k is None, k))), step, typ)
    if op[0] == "overwrite" and names:
        path = names[op[1] % len(names)]
        layout[path] = list(op[2])
        write_file(path, op[2], typ)
        return "sync"
    if op[0] == "delete" and names:
        path = names[op[1] % len(names)]
        del layout[path]
        os.remove(path)
        return "sync"
    return "compact" if op[0] == "compact" else "none"


def write_layout(root: str, files: Sequence[Sequence[Any]], typ: pa.DataType | None = None) -> dict[str, list[Any]]:
    """Files ``f0.parquet``, ``f1.parquet`` ... under ``root`` with these keys; their layout."""
    layout: dict[str, list[Any]] = {}
    for i, keys in enumerate(files):
        layout[f"{root}/f{i}.parquet"] = list(keys)
        write_file(f"{root}/f{i}.parquet", keys, typ)
    return layout


def race_two_commits(path: str, version: int) -> list[object]:
    """Two writers, each with its own store on ``path``, load manifest ``version`` and commit it on that base at
    once (a barrier lines them up); what each ``commit`` returned (the new version) or raised (CommitConflict)."""
    from airflow_provider_lineage.sieve.errors import CommitConflict
    from airflow_provider_lineage.sieve.storage import IndexStore

    results: list[object] = []
    barrier = threading.Barrier(2)

    def writer() -> None:
        mine = IndexStore(path)
        m = mine.load_manifest(version)
        barrier.wait()
        try:
            results.append(mine.commit(m, version))
        except CommitConflict as exc:
            results.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def replay_ops(initial: Sequence[Sequence[Any]], ops: Sequence[tuple[Any, ...]], *, prefix: str,
               typ: pa.DataType | None = None, every_step: bool = False,
               **build_kwargs: Any) -> Iterator[tuple[str, dict[str, list[Any]]]]:
    """The body of the property tests: a table of files ``initial`` in a new temporary folder, indexed on ``k``
    (``build_kwargs``), then each op applied (:func:`apply_op`) and the index brought up to date, compacted
    after a ``compact`` op, synced otherwise. Yields ``(root, layout)`` after each synced step (with
    ``every_step``: after every step, synced only when the table changed); removes the table at the end."""
    from airflow_provider_lineage import sieve as S

    root = tempfile.mkdtemp(prefix=prefix)
    try:
        layout = write_layout(root, initial, typ)
        S.build(None, root, "k", **build_kwargs)
        for step, op in enumerate(ops):
            todo = apply_op(root, layout, op, step, typ)
            if todo == "compact":
                S.compact(root, "k")
                if not every_step:
                    continue
            elif todo == "sync" or not every_step:
                S.sync(None, root, "k")
            yield root, layout
    finally:
        shutil.rmtree(root, ignore_errors=True)

