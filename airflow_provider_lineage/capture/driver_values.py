"""The values the application's Python driver received from Spark: what keeps the code-constant rule sound.

A literal of a later write whose value is a constant of the application's code gets no ``driver round trip`` edge
(capture/driver.py, :func:`~.driver.code_constants`): that keeps ``lit("active")`` edge-free after a config table's
``collect()``. But a value the driver received can *equal* a constant of some loaded module: ``lit(row["email"])``
where ``"x1@m"`` also appears in a test module or an ``ADMIN_EMAIL`` constant, a country code collected from a
table that a helper module also lists. Matching by value alone then drops a real flow, and the longer the process
runs (the more modules it loads) the likelier that is. So the driver also notes the text of every value it
received (:data:`RECEIVED`): a literal equal to a received value is flagged even when it is also a code constant.

The values are read where classic PySpark deserialises what a job returned: ``pyspark.util._load_from_socket``
(``DataFrame.collect``/``take``/``first``/``head``/``tail``, ``toPandas`` with or without Arrow, every RDD action:
``collect``, ``take``, ``first``, ``reduce``, ``collectAsMap`` ...) and ``_local_iterator_from_socket``
(``toLocalIterator`` of both), wrapped in the modules that call them (:func:`install`). A returned text that is a
JSON object or array (``toJSON()``) counts with its fields' values. Only hashes of the values' texts are kept.
Past :data:`MAX_DISTINCT` distinct values or :data:`MAX_SCANNED` values read, an object whose values the scan
cannot enumerate, or a return the Python driver did not receive (a session variable, a JVM action): the rule is off
and every non-trivial literal after a return is flagged (a superset, never a miss).

Not covered: a value the application *computed* in Python from a received one (``row.email.upper()``, a slice)
that happens to equal a constant of its code is still taken for that constant (docs/engine.md).
"""
from __future__ import annotations

import datetime as dt
import decimal
import functools
import json
import threading
from collections.abc import Iterator
from typing import Any

from airflow_provider_lineage.lineage.logs import get_logger

log = get_logger(__name__)

#: Distinct value texts kept (hashes); past this the code-constant rule is off for the process.
MAX_DISTINCT = 100_000
#: Values read in all; past this the scan stops and the rule is off. It bounds what the scan can add to the
#: application's own collects: about 0.35 s for 500,000 values of ``Row`` s, 0.6 s for an Arrow ``toPandas``
#: (measured: 0.74 s per 470,000 row values, 2.8 s per 1,000,000 Arrow values, whose own ``to_pandas`` took 0.44 s).
MAX_SCANNED = 500_000
#: Longest returned text parsed as JSON (``toJSON()`` rows: their fields' values are what the code reads back).
MAX_JSON = 1_000_000
#: How deep rows nest (struct in array in map ...) before a value counts as not enumerable.
MAX_DEPTH = 8
#: ``DriverLog`` function names whose rows reach the Python driver through the hooked functions.
PYTHON_RECEIVED = frozenset({"collectToPython", "tailToPython", "collectAsArrowToPython", "toPythonIterator",
                             "RDD action"})
_MARK = "_apl_driver_values_hook"
#: the modules that call the deserialising functions by a name of their own (``from pyspark.util import ...``)
_MODULES = ("pyspark.util", "pyspark.core.rdd", "pyspark.core.context", "pyspark.sql.classic.dataframe",
            "pyspark.sql.pandas.conversion", "pyspark.rdd", "pyspark.context", "pyspark.sql.dataframe")
_FUNCS = ("_load_from_socket", "_local_iterator_from_socket")


def number_text(text: str) -> str:
    """``"10.0"`` -> ``"10"``, ``"1.0E10"`` -> ``"10000000000"`` (one form for a number however it is written)."""
    try:
        f = float(text)
    except ValueError:
        return text
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


