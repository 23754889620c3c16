"""The provider's operators, one module each (their shared helpers are the private package :mod:`._lineage`).

The helper modules that lived here before (``guard``, ``guard_baseline``, ``openlineage_identity``,
``remote_capture``, ``connect_run``, ``lineage_task``) moved to :mod:`._lineage`; an import by the old name
(``from airflow_provider_lineage.operators import guard``, ``import airflow_provider_lineage.operators.guard``) still
gets the moved module itself (the same object, so its settings and patches are shared), never a copy.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

#: old module name -> its home in :mod:`._lineage`
_MOVED = {
    "guard": "guard",
    "guard_baseline": "guard_baseline",
    "openlineage_identity": "openlineage_identity",
    "remote_capture": "remote_capture",
    "connect_run": "connect_run",
    "lineage_task": "task",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``airflow_provider_lineage.operators.<old name>`` to the module in :mod:`._lineage`."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != __name__ or name not in _MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(f"{__name__}._lineage.{_MOVED[spec.name.rpartition('.')[2]]}")

    def exec_module(self, module: ModuleType) -> None:
        """The moved module ran when it was imported under its own name."""


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())
