"""Java source (part of ``apl.sieve``, compiled with Janino; see :mod:`..prune_rule_source`):
``SievePrune`` (the Catalyst rule: install, narrow one ``Filter`` over a Parquet relation, the per-JVM
file tables) and ``Narrow`` (the partial function it transforms the plan with).
"""

SOURCE = r"""public class SievePrune extends Rule {
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
"""
