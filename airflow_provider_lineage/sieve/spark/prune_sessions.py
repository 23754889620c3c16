"""Sieve pruning for sessions that do not exist yet: every Spark Connect client session of a server.

A Spark Connect server makes each client's session with ``newSession()`` of its root session, and a new session
takes none of the root's ``spark.experimental`` rules, only its ``SparkSessionExtensions``. So
:func:`enable_for_new_sessions` adds the rule of :mod:`.prune` to the root session's extensions as a
"pre-CBO" optimizer rule (it runs once per query, after Spark's own filter push-down, as the extra optimization
does): every session made from the root from then on narrows its Parquet scans, answered by the root's Python
driver (the oracle of :mod:`.prune`, with its caches). The root session itself is enabled too (:func:`.prune.enable`).

Sessions share their root's extensions, and an optimizer asks them for its rules at every query: sessions made
*before* the call narrow their scans from then on too. An extension cannot be removed, so
:func:`disable_for_new_sessions` switches the injected rule off (it then leaves every plan as it is). Spark 3.2 or
later (``injectPreCBORule``).
"""

from __future__ import annotations

import threading
from typing import Any

from . import prune

_CLASS = "apl.sieve.SieveRuleBuilder"
#: ``SparkSession => Rule[LogicalPlan]`` (a ``scala.Function1``) giving every new session the same rule instance
SOURCE = r"""package apl.sieve;

public class SieveRuleBuilder extends scala.runtime.AbstractFunction1 {
    private Object rule;

    public SieveRuleBuilder() {}

    public void setRule(Object rule) { this.rule = rule; }

    public Object apply(Object session) { return rule; }
}
"""

_lock = threading.Lock()
#: SparkSession id -> (the builder, the rule, the oracle) injected into that session's extensions
_injected: dict[int, tuple[Any, Any, prune.Oracle]] = {}
#: the ids of the sessions whose injected rule is on
_on: set[int] = set()


def enable_for_new_sessions(spark: Any) -> None:
    """Prune the Parquet scans of ``spark`` (a classic root session) and of every session made from it from now on
    (Spark Connect client sessions). Idempotent."""
    prune.enable(spark)
    gateway = spark.sparkContext._gateway
    with _lock:
        hit = _injected.get(id(spark))
        if hit is not None:
            hit[1].setOracle(hit[2])
            _on.add(id(spark))
            return
        rule_class = prune._rule_class(gateway)
        compiler = gateway.jvm.org.codehaus.janino.SimpleCompiler()
        compiler.setParentClassLoader(rule_class.getClassLoader())
        compiler.cook(SOURCE)
        builder = compiler.getClassLoader().loadClass(_CLASS).newInstance()
        gateway.detach(compiler)
        rule = rule_class.newInstance()
        oracle = prune.Oracle()
        rule.setOracle(oracle)
        builder.setRule(rule)
        spark._jsparkSession.extensions().injectPreCBORule(builder)
        _injected[id(spark)] = (builder, rule, oracle)
        _on.add(id(spark))


def disable_for_new_sessions(spark: Any) -> None:
    """Switch off the rule :func:`enable_for_new_sessions` gave the sessions of ``spark`` (and :func:`.prune.disable`
    the root's own)."""
    with _lock:
        hit = _injected.get(id(spark))
        if hit is not None:
            hit[1].setOracle(None)
        _on.discard(id(spark))
    prune.disable(spark)


def enabled_for_new_sessions(spark: Any) -> bool:
    """Whether the sessions of ``spark`` get the rule (:func:`enable_for_new_sessions`, not switched off)."""
    with _lock:
        return id(spark) in _on
