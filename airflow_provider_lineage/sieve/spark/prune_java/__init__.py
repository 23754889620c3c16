"""The Java classes of the Sieve pruning rule (``apl.sieve``), one module per class or small family of classes.

Each module holds a ``SOURCE`` string; :mod:`..prune_rule_source` joins them under one package and import header
into the one compilation unit Janino compiles in the driver JVM (Java 1.4 style: no generics, no lambdas).
"""
