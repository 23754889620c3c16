#!/usr/bin/env bash
# One entry point for people and CI.
#   ./dev.sh demo     set up .venv and run the example pipeline (example DAG, local Spark, lineage to a file)
#   ./dev.sh test     set up .venv, run ruff check and the test suite (what .ci/run calls)
#   ./dev.sh setup    only build/refresh .venv
#   ./dev.sh bench    run the benchmark scripts (see benchmarks/README.md); extra args go to them
#   ./dev.sh airflow ARGS...   the airflow CLI with the embedded defaults, e.g. `./dev.sh airflow dags test my_dag`
#   ./dev.sh up [--port N] [--db postgres] [--executor celery] [--marquez-url URL]   a real local deployment (api-server, scheduler,
#                     dag-processor, triggerer; LocalExecutor; dags/); prints the UI URL and logins (dev/deploy.py)
#   ./dev.sh down     stop exactly what `up` started (its process groups)
#   ./dev.sh docs     build the documentation (docs/, MkDocs, --strict: broken links fail) into .work/site
# Needs: Python >= 3.11 (python3, or $PYTHON) and Java 17 (java on PATH or $JAVA_HOME).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
VENV=${VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

die() { echo "dev.sh: $*" >&2; exit 1; }

check_prereqs() {
  command -v "$PY" >/dev/null || die "no '$PY' on PATH: install Python 3.11+ or set PYTHON=/path/to/python3.11"
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "$PY is $("$PY" -V 2>&1); Python 3.11+ is needed: set PYTHON=/path/to/python3.11"
  if [ -n "${JAVA_HOME:-}" ]; then JAVA="$JAVA_HOME/bin/java"; else JAVA=$(command -v java || true); fi
  [ -n "$JAVA" ] && [ -x "$JAVA" ] || die "no java found: install a Java 17 runtime (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
}

setup() {
  check_prereqs
  local stamp="$VENV/.installed-$(cat pyproject.toml setup.py | sha1sum | cut -c1-12)"
  if [ -f "$stamp" ]; then return 0; fi
  echo "dev.sh: building $VENV (first run takes about a minute)" >&2
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv>=0.4"
  "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" -e ".[dev]"
  rm -f "$VENV"/.installed-*
  touch "$stamp"
}

# The browser tests (tests/plugins/) drive Debian's chromium through chromium-driver: no browser
# download is possible, so the system packages are installed when missing (as root via apt-get).
setup_chromium() {
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "dev.sh: installing Debian's chromium + chromium-driver for the browser tests" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        chromium chromium-driver fonts-dejavu-core; } >&2 \
      || die "apt-get could not install chromium chromium-driver: install them by hand (the browser tests need them)"
  else
    echo "dev.sh: chromium/chromedriver missing and not root: run 'sudo apt-get install chromium chromium-driver'" \
      "(the browser tests in tests/plugins/ fail under CI without them)" >&2
  fi
}

# The deployment tests (tests/deployment) also run on PostgreSQL: Debian's server binaries.
setup_postgres() {
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "dev.sh: installing Debian's postgresql (for the deployment tests)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
      || die "apt-get install postgresql failed (see above)"
  else
    echo "dev.sh: PostgreSQL is missing and this is not root: the PostgreSQL deployment test will fail;" \
         "install it with 'sudo apt-get install postgresql' (or run ./dev.sh setup as root)" >&2
  fi
}

# The Celery variant of ./dev.sh up (--executor celery) uses Debian's redis-server as its broker.
setup_redis() {
  command -v redis-server >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "dev.sh: installing Debian's redis-server (broker of the Celery deployment)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      redis-server >/dev/null || die "apt-get install redis-server failed (see above)"
  else
    echo "dev.sh: redis-server is missing and this is not root: ./dev.sh up --executor celery needs it;" \
         "install it with 'sudo apt-get install redis-server' (or run ./dev.sh setup as root)" >&2
  fi
}

run_env() {
  # Every Spark driver, Python worker and Airflow task is a new interpreter: with PYTHONDONTWRITEBYTECODE
  # set (as on CI machines) each compiled pyspark, airflow and openlineage from source again (8.8 s ->
  # 3.6 s to import them here once cached). Bytecode goes to .venv and this checkout's __pycache__.
  unset PYTHONDONTWRITEBYTECODE
  export PATH="$VENV/bin:$PATH"
  export AIRFLOW_HOME=${AIRFLOW_HOME:-$ROOT/.airflow}
  export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
  export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$VENV/bin/python}
  export PYSPARK_DRIVER_PYTHON=${PYSPARK_DRIVER_PYTHON:-$VENV/bin/python}
}

# The embedded defaults of the demo, for any DAG: each applies only when not set already.
airflow_env() {
  export AIRFLOW__CORE__LOAD_EXAMPLES=${AIRFLOW__CORE__LOAD_EXAMPLES:-False}
  export AIRFLOW__CORE__DAGS_FOLDER=${AIRFLOW__CORE__DAGS_FOLDER:-$ROOT/dags}
  export AIRFLOW_CONN_SPARK_DEFAULT=${AIRFLOW_CONN_SPARK_DEFAULT:-'{"conn_type": "spark", "host": "local[2]"}'}
  mkdir -p "$AIRFLOW_HOME"
  local marker="$AIRFLOW_HOME/.apl-db-migrated-$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("apache-airflow"))')"
  if [ ! -f "$marker" ]; then
    echo "dev.sh: initialising the Airflow metadata DB in $AIRFLOW_HOME (once)" >&2
    "$VENV/bin/airflow" db migrate >/dev/null && touch "$marker"
  fi
}

cmd=${1:-}
shift || true
case "$cmd" in
  setup) setup; setup_postgres; setup_chromium; setup_redis ;;
  demo) setup; run_env; exec "$VENV/bin/python" dev/demo.py "$@" ;;
  test) setup; setup_postgres; setup_chromium; run_env; "$VENV/bin/ruff" check --quiet . || die "ruff check failed (see above): fix the findings, or mark a deliberate one with # noqa: CODE - why"
        exec "$VENV/bin/python" -m pytest -n 2 --dist loadfile "$@" ;;
  airflow) setup; run_env; airflow_env; exec "$VENV/bin/airflow" "$@" ;;
  up|down|status) setup; case " $* " in *" celery "*|*"--executor=celery"*) setup_postgres; setup_redis ;; esac
                  run_env; exec "$VENV/bin/python" dev/deploy.py "$cmd" "$@" ;;
  bench) setup; run_env; exec "$VENV/bin/python" benchmarks/run_all.py "$@" ;;
  docs) setup; exec "$VENV/bin/mkdocs" build --strict "$@" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
