"""What a deployment is made of: the checkout's folders, process names, the Celery variant's addresses and the
settings tuned for 64 concurrent API readers on 2 cores (issue 47), as module constants."""
from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
PROCESSES = ("api-server", "scheduler", "dag-processor", "triggerer")
DEFAULT_USERS = {"admin": "admin", "viewer": "viewer"}
SPARK_CONN = json.dumps({"conn_type": "spark", "host": "local[2]"})
#: Every process of a deployment carries this variable (value: the deployment's id), so that a
#: process that left its group (setsid) is still found by :meth:`AirflowDeployment.leftovers`.
MARKER = "APL_DEPLOYMENT_ID"
#: Which heartbeat of ``GET /api/v2/monitor/health`` says a process is up.
HEARTBEATS = {"scheduler": ("scheduler", "latest_scheduler_heartbeat"),
              "triggerer": ("triggerer", "latest_triggerer_heartbeat"),
              "dag-processor": ("dag_processor", "latest_dag_processor_heartbeat")}
FINAL_STATES = ("success", "failed")
#: The Celery variant's extra processes: the broker, two workers, the OpenLineage receiver.
CELERY_WORKERS = ("worker-1", "worker-2")
EXECUTORS = ("local", "celery")
PG_BIN = Path(os.environ.get("APL_PG_BIN", "/usr/lib/postgresql/15/bin"))
#: The Celery variant keeps the example DAGs' tables and Sieve indexes in this bucket of a moto S3 server on
#: 127.0.0.1 (``LINEAGE_DEMO_DATA_DIR=s3://apl-lineage-demo/lineage_demo``).
CELERY_BUCKET = "apl-lineage-demo"
#: Hadoop's S3A connector for the Celery variant's Spark jobs, from PyPI (``./dev.sh`` fetches them: see its
#: ``setup_s3a``): hadoop-aws 3.3.1 and the AWS SDK for Java 1.11.901 on pyspark's Hadoop 3.4.2.
S3A_JARS_DIR = Path(os.environ.get("APL_S3A_JARS_DIR") or ROOT / ".work" / "s3a-jars")
S3A_JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
#: Hadoop 3.4's core-default.xml gives these S3A options with time units ("60s"), which hadoop-aws 3.3.1
#: reads as plain numbers (NumberFormatException): the same values in the units 3.3.1 expects.
S3A_NUMERIC_DEFAULTS = {"fs.s3a.threads.keepalivetime": "60", "fs.s3a.connection.establish.timeout": "30000",
                        "fs.s3a.connection.timeout": "200000", "fs.s3a.multipart.purge.age": "86400"}
#: Each Celery worker's own loopback address: its hostname in Airflow (``ti.hostname``) and where its log server
#: listens, on the one ``worker_log_server_port`` the api-server asks every worker on (as on separate hosts).
WORKER_HOSTS = {"worker-1": "127.0.0.2", "worker-2": "127.0.0.3"}


#: How long a start waits for the dag-processor to parse every DAG file (at least; see ``wait_parsed``).
PARSE_TIMEOUT = 300
#: SQLAlchemy pool of every Airflow process (apache/airflow#66493, PR #73422): holds 64 concurrent API readers.
POOL_SIZE = 48
MAX_OVERFLOW = 48
#: 64 concurrent readers on 2 cores (issue 47): one api-server worker process per core (Airflow's default is 1,
#: one core for every request).
API_WORKERS = 2
#: ``[column_lineage] api_admission_limit`` of ``./dev.sh up``: each api-server worker runs at most this many reader
#: requests at once, the others wait in arrival order (``airflow_provider_lineage.plugins.admission``). Airflow's list
#: routes resolve 27-39 sync dependencies, each a thread-pool hop that waits behind every other request in flight on
#: the worker's event loop: with 64 readers in flight the task-instance list took 2.5-3.5 s at p95; with 4 per worker
#: (2 workers on 2 cores) every path <= 1.45 s on a quiet machine in both runs, with 8 up to 2.07 s
#: (issue 47, benchmarks/api_load/REPORT.md).
API_ADMISSION_LIMIT = 4
#: Seconds before the dag-processor parses an *unchanged* DAG file again (Airflow's default: 30). The 8 example files
#: cost ~0.75 s of CPU each per parse: every 30 s that is a fifth of one of the 2 cores, taken from the api-server
#: (issue 47). A new or edited file is parsed at once all the same (file_parsing_sort_mode = modified_time), and a
#: dag-processor parses every file when it starts; :meth:`AirflowDeployment.wait_parsed` takes that parse for a file
#: unchanged since (it used to wait for a new parse of every file, which this interval holds back).
MIN_FILE_PROCESS_INTERVAL = 300
#: seconds an SQLite connection waits for another process's write lock before "database is locked" (sqlite3: 5)
SQLITE_LOCK_WAIT_S = 30


#: The lineage Spark Connect server of ``./dev.sh up`` (process name, the connection it is reached by).
CONNECT_PROCESS = "connect-server"
CONNECT_CONN_ENV = "AIRFLOW_CONN_SPARK_CONNECT_DEFAULT"
