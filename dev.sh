#!/usr/bin/env bash
# One entry point for people and CI.
#   ./dev.sh demo     set up .venv and run the example pipeline (example DAG, local Spark, lineage to a file)
#   ./dev.sh test     set up .venv, run ruff check and the fast tier (no deployment, browser, cluster, PostgreSQL)
#   ./dev.sh test --all   the same and every tier: the full suite (what .ci/run calls)
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
  # Every fresh .venv builds pyspark's sdist again into a new cache revision (1.4 GB each): on a machine that
  # sets up many clones (CI) the uv cache filled the disk. Drop the revisions no environment uses any more.
  "$VENV/bin/uv" cache prune -q >&2 || echo "dev.sh: 'uv cache prune' failed (harmless; the cache may grow)" >&2
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

# The Celery variant keeps its tables and Sieve indexes on S3 (moto on 127.0.0.1), so its Spark jobs need Hadoop's
# S3A connector. pip's pyspark has none and Maven is not reachable from every machine this project runs on, so
# the jars come from PyPI: the sdist of sagemaker_pyspark 1.4.5 (Apache-2.0) ships hadoop-aws 3.3.1 and the AWS
# SDK for Java bundle 1.11.901 (both Apache-2.0; their licence is copied beside them). hadoop-aws 3.3.1 runs on
# the Hadoop 3.4.2 in pyspark 4 with a few settings dev/deploy.py writes (docs/deploy.md, "The Celery variant").
# Only for `up --executor celery` and APL_CELERY_DEPLOYMENT=1 test runs: a 181 MB download, once.
S3A_DIR=$ROOT/.work/s3a-jars
S3A_JARS="hadoop-aws-3.3.1.jar:6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e aws-java-sdk-bundle-1.11.901.jar:b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead"
setup_s3a() {
  local entry jar sum missing=""
  for entry in $S3A_JARS; do
    jar=${entry%%:*}; sum=${entry##*:}
    [ -f "$S3A_DIR/$jar" ] && echo "$sum  $S3A_DIR/$jar" | sha256sum -c --quiet - 2>/dev/null || missing=1
  done
  [ -z "$missing" ] && return 0
  echo "dev.sh: fetching Hadoop's S3A connector jars from PyPI (sagemaker_pyspark==1.4.5 sdist, 181 MB, once)" >&2
  local tmp; tmp=$(mktemp -d)
  "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
      -d "$tmp" "sagemaker_pyspark==1.4.5" >&2 \
    || { rm -rf "$tmp"; die "pip download sagemaker_pyspark==1.4.5 failed: the Celery variant's Spark jobs need its S3A jars"; }
  mkdir -p "$S3A_DIR"
  tar -xzf "$tmp"/sagemaker_pyspark-1.4.5.tar.gz -C "$tmp" --wildcards '*/deps/jars/hadoop-aws-3.3.1.jar' \
      '*/deps/jars/aws-java-sdk-bundle-1.11.901.jar' '*/licenses/LICENSE-hadoop.txt' \
    || { rm -rf "$tmp"; die "the sagemaker_pyspark sdist has no S3A jars where expected"; }
  cp "$tmp"/sagemaker_pyspark-1.4.5/deps/jars/*.jar "$S3A_DIR"/
  cp "$tmp"/sagemaker_pyspark-1.4.5/licenses/LICENSE-hadoop.txt "$S3A_DIR"/LICENSE-hadoop.txt
  rm -rf "$tmp"
  for entry in $S3A_JARS; do
    jar=${entry%%:*}; sum=${entry##*:}
    echo "$sum  $S3A_DIR/$jar" | sha256sum -c --quiet - || die "$S3A_DIR/$jar: checksum mismatch"
  done
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

# The tiers (docs/development.md): `test` runs what needs no deployment, browser, cluster or PostgreSQL
# server (unit, engine, Sieve, local Spark, dag.test()); `test --all` runs every tier (what CI runs) and
# installs the system packages the slow tiers need. Arguments after the flags go to pytest: a path or a
# -m of your own replaces the tier's selection, e.g. `./dev.sh test tests/sieve/test_fuse.py`.
FAST_TIER="not deployment and not browser and not cluster and not postgres and not slow"
run_tests() {
  local all="" arg
  local -a args=()
  for arg in "$@"; do
    case "$arg" in --all) all=1 ;; *) args+=("$arg") ;; esac
  done
  setup
  if [ -n "$all" ]; then
    setup_postgres; setup_chromium
    [ "${APL_CELERY_DEPLOYMENT:-}" = 1 ] && { setup_redis; setup_s3a; }
    export APL_REQUIRE_COMPONENTS=1
  fi
  run_env
  "$VENV/bin/ruff" check --quiet . || die "ruff check failed (see above): fix the findings, or mark a deliberate one with # noqa: CODE - why"
  local -a select=()
  if [ -z "$all" ]; then
    # a test path or a -m given by the caller chooses the tests; otherwise the fast tier
    select=(-m "$FAST_TIER")
    for arg in "${args[@]}"; do
      case "$arg" in -m|-m*|tests|tests/*|./tests*|*.py|*::*) select=() ;; esac
    done
  fi
  exec "$VENV/bin/python" -m pytest -n 2 --dist loadfile "${select[@]}" "${args[@]}"
}

cmd=${1:-}
shift || true
case "$cmd" in
  setup) setup; setup_postgres; setup_chromium; setup_redis ;;
  demo) setup; run_env; exec "$VENV/bin/python" dev/demo.py "$@" ;;
  test) run_tests "$@" ;;
  airflow) setup; run_env; airflow_env; exec "$VENV/bin/airflow" "$@" ;;
  up|down|status) setup; case " $* " in *" celery "*|*"--executor=celery"*) setup_postgres; setup_redis; setup_s3a ;; esac
                  run_env; exec "$VENV/bin/python" dev/deploy.py "$cmd" "$@" ;;
  bench) setup; run_env; exec "$VENV/bin/python" benchmarks/run_all.py "$@" ;;
  docs) setup; exec "$VENV/bin/mkdocs" build --strict "$@" ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
