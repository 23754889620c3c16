"""Column-lineage accuracy and cost benchmark (scenarios C1-C3 of the seed paper plus coverage scenarios).

Entry points: ``python benchmarks/lineage/run.py`` (accuracy + cost, writes REPORT.md) and
``python benchmarks/lineage/cost.py`` (cost only).
"""