class ReceivedValues:
    """Hashes of the texts of the values the Python driver received (process-wide: the hooks cannot tell sessions
    apart, so one session's values count for all, which only flags more)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hashes: set[int] = set()
        self.scanned = 0
        #: why the values are not all known (then every literal may hold one), or None
        self.incomplete: str | None = None
        #: whether any hook is scanning (a session with driver tracking registered it)
        self.active = False

    def clear(self) -> None:
        """Forget every value (with :meth:`~.driver.DriverLog.clear`: tests sharing one process)."""
        with self._lock:
            self._hashes = set()
            self.scanned = 0
            self.incomplete = None

    def may_hold(self, text: str) -> bool:
        """Whether a literal written as ``text`` may be a value the driver received."""
        if self.incomplete is not None:
            return True
        hashes = self._hashes
        return hash(text) in hashes or hash(number_text(text)) in hashes

    def add(self, item: Any) -> None:
        """Note the values of one returned item (a ``Row``, a tuple, a dict, a scalar, an Arrow batch ...)."""
        if self.incomplete is not None:
            return
        try:
            texts: list[str] = []
            self._texts(item, texts, 0)
        except _Unknown as why:
            self._give_up(str(why))
            return
        except Exception as exc:  # noqa: BLE001 - never fail the user's collect for the capture
            self._give_up(f"a returned value could not be read ({exc!r})"[:200])
            return
        with self._lock:
            self.scanned += len(texts)
            self._hashes.update(hash(t) for t in texts)
            if len(self._hashes) > MAX_DISTINCT:
                self._give_up(f"more than {MAX_DISTINCT} distinct values returned to the driver", locked=True)
            elif self.scanned > MAX_SCANNED:
                self._give_up(f"more than {MAX_SCANNED} values returned to the driver", locked=True)

    def _give_up(self, why: str, locked: bool = False) -> None:
        if locked:
            self.incomplete, self._hashes = why, set()
            return
        with self._lock:
            self.incomplete, self._hashes = why, set()

    def _texts(self, v: Any, out: list[str], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _Unknown("a returned value nested too deep")
        if v is None or isinstance(v, bool):
            return
        if isinstance(v, str):
            out.append(v)
            if len(v) <= MAX_JSON and v[:1] in "{[" and v.rstrip()[-1:] in "}]":  # toJSON(): its fields' values too
                try:
                    parsed = json.loads(v)
                except ValueError:
                    return
                self._texts(parsed, out, depth + 1)
        elif isinstance(v, (bytes, bytearray, memoryview)):
            out.append(bytes(v).decode("utf-8", "replace"))
        elif isinstance(v, (int, float, decimal.Decimal)):
            text = str(v)
            out.extend((text, number_text(text)))
        elif isinstance(v, dt.datetime):
            out.extend((str(v), v.isoformat(), v.isoformat(sep=" ")))
            if v.microsecond:
                out.append(str(v).rstrip("0"))
        elif isinstance(v, (dt.date, dt.time, dt.timedelta)):
            out.append(str(v))
        elif isinstance(v, dict):
            for k, x in v.items():
                self._texts(k, out, depth + 1)
                self._texts(x, out, depth + 1)
        elif isinstance(v, (tuple, list, set, frozenset)):  # Row is a tuple
            for x in v:
                self._texts(x, out, depth + 1)
        elif hasattr(v, "to_pylist") and hasattr(v, "num_rows"):  # an Arrow RecordBatch (toPandas, Arrow)
            if self.scanned + v.num_rows * max(1, v.num_columns) > MAX_SCANNED:
                raise _Unknown(f"more than {MAX_SCANNED} values returned to the driver")
            self._texts(v.to_pylist(), out, depth + 1)
        elif hasattr(v, "tolist") and callable(v.tolist) and hasattr(v, "ndim"):  # a numpy scalar or array
            self._texts(v.tolist(), out, depth + 1)
        elif hasattr(v, "__dict__") and not callable(v):  # an object an RDD function built: its attributes
            out.append(str(v))
            self._texts(vars(v), out, depth + 1)
        else:
            raise _Unknown(f"a returned value of type {type(v).__name__} the capture cannot enumerate")

    def scan(self, items: Any) -> Iterator[Any]:
        """Yield ``items`` unchanged, noting each one's values first."""
        for item in items:
            if self.active and self.incomplete is None:
                self.add(item)
            yield item


class _Unknown(Exception):
    """A returned value whose texts the scan cannot enumerate."""


#: The process's received values (read by :meth:`.driver.DriverLog.for_write`).
RECEIVED = ReceivedValues()


def _wrap(original: Any) -> Any:
    @functools.wraps(original)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        got = original(*args, **kwargs)
        return RECEIVED.scan(got) if RECEIVED.active else got

    setattr(hooked, _MARK, True)
    return hooked


def install() -> None:
    """Wrap PySpark's deserialising functions where they are called (idempotent), and start noting values."""
    import importlib

    with RECEIVED._lock:
        for name in _MODULES:
            try:
                module = importlib.import_module(name)
            except Exception:  # another PySpark layout: nothing of it to wrap
                log.debug("driver values: %s not hooked", name, exc_info=True)
                continue
            for func in _FUNCS:
                original = module.__dict__.get(func)
                if original is not None and not getattr(original, _MARK, False):
                    setattr(module, func, _wrap(original))
        RECEIVED.active = True
