"""Compile Java in the Spark driver's JVM with Janino (shipped with Spark): the one helper the cores share.

Core-neutral on purpose: ``capture`` (the plan walker, the listener forwarder) and ``sieve`` (the pruning rule) both
compile Java source kept as Python strings, and the cores may not import each other (``tests/test_architecture.py``),
so this module imports nothing of the package (nor Airflow, nor PySpark: it only talks to a py4j gateway).
"""

from __future__ import annotations

from typing import Any


def janino_class(gateway: Any, anchor: str, source: str, name: str) -> Any:
    """Compile Java ``source`` in the driver JVM with Janino (shipped with Spark) against the class loader of the
    class named ``anchor`` and return the class ``name`` it defines; raises what the compilation raises. The
    compiler and loader proxies are released; the caller caches the class per JVM."""
    jvm = gateway.jvm
    loader = jvm.java.lang.Class.forName(anchor).getClassLoader()
    compiler = jvm.org.codehaus.janino.SimpleCompiler()
    compiler.setParentClassLoader(loader)
    compiler.cook(source)
    cls = compiler.getClassLoader().loadClass(name)
    gateway.detach(compiler)
    gateway.detach(loader)
    return cls
