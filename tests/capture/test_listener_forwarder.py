"""The JVM-side filter in front of the capture's py4j SparkContext listeners (capture/listener_forwarder.py), on real
Spark: per-task events never reach Python, the events the listener needs still do, and removal is symmetric."""
from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest

from airflow_provider_lineage.capture import listener_forwarder
from airflow_provider_lineage.capture.session import drain_bus, install

_TASKS = 40


class _Counting:
    """A py4j SparkListenerInterface that counts every callback that reaches Python, by name."""

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def equals(self, other: Any) -> bool:  # Spark's removeSparkListener compares listeners
        return other is self

    def hashCode(self) -> int:
        return id(self) & 0x7FFFFFFF

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on") and name[2:3].isupper():
            def count(*_args: Any) -> None:
                self.calls[name] = self.calls.get(name, 0) + 1
            return count
        raise AttributeError(name)


@pytest.fixture
def callback_server(spark: Any) -> Any:
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)
    return spark.sparkContext


def _many_tasks(spark: Any) -> None:
    assert spark.range(0, _TASKS, 1, numPartitions=_TASKS).count() == _TASKS


def test_forwarder_passes_only_the_chosen_events(spark: Any, callback_server: Any) -> None:
    sc = callback_server
    counting = _Counting()
    added = listener_forwarder.register(sc, counting, other_events=("SparkListenerSQLExecutionEnd",),
                                        job_starts=listener_forwarder.JOBS_ALL)
    try:
        assert listener_forwarder.is_forwarder(added)
        _many_tasks(spark)
        spark.sparkContext.parallelize(range(4), 2).collect()  # a job outside any SQL execution
        assert drain_bus(sc)
        assert set(counting.calls) == {"onJobStart", "onOtherEvent"}, counting.calls
        assert counting.calls["onOtherEvent"] >= 1  # the count()'s execution end
        assert counting.calls["onJobStart"] >= 2
        assert int(added.forwarded()) == sum(counting.calls.values())
    finally:
        listener_forwarder.unregister(sc, added)
    before = dict(counting.calls)
    _many_tasks(spark)
    assert drain_bus(sc)
    assert counting.calls == before  # removed: nothing more reaches Python


@pytest.mark.parametrize("mode, inside, outside", [(listener_forwarder.JOBS_OUTSIDE_SQL, False, True),
                                                   (listener_forwarder.JOBS_INSIDE_SQL, True, False),
                                                   (listener_forwarder.JOBS_NONE, False, False)])
def test_forwarder_filters_job_starts_by_sql_execution(spark: Any, callback_server: Any, mode: int, inside: bool,
                                                       outside: bool) -> None:
    sc = callback_server
    seen: list[bool] = []

    class Jobs(_Counting):
        def onJobStart(self, event: Any) -> None:
            props = event.properties()
            seen.append(props is not None and props.getProperty("spark.sql.execution.id") is not None)

    added = listener_forwarder.register(sc, Jobs(), job_starts=mode)
    try:
        _many_tasks(spark)  # a job inside a SQL execution
        sc.parallelize(range(4), 2).collect()  # outside
        assert drain_bus(sc)
    finally:
        listener_forwarder.unregister(sc, added)
    assert (True in seen) == inside and (False in seen) == outside, seen


def test_driver_jobs_sees_only_what_it_needs(spark: Any) -> None:
    """The capture's DriverJobs behind the forwarder: a 40-task count() costs no per-task Python callback, and an
    RDD action over a DataFrame is still seen."""
    listener = install(spark, lambda _record: None)
    try:
        jobs = listener.driver_jobs
        assert listener_forwarder.is_forwarder(jobs._added)
        assert drain_bus(spark.sparkContext)
        start = jobs.callbacks
        _many_tasks(spark)
        spark.range(3).rdd.map(lambda r: r.id).collect()
        assert drain_bus(spark.sparkContext)
        assert jobs.seen_jobs == 1
        # the count()'s and the rdd's SQL execution ends, the RDD job's start; never 2 x 40 task events
        assert jobs.callbacks - start < 10, jobs.callbacks - start
    finally:
        spark._jsparkSession.listenerManager().unregister(listener)
        listener.close()
    assert jobs._added is None


def test_fallback_registers_the_python_listener_with_one_warning(spark: Any, callback_server: Any, monkeypatch,
                                                                 caplog) -> None:
    sc = callback_server

    def broken(_gateway: Any) -> Any:
        raise RuntimeError("no janino")

    monkeypatch.setattr(listener_forwarder, "forwarder_class", broken)
    monkeypatch.setattr(listener_forwarder, "_warned", False)
    counting = _Counting()
    with caplog.at_level(logging.WARNING):
        added = listener_forwarder.register(sc, counting)
        again = listener_forwarder.register(sc, _Counting())
    try:
        assert not listener_forwarder.is_forwarder(added)
        _many_tasks(spark)
        assert drain_bus(sc)
        assert counting.calls.get("onTaskEnd", 0) >= _TASKS  # every event crosses, as before the forwarder
    finally:
        listener_forwarder.unregister(sc, added)
        listener_forwarder.unregister(sc, again)
    assert sum("could not be compiled" in r.getMessage() for r in caplog.records) == 1
    before = dict(counting.calls)
    _many_tasks(spark)
    assert drain_bus(sc)
    assert counting.calls == before  # removed (py4j's proxy of it, the one that was added)
