"""The provider's operators, one module each; their shared helpers are the private package :mod:`._lineage`."""
