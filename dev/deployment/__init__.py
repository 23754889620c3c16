"""The local deployment of ``./dev.sh up`` / ``down`` / ``status`` and of the deployment tests, by concern.

``settings`` (constants and the values tuned for 64 API readers on 2 cores), ``processes`` (ports, process groups,
``/proc``), ``postgres`` (a throw-away PostgreSQL), ``connect`` (the lineage Spark Connect server), ``core``
(:class:`~dev.deployment.core.AirflowDeployment`: environment, start, stop), ``celery_variant`` and ``rest`` (its
mixins: the Celery variant's processes; the REST API side), ``cli`` (the command line). ``dev/deploy.py`` is the
entry point and re-exports every name (``from dev.deploy import AirflowDeployment``).
"""
