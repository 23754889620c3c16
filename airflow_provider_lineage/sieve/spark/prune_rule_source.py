"""Java source of ``apl.sieve.SievePrune`` (see :mod:`.prune`), compiled in the driver JVM with Janino.

The classes live in :mod:`.prune_java` (one module per class or family); this module joins them under the
compilation unit's package and imports.

Kept as a Python string so it travels wherever the package does (a wheel, a ``--py-files`` archive)
with no jar to install. Janino compiles Java 1.4-style code only: no generics, no lambdas.
"""

from .prune_java import decision, file_index, json_filters, remote, rule

HEADER = r"""// Compiled in the Spark driver's JVM at run time with Janino by
// airflow_provider_lineage/sieve/spark/prune.py.
//
// SievePrune: a Catalyst optimizer rule (spark.experimental.extraOptimizations) that, for every
// Filter directly over a LogicalRelation(HadoopFsRelation(ParquetFileFormat)) whose condition reads a
// column with an index folder, asks the Python side (an oracle: java.util.function.Function implemented
// in Python through py4j) which file ids each condition's index cannot exclude, matches them to the
// files Spark listed through the index version's file table (kept in this JVM, fetched once per
// version), and replaces the relation's location with a SieveFileIndex that lists Spark's own files
// minus the excluded ones. The Filter stays in the plan; only the file list shrinks.
// Any error leaves the scan as Spark planned it (and is reported to the oracle, which logs it).
package apl.sieve;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import scala.collection.JavaConverters;
"""

#: the whole compilation unit
_PARTS = (HEADER, decision.SOURCE, rule.SOURCE, remote.SOURCE, file_index.SOURCE, json_filters.SOURCE)
SOURCE = "\n".join(_PARTS)
