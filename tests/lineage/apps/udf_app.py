"""Every UDF lineage scenario as one PySpark application (run through the launcher by
``tests/lineage/udf/test_scenarios.py``): one write per scenario, to ``OUT/<scenario>``.

``python udf_app.py OUT [quick]``: ``quick`` performs only the first two writes (the switch-off run).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import udf_bodies as b
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf

out = sys.argv[1]
quick = len(sys.argv) > 2 and sys.argv[2] == "quick"
spark = (
    SparkSession.builder.appName("udf_scenarios").master("local[2]")
    .config("spark.sql.shuffle.partitions", "1").config("spark.default.parallelism", "1")
    .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
spark.sparkContext.addPyFile(b.__file__)  # the Python workers import the bodies' module too
src = out + "/people"
spark.createDataFrame(b.ROWS, b.SCHEMA).coalesce(1).write.mode("overwrite").parquet(src)
p = spark.read.parquet(src)


def udf(fn, rtype="string"):
    return F.udf(fn, rtype, useArrow=False)


#: scenarios whose write runs (Python workers, Arrow); the others stop at Spark's "path exists" check,
#: after planning: the launcher captures the same optimized plan without running the UDFs (CI time)
RUN = {"identity", "sql_registered", "pandas_scalar", "pandas_iterator", "grouped_map", "map_in_pandas", "nested"}


def write(sid, df):
    target = f"{out}/{sid}"
    if sid in RUN:
        df.write.mode("overwrite").parquet(target)
        return
    os.makedirs(target, exist_ok=True)
    try:
        df.write.mode("errorifexists").parquet(target)
    except AnalysisException:
        pass


write("used_unused", p.select("id", udf(b.upper_first)("email", "country").alias("r")))
write("identity", p.select("id", udf(b.pick)("email", "country").alias("r")))
if quick:
    spark.stop()
    sys.exit(0)
write("condition_only", p.select("id", udf(b.band)("score", "country").alias("r")))
write("mask_branch", p.select("id", udf(b.mask_email)("email", "country").alias("r")))
write("hash", p.select("id", udf(b.hash_email)("email", "country").alias("r")))
write("hmac", p.select("id", udf(b.sign_email)("email", "age").alias("r")))
write("helper", p.select("id", udf(b.normalize)("name", "country").alias("r")))
write("helper_drops_arg", p.select("id", udf(b.via_helper)("email", "country").alias("r")))
write("closure", p.select("id", udf(b.make_prefixer("p-"))("name", "country").alias("r")))
write("lambda", p.select("id", udf(b.lower_lambda)("email", "country").alias("r")))
write("partial", p.select("id", udf(b.scaled, "double")("score", "age").alias("r")))
write("star_args", p.select("id", udf(b.star)("email", "country", "name").alias("r")))
write("default_arg", p.select("id", udf(b.with_default, "double")("score", "age").alias("r")))
write("kwargs", p.select("id", udf(b.kwargs_pick)("email", "country").alias("r")))
write("named_args", p.select("id", udf(b.price_band)(note=F.col("name"), score=F.col("score")).alias("r")))
write("hash_update", p.select("id", udf(b.hash_update)("email", "country").alias("r")))
pair = udf(b.to_pair, "struct<x:string,y:string>")("email", "country", "name")
write("struct_fields", p.select("id", pair.alias("s")).select("id", F.col("s.x").alias("rx"), F.col("s.y").alias("ry")))
write("nested", p.select("id", udf(b.outer_join)(udf(b.inner_mark)("email"), "country").alias("r")))
write("multi_column_expr", p.select("id", udf(b.concat_udf)(F.concat("name", "country")).alias("r")))
write("filter", p.filter(udf(b.is_adult, "boolean")("age", "name")).select("id", "email"))
write("aggregate_input", p.groupBy("country").agg(F.sum(udf(b.double_it, "double")("score", "age")).alias("s")))
write("struct", p.select("id", udf(b.to_struct, "struct<x:string,y:string>")("email", "country", "name").alias("r")))
write("loop_condition", p.select("id", udf(b.digits)("code", "age").alias("r")))
write("mutation", p.select("id", udf(b.collect)("email", "country").alias("r")))
write("arrow_python_udf", p.select("id", F.udf(b.pick, "string", useArrow=True)("email", "country").alias("r")))
spark.udf.register("sql_pick", b.pick, "string")
spark.udf.register("sql_band", b.band, "string")
p.createOrReplaceTempView("people")
write(
    "sql_registered", spark.sql("SELECT id, sql_pick(email, country) AS r, sql_band(score, country) AS s FROM people")
)
write("pandas_scalar", p.select("id", pandas_udf(b.pd_twice, "double")("score", "age").alias("r")))
write("pandas_iterator", p.select("id", pandas_udf(b.pd_iter, "double")("score", "age").alias("r")))
write("pandas_grouped_agg", p.groupBy("country").agg(pandas_udf(b.pd_mean, "double")("score", "age").alias("m")))
write("grouped_map", p.groupBy("country").applyInPandas(b.grouped_total, "country string, total double"))
write("map_in_pandas", p.mapInPandas(b.map_frames, "id long, email string"))
# fallbacks: each must say why
write("bound_method_alias", p.select("id", udf(b.alias_add)("name", "email").alias("r")))
write("global_helper", p.select("id", udf(b.stash_then_read)("email", "country").alias("r")))
redefined = udf(b.via_fmt)("email", "country").alias("r")  # PySpark pickles via_fmt (and what it reaches) here
_orig_fmt, b._fmt = b._fmt, b._fmt_redacted  # the driver redefines the helper afterwards
write("redefined_helper", p.select("id", redefined))
b._fmt = _orig_fmt
write("pandas_inplace", p.select("id", pandas_udf(b.pd_fill_inplace, "double")("score", "age").alias("r")))
write("fallback_introspection", p.select("id", udf(b.peek_frame)("email", "country").alias("r")))
write("fallback_builtin", p.select("id", F.udf(len, "int")("email").alias("r")))
write("fallback_c_function", p.select("id", F.udf(math.floor, "long")("score").alias("r")))
write("fallback_dynamic", p.select("id", udf(b.dynamic)("email", "country").alias("r")))
ns: dict = {}
exec("def no_source(a, b):\n    return a\n", ns)  # noqa: S102 - a function without source on disk
write("fallback_no_source", p.select("id", udf(ns["no_source"])("email", "country").alias("r")))
big = os.path.join(out, "udf_large.py")
with open(big, "w") as fh:
    fh.write("def large(a, b):\n    x = 0\n" + "".join(f"    x = x + {i}\n" for i in range(2200)) + "    return a\n")
sys.path.insert(0, out)
spark.sparkContext.addPyFile(big)
import udf_large

write("fallback_too_large", p.select("id", udf(udf_large.large)("email", "country").alias("r")))
spark.stop()
