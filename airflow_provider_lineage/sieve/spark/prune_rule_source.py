"""Java source of ``apl.sieve.SievePrune`` (see :mod:`.prune`), compiled in the driver JVM with Janino.

Kept as a Python string so it travels wherever the package does (a wheel, a ``--py-files`` archive)
with no jar to install. Janino compiles Java 1.4-style code only: no generics, no lambdas.
"""

SOURCE = r"""// Compiled in the Spark driver's JVM at run time with Janino by
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

/** One index version's live files (the Python side's file table): relative path -> row; id, size, mtime (ms). */
class SieveTable {
    final java.util.HashMap rows;
    final int[] ids;
    final long[] sizes;
    final long[] mtimes;

    SieveTable(int n) {
        rows = new java.util.HashMap(n * 2 + 16);
        ids = new int[n];
        sizes = new long[n];
        mtimes = new long[n];
    }

    /** "<n>\n" then n lines "id\tsize\tmtime ms\trelative path". */
    static SieveTable parse(String text) {
        int nl = text.indexOf('\n');
        int n = Integer.parseInt(nl < 0 ? text : text.substring(0, nl));
        SieveTable t = new SieveTable(n);
        int at = nl + 1;
        for (int i = 0; i < n; i++) {
            int end = text.indexOf('\n', at);
            if (end < 0) end = text.length();
            int a = text.indexOf('\t', at);
            int b = text.indexOf('\t', a + 1);
            int c = text.indexOf('\t', b + 1);
            if (a < 0 || b < 0 || c < 0 || c >= end) {
                throw new IllegalStateException("a damaged Sieve file table row " + i);
            }
            t.ids[i] = Integer.parseInt(text.substring(at, a));
            t.sizes[i] = Long.parseLong(text.substring(a + 1, b));
            t.mtimes[i] = Long.parseLong(text.substring(b + 1, c));
            t.rows.put(text.substring(c + 1, end), Integer.valueOf(i));
            at = end + 1;
        }
        return t;
    }

    /** The row of a listed file when this version knows it at this size and modification time; else -1. */
    int row(String relative, long size, long mtime) {
        if (relative == null) return -1;
        Integer r = (Integer) rows.get(relative);
        if (r == null) return -1;
        int i = r.intValue();
        return sizes[i] == size && mtimes[i] == mtime ? i : -1;
    }
}

/** A node of the Python side's answer: whether a listed file is excluded. */
abstract class Node {
    abstract boolean excluded(int[] rows);

    /** Prefix notation, one node a line: "A<n>"/"O<n>" then n children; "L<slot>\t<column>\t<i ids,...|b base64>". */
    static Node parse(String[] lines, int[] pos, Object decision) {
        Decision d = (Decision) decision;
        String l = lines[pos[0]++];
        char c = l.charAt(0);
        if (c == 'A' || c == 'O') {
            int n = Integer.parseInt(l.substring(1));
            Node[] children = new Node[n];
            for (int i = 0; i < n; i++) children[i] = parse(lines, pos, d);
            return new Combine(c == 'A', children);
        }
        if (c == 'L') {
            String[] parts = l.substring(1).split("\t", 3);
            Leaf leaf = new Leaf(Integer.parseInt(parts[0]), parts[1], parts[2]);
            if (leaf.slot < 0 || leaf.slot >= d.tables.length) throw new IllegalStateException("no table " + leaf.slot);
            leaf.table = d.tables[leaf.slot];
            d.leaves.add(leaf);
            return leaf;
        }
        throw new IllegalStateException("unexpected node in the Sieve oracle's answer: " + l);
    }
}

/** AND: excluded when any child excludes (the union); OR: when every child does (the intersection). */
class Combine extends Node {
    final boolean and;
    final Node[] children;

    Combine(boolean and, Node[] children) { this.and = and; this.children = children; }

    boolean excluded(int[] rows) {
        boolean any = false;
        boolean all = true;
        for (int i = 0; i < children.length; i++) {  // every child: each leaf records whether it excluded a file
            boolean e = children[i].excluded(rows);
            any |= e;
            all &= e;
        }
        return and ? any : all;
    }
}

/** One condition on one index: a file the index knows (at its size and mtime) and not among the hits is excluded. */
class Leaf extends Node {
    final int slot;
    final String column;
    final java.util.BitSet hits;
    SieveTable table;
    boolean used;

    Leaf(int slot, String column, String payload) {
        this.slot = slot;
        this.column = column;
        if (payload.startsWith("b")) {
            hits = java.util.BitSet.valueOf(java.util.Base64.getDecoder().decode(payload.substring(1)));
        } else if (payload.startsWith("i")) {
            hits = new java.util.BitSet();
            String[] ids = payload.substring(1).split(",");
            for (int i = 0; i < ids.length; i++) {
                if (ids[i].length() > 0) hits.set(Integer.parseInt(ids[i]));
            }
        } else {
            throw new IllegalStateException("unexpected hits in the Sieve oracle's answer");
        }
    }

    boolean excluded(int[] rows) {
        int row = rows[slot];
        if (row < 0 || hits.get(table.ids[row])) return false;
        used = true;
        return true;
    }
}

/** The Python side's answer to one scan, applied to Spark's listing in this JVM. */
class Decision {
    boolean logInfo;
    String prefix;
    SieveTable[] tables;
    Node root;
    final List leaves = new ArrayList();
    HashSet paths;
    boolean keep;

    /** "N<0|1 log at INFO>", the root as Spark spells it, the number of tables, their keys, then the tree. */
    static Decision parse(String answer, Object oracleRule) {
        SievePrune rule = (SievePrune) oracleRule;
        String[] lines = answer.split("\n", -1);
        if (lines.length < 5 || !(lines[0].equals("N0") || lines[0].equals("N1"))) {
            throw new IllegalStateException("unexpected answer from the Sieve oracle: "
                + (answer.length() > 80 ? answer.substring(0, 80) : answer));
        }
        Decision d = new Decision();
        d.logInfo = lines[0].equals("N1");
        d.prefix = lines[1];
        int n = Integer.parseInt(lines[2]);
        d.tables = new SieveTable[n];
        for (int i = 0; i < n; i++) {
            d.tables[i] = (SieveTable) rule.table(lines[3 + i]);
            if (d.tables[i] == null) {
                throw new IllegalStateException("the Sieve file table " + lines[3 + i] + " is gone");
            }
        }
        int[] pos = new int[] {3 + n};
        d.root = Node.parse(lines, pos, d);
        return d;
    }

    /** {description} when the index excludes a file Spark listed (paths/keep set), else null. */
    String[] apply(FileIndex loc) {
        String base = prefix.endsWith("/") ? prefix : prefix + "/";
        List dirs = JavaConverters.seqAsJavaList(loc.listFiles(scala.collection.immutable.Nil$.MODULE$,
                                                              scala.collection.immutable.Nil$.MODULE$));
        List excluded = new ArrayList();
        List kept = new ArrayList();
        int[] rows = new int[tables.length];
        for (int i = 0; i < dirs.size(); i++) {
            List fs = JavaConverters.seqAsJavaList(((PartitionDirectory) dirs.get(i)).files());
            for (int j = 0; j < fs.size(); j++) {
                FileStatusWithMetadata st = (FileStatusWithMetadata) fs.get(j);
                String path = st.getPath().toString();
                String rel = path.startsWith(base) ? path.substring(base.length()) : null;
                long len = st.getLen();
                long mtime = st.getModificationTime();
                for (int k = 0; k < tables.length; k++) rows[k] = tables[k].row(rel, len, mtime);
                if (root.excluded(rows)) excluded.add(path); else kept.add(path);
            }
        }
        if (excluded.isEmpty()) return null;
        java.util.TreeSet used = new java.util.TreeSet();
        for (int i = 0; i < leaves.size(); i++) {
            Leaf leaf = (Leaf) leaves.get(i);
            if (leaf.used) used.add(leaf.column);
        }
        StringBuilder by = new StringBuilder();
        java.util.Iterator it = used.iterator();
        while (it.hasNext()) {
            if (by.length() > 0) by.append(", ");
            by.append((String) it.next());
        }
        keep = kept.size() <= excluded.size();
        paths = new HashSet(keep ? kept : excluded);
        int total = kept.size() + excluded.size();
        return new String[] {"Sieve: " + kept.size() + " of " + total + " files by " + by};
    }
}

public class SievePrune extends Rule {
    private java.util.function.Function oracle;

    public SievePrune() {}

    public void setOracle(java.util.function.Function oracle) { this.oracle = oracle; }

    // ---- installing into a session's experimental methods (spark.experimental) -----------------
    /** Put this rule in the session's extra optimizations (replacing an earlier SievePrune); null: remove it. */
    public void install(Object experimental, boolean add) throws Exception {
        Method get = experimental.getClass().getMethod("extraOptimizations", new Class[0]);
        Method set = null;
        Method[] ms = experimental.getClass().getMethods();
        for (int i = 0; i < ms.length; i++) {
            if (ms[i].getName().equals("extraOptimizations_$eq")) set = ms[i];
        }
        scala.collection.Seq now = (scala.collection.Seq) get.invoke(experimental, new Object[0]);
        List rules = new ArrayList(JavaConverters.seqAsJavaList(now));
        for (int i = rules.size() - 1; i >= 0; i--) {
            if (rules.get(i).getClass().getName().equals(SievePrune.class.getName())) rules.remove(i);
        }
        if (add) rules.add(this);
        set.invoke(experimental, new Object[] {JavaConverters.asScalaBuffer(rules).toList()});
    }

    public boolean installed(Object experimental) throws Exception {
        Method get = experimental.getClass().getMethod("extraOptimizations", new Class[0]);
        List rules = JavaConverters.seqAsJavaList((scala.collection.Seq) get.invoke(experimental, new Object[0]));
        for (int i = 0; i < rules.size(); i++) {
            if (rules.get(i).getClass().getName().equals(SievePrune.class.getName())) return true;
        }
        return false;
    }

    /** The narrowing descriptions of a plan's scans (for tests and explain helpers). */
    public String narrowings(Object plan) {
        StringBuilder sb = new StringBuilder();
        collect((TreeNode) plan, sb);
        return sb.toString();
    }

    private static void collect(TreeNode node, StringBuilder sb) {
        Object rel = node instanceof LogicalRelation ? ((LogicalRelation) node).relation() : null;
        if (rel instanceof org.apache.spark.sql.execution.datasources.HadoopFsRelation) {
            FileIndex loc = ((org.apache.spark.sql.execution.datasources.HadoopFsRelation) rel).location();
            if (loc instanceof SieveFileIndex) sb.append(((SieveFileIndex) loc).description()).append('\n');
        }
        List children = JavaConverters.seqAsJavaList(node.children());
        for (int i = 0; i < children.size(); i++) collect((TreeNode) children.get(i), sb);
    }

    // ---- the rule ------------------------------------------------------------------------------
    public TreeNode apply(TreeNode plan) {
        if (oracle == null) return plan;
        try {
            return ((LogicalPlan) plan).transformUp(new Narrow(this));
        } catch (Throwable t) {
            report("the rule failed: " + t);
            return plan;
        }
    }

    void report(String message) { report("E", message); }

    void report(String kind, String message) {
        try {
            oracle.apply(kind + message);
        } catch (Throwable t) {
            org.slf4j.LoggerFactory.getLogger("apl.sieve.SievePrune").warn(
                "Sieve: " + message + "; the scan is read as Spark planned it");
        }
    }

    /** The Filter with its relation narrowed, or null to leave it as it is. */
    LogicalPlan narrow(Filter f) {
        if (!(f.child() instanceof LogicalRelation)) return null;
        LogicalRelation lr = (LogicalRelation) f.child();
        if (!(lr.relation() instanceof org.apache.spark.sql.execution.datasources.HadoopFsRelation)) return null;
        org.apache.spark.sql.execution.datasources.HadoopFsRelation r =
            (org.apache.spark.sql.execution.datasources.HadoopFsRelation) lr.relation();
        if (!(r.fileFormat() instanceof ParquetFileFormat)) return null;
        FileIndex loc = r.location();
        if (loc instanceof SieveFileIndex) return null;
        String indexPaths = configuredIndexPaths();
        if (indexPaths.length() == 0 && !mayHaveIndexes(lr, loc, f)) return null;
        try {
            StringBuilder head = new StringBuilder();
            head.append("{\"roots\":[");
            List roots = JavaConverters.seqAsJavaList(loc.rootPaths());
            for (int i = 0; i < roots.size(); i++) {
                if (i > 0) head.append(',');
                Json.str(head, roots.get(i).toString());
            }
            head.append("],\"location\":");
            if (lr.catalogTable().isDefined()) {
                org.apache.spark.sql.catalyst.catalog.CatalogTable t =
                    (org.apache.spark.sql.catalyst.catalog.CatalogTable) lr.catalogTable().get();
                Json.str(head, t.location() == null ? null : new org.apache.hadoop.fs.Path(t.location()).toString());
                head.append(",\"table\":");
                Json.str(head, t.identifier().unquotedString());
            } else {
                head.append("null,\"table\":null");
            }
            head.append(",\"columns\":{");
            List out = JavaConverters.seqAsJavaList(lr.output());
            for (int i = 0; i < out.size(); i++) {
                Attribute a = (Attribute) out.get(i);
                if (i > 0) head.append(',');
                Json.str(head, a.name());
                head.append(':');
                Json.str(head, a.dataType().catalogString());
            }
            // the condition's attributes by the relation's names (a case-insensitive session keeps the query's
            // spelling)
            head.append("},\"names\":{");
            List refs0 = JavaConverters.seqAsJavaList(f.condition().references().toSeq());
            int nn = 0;
            for (int i = 0; i < refs0.size(); i++) {
                Attribute ref = (Attribute) refs0.get(i);
                for (int j = 0; j < out.size(); j++) {
                    Attribute a = (Attribute) out.get(j);
                    if (a.exprId().equals(ref.exprId())) {
                        if (nn++ > 0) head.append(',');
                        Json.str(head, ref.name());
                        head.append(':');
                        Json.str(head, a.name());
                    }
                }
            }
            head.append("},\"partitionColumns\":[");
            String[] pcols = r.partitionSchema().fieldNames();
            for (int i = 0; i < pcols.length; i++) {
                if (i > 0) head.append(',');
                Json.str(head, pcols[i]);
            }
            head.append("],\"filters\":[");
            List conjuncts = new ArrayList();
            split(f.condition(), conjuncts);
            StringBuilder untranslated = new StringBuilder();
            int n = 0;
            int u = 0;
            for (int i = 0; i < conjuncts.size(); i++) {
                Expression e = (Expression) conjuncts.get(i);
                scala.Option tf =
                    org.apache.spark.sql.execution.datasources.DataSourceStrategy$.MODULE$.translateFilter(e, false);
                if (tf.isDefined()) {
                    if (n++ > 0) head.append(',');
                    Json.filter(head, (org.apache.spark.sql.sources.Filter) tf.get());
                } else {
                    if (u++ > 0) untranslated.append(',');
                    untranslated.append("{\"sql\":");
                    Json.str(untranslated, e.sql());
                    untranslated.append(",\"columns\":[");
                    List refs = JavaConverters.seqAsJavaList(e.references().toSeq());
                    for (int j = 0; j < refs.size(); j++) {
                        if (j > 0) untranslated.append(',');
                        Json.str(untranslated, ((Attribute) refs.get(j)).name());
                    }
                    untranslated.append("]}");
                }
            }
            head.append("],\"untranslated\":[").append(untranslated).append(']');
            if (indexPaths.length() > 0) {
                head.append(",\"indexPaths\":");
                Json.str(head, indexPaths);
            }
            head.append('}');
            // one py4j call: the Python side answers from the indexes alone (no listing crosses py4j): the
            // file tables it names (kept in this JVM per index version) and, per condition, the file ids the
            // index cannot exclude
            String answer = (String) oracle.apply("Q" + head);
            if (answer == null || answer.length() == 0) return null;
            Decision d = Decision.parse(answer, this);
            String[] kept = d.apply(loc);
            if (kept == null) return null;
            if (d.logInfo) {
                String where = d.prefix;
                if (lr.catalogTable().isDefined()) {
                    where = ((org.apache.spark.sql.catalyst.catalog.CatalogTable) lr.catalogTable().get())
                        .identifier().unquotedString();
                }
                report("I", kept[0] + "\t" + where);
            }
            SieveFileIndex narrowed = new SieveFileIndex(loc, d.paths, d.keep, kept[0]);
            HadoopFsRelation nr = new HadoopFsRelation(narrowed, r.partitionSchema(), r.dataSchema(), r.bucketSpec(),
                                                       r.fileFormat(), r.options(), r.sparkSession(), kept[0]);
            LogicalRelation nlr = copyRelation(lr, nr);
            return new Filter(f.condition(), nlr);
        } catch (Throwable t) {
            report("a scan of " + loc.rootPaths() + " could not be narrowed: " + t);
            return null;
        }
    }

    /** The session's spark.airflow_lineage.sieveIndexPaths (indexes kept outside <root>/_sieve/), or "". */
    static String configuredIndexPaths() {
        try {
            String v = org.apache.spark.sql.internal.SQLConf$.MODULE$.get()
                .getConfString("spark.airflow_lineage.sieveIndexPaths", "");
            return v == null ? "" : v.trim();
        } catch (Throwable t) {
            return "";
        }
    }

    /** A file table the Python side names by key (the SHA-1 of its text), asked for once per JVM. */
    Object table(String key) {
        synchronized (TABLES) {
            SieveTable t = (SieveTable) TABLES.remove(key);
            if (t != null) { TABLES.put(key, t); return t; }
        }
        String text = (String) oracle.apply("T" + key);
        if (text == null || text.length() == 0) return null;
        SieveTable t = SieveTable.parse(text);
        synchronized (TABLES) {
            TABLES.put(key, t);
            long rows = 0;
            java.util.Iterator it = TABLES.values().iterator();
            while (it.hasNext()) rows += ((SieveTable) it.next()).ids.length;
            it = TABLES.keySet().iterator();
            while (TABLES.size() > 1 && (TABLES.size() > MAX_TABLES || rows > MAX_TABLE_ROWS)) {
                Object k = it.next();
                rows -= ((SieveTable) TABLES.get(k)).ids.length;
                it.remove();
            }
        }
        return t;
    }

    /** Key -> SieveTable, least recently used first (one per index version and file set, for the whole JVM). */
    static final java.util.LinkedHashMap TABLES = new java.util.LinkedHashMap();
    static final int MAX_TABLES = 64;
    static final long MAX_TABLE_ROWS = 4000000L;

    /** False only when no column the condition reads has an index folder <root>/_sieve/<column> (no py4j call
     *  then); any doubt (several roots, an error): true. A local root is checked with a stat or two; a remote one
     *  (s3a://...) by listing <root>/_sieve through Hadoop's FileSystem of the root (the session's Hadoop conf with
     *  the relation's options: the file system and credentials Spark's own listing uses), cached per root. */
    static boolean mayHaveIndexes(LogicalRelation lr, FileIndex loc, Filter f) {
        try {
            org.apache.hadoop.fs.Path root = null;
            if (lr.catalogTable().isDefined()) {
                org.apache.spark.sql.catalyst.catalog.CatalogTable t =
                    (org.apache.spark.sql.catalyst.catalog.CatalogTable) lr.catalogTable().get();
                if (t.location() != null) root = new org.apache.hadoop.fs.Path(t.location());
            }
            if (root == null) {
                List roots = JavaConverters.seqAsJavaList(loc.rootPaths());
                if (roots.size() != 1) return true;
                root = (org.apache.hadoop.fs.Path) roots.get(0);
            }
            org.apache.hadoop.fs.Path folder = new org.apache.hadoop.fs.Path(root, "_sieve");
            // the condition's columns by the relation's names (exprIds: a case-insensitive session keeps the
            // query's spelling)
            List refs = JavaConverters.seqAsJavaList(f.condition().references().toSeq());
            List out = JavaConverters.seqAsJavaList(lr.output());
            List names = new ArrayList();
            for (int i = 0; i < refs.size(); i++) {
                Attribute ref = (Attribute) refs.get(i);
                for (int j = 0; j < out.size(); j++) {
                    Attribute a = (Attribute) out.get(j);
                    if (a.exprId().equals(ref.exprId())) names.add(a.name());
                }
            }
            if (names.isEmpty()) return false;
            if ("file".equals(folder.toUri().getScheme())) {
                java.io.File base = new java.io.File(folder.toUri().getPath());
                if (!base.isDirectory()) return false;
                for (int i = 0; i < names.size(); i++) {
                    if (new java.io.File(base, (String) names.get(i)).isDirectory()) return true;
                }
                return false;
            }
            HashSet folders = RemoteIndexFolders.get(folder, lr);
            if (folders == null) return true;  // not known (an error listing): the Python side decides
            for (int i = 0; i < names.size(); i++) {
                if (folders.contains(names.get(i))) return true;
            }
            return false;
        } catch (Throwable t) {
            return true;
        }
    }

    // LogicalRelation's fields differ between Spark versions: copy(relation, <the rest as they are>)
    static LogicalRelation copyRelation(LogicalRelation lr, Object nr) throws Exception {
        Method[] ms = lr.getClass().getMethods();
        for (int i = 0; i < ms.length; i++) {
            if (ms[i].getName().equals("copy")) {
                int k = ms[i].getParameterTypes().length;
                Object[] args = new Object[k];
                args[0] = nr;
                for (int j = 1; j < k; j++) {
                    Method dflt = lr.getClass().getMethod("copy$default$" + (j + 1), new Class[0]);
                    args[j] = dflt.invoke(lr, new Object[0]);
                }
                LogicalRelation out = (LogicalRelation) ms[i].invoke(lr, args);
                out.copyTagsFrom(lr);
                return out;
            }
        }
        throw new IllegalStateException("LogicalRelation has no copy method");
    }

    static void split(Expression e, List out) {
        if (e instanceof And) {
            split(((And) e).left(), out);
            split(((And) e).right(), out);
        } else {
            out.add(e);
        }
    }
}

/** Per remote root: the names of the folders under <root>/_sieve (an empty set when it does not exist), listed
 *  through Hadoop's FileSystem of the root, kept for spark.airflow_lineage.sieveIndexCheckSeconds (default 10; 0:
 *  list on every filtered scan), at most MAX roots (least recently used dropped). The cache decides only whether the
 *  Python side is asked: a stale "no index" reads every file Spark listed (the plan as without enable), a stale
 *  "index" asks the Python side, which lists the indexes itself; an index added later is used once its root's
 *  entry expires. An error listing is not cached (null: ask the Python side). */
class RemoteIndexFolders {
    static final int MAX = 1024;
    static final java.util.LinkedHashMap CACHE = new java.util.LinkedHashMap();  // folder -> Object[] {Long, HashSet}

    static long ttlMillis() {
        try {
            String v = org.apache.spark.sql.internal.SQLConf$.MODULE$.get()
                .getConfString("spark.airflow_lineage.sieveIndexCheckSeconds", "10");
            return (long) (Double.parseDouble(v.trim()) * 1000.0);
        } catch (Throwable t) {
            return 10000L;
        }
    }

    static HashSet get(org.apache.hadoop.fs.Path folder, LogicalRelation lr) {
        String key = folder.toString();
        long now = System.currentTimeMillis();
        long ttl = ttlMillis();
        synchronized (CACHE) {
            Object[] hit = (Object[]) CACHE.remove(key);
            if (hit != null && ttl > 0 && now - ((Long) hit[0]).longValue() < ttl) {
                CACHE.put(key, hit);
                return (HashSet) hit[1];
            }
        }
        HashSet names = list(folder, lr);
        if (names == null) return null;
        if (ttl > 0) {
            synchronized (CACHE) {
                CACHE.put(key, new Object[] {Long.valueOf(now), names});
                java.util.Iterator it = CACHE.keySet().iterator();
                while (CACHE.size() > MAX) { it.next(); it.remove(); }
            }
        }
        return names;
    }

    /** The folder names under folder (empty when it does not exist), or null when it cannot be listed. */
    static HashSet list(org.apache.hadoop.fs.Path folder, LogicalRelation lr) {
        try {
            org.apache.spark.sql.execution.datasources.HadoopFsRelation r =
                (org.apache.spark.sql.execution.datasources.HadoopFsRelation) lr.relation();
            org.apache.hadoop.conf.Configuration conf =
                r.sparkSession().sessionState().newHadoopConfWithOptions(r.options());
            org.apache.hadoop.fs.FileSystem fs = folder.getFileSystem(conf);
            HashSet names = new HashSet();
            org.apache.hadoop.fs.FileStatus[] st;
            try {
                st = fs.listStatus(folder);
            } catch (java.io.FileNotFoundException e) {
                return names;
            }
            for (int i = 0; i < st.length; i++) {
                if (st[i].isDirectory()) names.add(st[i].getPath().getName());
            }
            return names;
        } catch (Throwable t) {
            return null;
        }
    }
}

class Narrow extends scala.runtime.AbstractPartialFunction {
    private final SievePrune rule;

    Narrow(SievePrune rule) { this.rule = rule; }

    public boolean isDefinedAt(Object node) {
        return node instanceof Filter && ((Filter) node).child() instanceof LogicalRelation;
    }

    public Object applyOrElse(Object node, scala.Function1 otherwise) {
        if (node instanceof Filter) {
            LogicalPlan out = rule.narrow((Filter) node);
            if (out != null) return out;
            return node;
        }
        return otherwise.apply(node);
    }
}

class SieveFileIndex implements FileIndex {
    private final FileIndex delegate;
    private final HashSet paths;
    private final boolean keep;
    private final String description;

    SieveFileIndex(FileIndex delegate, HashSet paths, boolean keep, String description) {
        this.delegate = delegate;
        this.paths = paths;
        this.keep = keep;
        this.description = description;
    }

    public FileIndex delegate() { return delegate; }

    public String description() { return description; }

    private boolean read(FileStatusWithMetadata f) {
        return paths.contains(f.getPath().toString()) == keep;
    }

    public scala.collection.immutable.Seq rootPaths() { return delegate.rootPaths(); }

    public scala.collection.immutable.Seq listFiles(scala.collection.immutable.Seq partitionFilters,
                                                    scala.collection.immutable.Seq dataFilters) {
        List dirs = JavaConverters.seqAsJavaList(delegate.listFiles(partitionFilters, dataFilters));
        List out = new ArrayList();
        for (int i = 0; i < dirs.size(); i++) {
            PartitionDirectory d = (PartitionDirectory) dirs.get(i);
            List fs = JavaConverters.seqAsJavaList(d.files());
            List kept = new ArrayList();
            for (int j = 0; j < fs.size(); j++) {
                if (read((FileStatusWithMetadata) fs.get(j))) kept.add(fs.get(j));
            }
            if (!kept.isEmpty()) {
                out.add(new PartitionDirectory(d.values(), JavaConverters.asScalaBuffer(kept).toList()));
            }
        }
        return JavaConverters.asScalaBuffer(out).toList();
    }

    public String[] inputFiles() {
        List dirs = JavaConverters.seqAsJavaList(listFiles(scala.collection.immutable.Nil$.MODULE$,
                                                           scala.collection.immutable.Nil$.MODULE$));
        List out = new ArrayList();
        for (int i = 0; i < dirs.size(); i++) {
            List fs = JavaConverters.seqAsJavaList(((PartitionDirectory) dirs.get(i)).files());
            for (int j = 0; j < fs.size(); j++) {
                out.add(((FileStatusWithMetadata) fs.get(j)).getPath().toUri().toString());
            }
        }
        return (String[]) out.toArray(new String[out.size()]);
    }

    public void refresh() { delegate.refresh(); }

    public long sizeInBytes() { return delegate.sizeInBytes(); }

    public org.apache.spark.sql.types.StructType partitionSchema() { return delegate.partitionSchema(); }

    public scala.Option metadataOpsTimeNs() { return delegate.metadataOpsTimeNs(); }

    public String toString() { return description; }

    public boolean equals(Object o) {
        if (!(o instanceof SieveFileIndex)) return false;
        SieveFileIndex s = (SieveFileIndex) o;
        return s.delegate.equals(delegate) && s.keep == keep && s.paths.equals(paths);
    }

    public int hashCode() { return delegate.hashCode() * 31 + paths.hashCode(); }
}

/** Spark's relation, named with its narrowing: explain() and the SQL tab show "Scan parquet (Sieve: 2 of 200 files
 *  by k)". Everything else is Spark's (same fields, equality, file index root paths); the simple class name stays
 *  HadoopFsRelation for whatever recognises relations by it (the lineage capture names the table, not the files). */
class HadoopFsRelation extends org.apache.spark.sql.execution.datasources.HadoopFsRelation {
    private final String sieve;

    HadoopFsRelation(FileIndex location, org.apache.spark.sql.types.StructType partitionSchema,
                     org.apache.spark.sql.types.StructType dataSchema, scala.Option bucketSpec,
                     org.apache.spark.sql.execution.datasources.FileFormat fileFormat,
                     scala.collection.immutable.Map options, org.apache.spark.sql.SparkSession session, String sieve) {
        super(location, partitionSchema, dataSchema, bucketSpec, fileFormat, options, session);
        this.sieve = sieve;
    }

    public String toString() { return super.toString() + " (" + sieve + ")"; }
}

class Json {
    static void str(StringBuilder sb, String s) {
        if (s == null) { sb.append("null"); return; }
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') { sb.append('\\').append(c); }
            else if (c < 0x20) {
                String h = Integer.toHexString(c);
                sb.append("\\u");
                for (int k = h.length(); k < 4; k++) sb.append('0');
                sb.append(h);
            } else { sb.append(c); }
        }
        sb.append('"');
    }

    static void leaf(StringBuilder sb, String op, String attribute) {
        sb.append("{\"op\":");
        str(sb, op);
        sb.append(",\"column\":");
        str(sb, attribute);
    }

    static void filter(StringBuilder sb, org.apache.spark.sql.sources.Filter f) {
        if (f instanceof org.apache.spark.sql.sources.And) {
            org.apache.spark.sql.sources.And a = (org.apache.spark.sql.sources.And) f;
            sb.append("{\"op\":\"and\",\"children\":[");
            filter(sb, a.left()); sb.append(','); filter(sb, a.right());
            sb.append("]}");
        } else if (f instanceof org.apache.spark.sql.sources.Or) {
            org.apache.spark.sql.sources.Or o = (org.apache.spark.sql.sources.Or) f;
            sb.append("{\"op\":\"or\",\"children\":[");
            filter(sb, o.left()); sb.append(','); filter(sb, o.right());
            sb.append("]}");
        } else if (f instanceof org.apache.spark.sql.sources.EqualTo) {
            org.apache.spark.sql.sources.EqualTo e = (org.apache.spark.sql.sources.EqualTo) f;
            leaf(sb, "eq", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.EqualNullSafe) {
            org.apache.spark.sql.sources.EqualNullSafe e = (org.apache.spark.sql.sources.EqualNullSafe) f;
            leaf(sb, "eq_null_safe", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.GreaterThan) {
            org.apache.spark.sql.sources.GreaterThan e = (org.apache.spark.sql.sources.GreaterThan) f;
            leaf(sb, "gt", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.GreaterThanOrEqual) {
            org.apache.spark.sql.sources.GreaterThanOrEqual e = (org.apache.spark.sql.sources.GreaterThanOrEqual) f;
            leaf(sb, "ge", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.LessThan) {
            org.apache.spark.sql.sources.LessThan e = (org.apache.spark.sql.sources.LessThan) f;
            leaf(sb, "lt", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.LessThanOrEqual) {
            org.apache.spark.sql.sources.LessThanOrEqual e = (org.apache.spark.sql.sources.LessThanOrEqual) f;
            leaf(sb, "le", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.In) {
            org.apache.spark.sql.sources.In e = (org.apache.spark.sql.sources.In) f;
            leaf(sb, "in", e.attribute()); sb.append(",\"values\":[");
            Object[] vs = e.values();
            for (int i = 0; i < vs.length; i++) { if (i > 0) sb.append(','); value(sb, vs[i]); }
            sb.append("]}");
        } else if (f instanceof org.apache.spark.sql.sources.IsNull) {
            leaf(sb, "is_null", ((org.apache.spark.sql.sources.IsNull) f).attribute()); sb.append('}');
        } else if (f instanceof org.apache.spark.sql.sources.StringStartsWith) {
            org.apache.spark.sql.sources.StringStartsWith e = (org.apache.spark.sql.sources.StringStartsWith) f;
            leaf(sb, "starts_with", e.attribute()); sb.append(",\"value\":"); value(sb, e.value()); sb.append('}');
        } else {
            // Not, IsNotNull, StringEndsWith, StringContains, AlwaysTrue/False...: no file excluded
            sb.append("{\"op\":\"other\",\"name\":");
            str(sb, f.getClass().getSimpleName());
            sb.append('}');
        }
    }

    static void value(StringBuilder sb, Object v) {
        if (v == null) { sb.append("null"); return; }
        String t;
        String s;
        if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            t = "int"; s = v.toString();
        } else if (v instanceof String) {
            t = "str"; s = (String) v;
        } else if (v instanceof java.sql.Date) {
            t = "date"; s = v.toString();
        } else if (v instanceof java.time.LocalDate) {
            t = "date"; s = v.toString();
        } else if (v instanceof java.sql.Timestamp) {
            java.sql.Timestamp ts = (java.sql.Timestamp) v;
            long micros = Math.floorDiv(ts.getTime(), 1000L) * 1000000L + ts.getNanos() / 1000;
            t = "ts"; s = Long.toString(micros);
        } else if (v instanceof java.time.Instant) {
            java.time.Instant in = (java.time.Instant) v;
            t = "ts"; s = Long.toString(in.getEpochSecond() * 1000000L + in.getNano() / 1000);
        } else if (v instanceof java.time.LocalDateTime) {
            t = "ntz"; s = v.toString();
        } else if (v instanceof java.math.BigDecimal) {
            t = "dec"; s = ((java.math.BigDecimal) v).toPlainString();
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            t = (Double.isNaN(d) || Double.isInfinite(d)) ? "nan" : "float"; s = v.toString();
        } else if (v instanceof Boolean) {
            t = "bool"; s = v.toString();
        } else if (v instanceof byte[]) {
            byte[] b = (byte[]) v;
            StringBuilder h = new StringBuilder();
            for (int i = 0; i < b.length; i++) {
                String x = Integer.toHexString(b[i] & 0xff);
                if (x.length() == 1) h.append('0');
                h.append(x);
            }
            t = "bin"; s = h.toString();
        } else {
            t = "other"; s = v.getClass().getName();
        }
        sb.append("{\"t\":\"").append(t).append("\",\"v\":");
        str(sb, s);
        sb.append('}');
    }
}
"""
