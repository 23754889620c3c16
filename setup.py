"""Shim for tools that still run ``setup.py``: everything is declared in ``pyproject.toml``."""
from setuptools import setup

setup()
