"""Developer tooling of the checkout (not in the wheel): ``dev/demo.py``, ``dev/deploy.py`` (``dev/deployment/``)."""
