"""Java source of ``apl.PlanWalker`` (see :mod:`.plan_walk`), compiled in the driver JVM with Janino.

Kept as a Python string so it travels wherever the capture code does (an installed wheel, the
``--py-files`` archive of cluster deploy mode) with no packaging of its own.

Over 600 lines as one Java class: Janino compiles it as one compilation unit, so it is not split.
"""

SOURCE = r"""// Compiled in the Spark driver's JVM at run time with Janino (shipped with Spark for code generation) by
// airflow_provider_lineage/capture/plan_walk.py: no jar to install. Keep it Java 1.4-style (no generics,
// no lambdas) so Janino compiles it on every Spark version.
//
// Walks Catalyst trees (logical plans and expressions) once each, memoised by JVM object identity
// (IdentityHashMap): a sub-expression shared by many parents (a withColumn chain that uses the previous
// column twice) is written once. Output: a compact JSON DAG, one entry per distinct node, with the
// node's own constructor fields in Spark's TreeNode.toJSON() shapes (Spark's own parseToJson for the
// scalar ones), child pointers as indices into the node's children (as toJSON has them) and every
// nested tree (a Join's condition, a sub-query's plan) as {"$t": node id}, a Seq of them (a Project's projectList)
// as {"$ts": [ids, [first, last] for a run]}.
// Bounded: a node count, an output size, a deadline and a free-heap floor stop the walk with a reason.
package apl;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;

public class PlanWalker {
    private final IdentityHashMap ids = new IdentityHashMap();
    // AttributeReferences by value (Spark's equals: name, exprId, type, nullability, metadata, qualifier):
    // every Project of a wide, deep plan holds its own copies of the same attributes, which as separate
    // nodes were most of a walk's nodes and bytes (58,539 of 66,333 nodes, 19 of 23 MB, at 100 x 80).
    private final HashMap attributes = new HashMap();
    private Class attributeReference;
    private final ArrayList queue = new ArrayList();
    private final ArrayList leaves = new ArrayList();
    private final ArrayList roots = new ArrayList();
    private final HashMap names = new HashMap();
    private Class treeNode;
    private Class logicalPlan;
    private Method parseToJson;
    private Object reflection;
    private Method ctorNames;
    private Object jsonMethods;
    private Method compact;
    private Method m_children;
    private Method m_otherCopyArgs;
    private Method m_jsonFields;
    private Method m_containsChild;
    private int maxNodes = 2000000;
    private long maxChars = 256L * 1024 * 1024;
    private long deadline = Long.MAX_VALUE;
    private double minFreeHeap = 0.15;
    private String stopped = null;
    private int steps = 0;

    public PlanWalker() throws Exception {
        ClassLoader cl = PlanWalker.class.getClassLoader();
        treeNode = Class.forName("org.apache.spark.sql.catalyst.trees.TreeNode", false, cl);
        logicalPlan = Class.forName("org.apache.spark.sql.catalyst.plans.logical.LogicalPlan", false, cl);
        attributeReference = Class.forName("org.apache.spark.sql.catalyst.expressions.AttributeReference", false, cl);
        Method[] ms = treeNode.getDeclaredMethods();
        for (int i = 0; i < ms.length; i++) {
            String n = ms[i].getName();
            if ((n.equals("parseToJson") || n.endsWith("$$parseToJson")) && ms[i].getParameterTypes().length == 1) {
                parseToJson = ms[i];
            }
        }
        parseToJson.setAccessible(true);
        m_children = treeNode.getMethod("children", new Class[0]);
        m_otherCopyArgs = treeNode.getMethod("otherCopyArgs", new Class[0]);
        m_jsonFields = treeNode.getMethod("jsonFields", new Class[0]);
        m_containsChild = treeNode.getMethod("containsChild", new Class[0]);
        Class refl = Class.forName("org.apache.spark.sql.catalyst.ScalaReflection$", true, cl);
        reflection = refl.getField("MODULE$").get(null);
        ctorNames = refl.getMethod("getConstructorParameterNames", new Class[] {Class.class});
        Class jm = Class.forName("org.json4s.jackson.JsonMethods$", true, cl);
        jsonMethods = jm.getField("MODULE$").get(null);
        Method[] jms = jm.getMethods();
        for (int i = 0; i < jms.length; i++) {
            if (jms[i].getName().equals("compact") && jms[i].getParameterTypes().length == 1) {
                compact = jms[i];
            }
        }
    }

    /** Limits: nodes, output characters, milliseconds from now, free-heap fraction below which the walk stops. */
    public void limits(int nodes, long chars, long millis, double freeHeap) {
        maxNodes = nodes;
        maxChars = chars;
        deadline = millis > 0 ? System.currentTimeMillis() + millis : Long.MAX_VALUE;
        minFreeHeap = freeHeap;
    }

    /** Add a root (the optimized plan, the analyzed plan ...); returns its node id. */
    public int root(Object tree) {
        int id = idOf(tree);
        roots.add(new Integer(id));
        return id;
    }

    /** [[exprId, name, simpleString type], ...] of a Seq of attributes, as JSON (one round trip for a whole schema). */
    public String attributes(Object attrs) throws Exception {
        Object[] items = seq(attrs);
        StringBuilder sb = new StringBuilder("[");
        for (int k = 0; k < items.length; k++) {
            Object a = items[k];
            Object eid = a.getClass().getMethod("exprId", new Class[0]).invoke(a, new Object[0]);
            Object id = eid.getClass().getMethod("id", new Class[0]).invoke(eid, new Object[0]);
            Object name = a.getClass().getMethod("name", new Class[0]).invoke(a, new Object[0]);
            Object dt = a.getClass().getMethod("dataType", new Class[0]).invoke(a, new Object[0]);
            Object type = dt.getClass().getMethod("simpleString", new Class[0]).invoke(dt, new Object[0]);
            if (k > 0) {
                sb.append(',');
            }
            sb.append('[').append(id).append(',');
            str(sb, String.valueOf(name));
            sb.append(',');
            str(sb, String.valueOf(type));
            sb.append(']');
        }
        return sb.append(']').toString();
    }

    /** The strings of a Seq (e.g. output column names), as a JSON list. */
    public String strings(Object values) {
        Object[] items = seq(values);
        StringBuilder sb = new StringBuilder("[");
        for (int k = 0; k < items.length; k++) {
            if (k > 0) {
                sb.append(',');
            }
            str(sb, String.valueOf(items[k]));
        }
        return sb.append(']').toString();
    }

    /** Why the walk stopped early (null: it did not). */
    public String stopped() {
        return stopped;
    }

    /** The logical-plan leaves met (relations), each once. */
    public Object[] leaves() {
        return leaves.toArray();
    }

    public int size() {
        return queue.size();
    }

    private int idOf(Object tree) {
        Object hit = ids.get(tree);
        if (hit != null) {
            return ((Integer) hit).intValue();
        }
        boolean attribute = tree != null && tree.getClass() == attributeReference;
        if (attribute) {
            hit = attributes.get(tree);
            if (hit != null) {  // not kept by identity too: a wide plan's copies would fill the map
                return ((Integer) hit).intValue();
            }
        }
        int id = queue.size();
        Integer boxed = new Integer(id);
        ids.put(tree, boxed);
        if (attribute) {
            attributes.put(tree, boxed);
        }
        queue.add(tree);
        return id;
    }

    /** Walk everything reachable from the roots, as a JSON DAG, into a UTF-8 file (the driver's heap holds
     * 64 KiB of it at a time, and no large string crosses py4j); the number of nodes written. */
    public int walkToFile(String path) throws Exception {
        java.io.Writer out = new java.io.BufferedWriter(
            new java.io.OutputStreamWriter(new java.io.FileOutputStream(path), "UTF-8"), 1 << 16);
        try {
            return walkInto(out);
        } finally {
            out.close();
        }
    }

    private int walkInto(java.io.Writer out) throws Exception {
        StringBuilder sb = new StringBuilder(1 << 17);
        long written = 0;
        sb.append("{\"format\":\"dag-2\",\"nodes\":[");
        int i = 0;
        while (i < queue.size()) {
            if (check(written + sb.length(), i)) {
                break;
            }
            Object node = queue.get(i);
            int mark = sb.length();
            if (i > 0) {
                sb.append(',');
            }
            try {
                node(sb, node);
            } catch (Throwable t) {
                sb.setLength(mark);  // the JSON stays whole: the walk says where it stopped
                stopped = "node " + node.getClass().getName() + ": " + t;
                break;
            }
            i++;
            if (sb.length() >= (1 << 16)) {
                out.write(sb.toString());
                written += sb.length();
                sb.setLength(0);
            }
        }
        sb.append("],\"roots\":[");
        for (int r = 0; r < roots.size(); r++) {
            if (r > 0) {
                sb.append(',');
            }
            sb.append(roots.get(r));
        }
        sb.append("],\"count\":").append(i);
        if (stopped != null) {
            sb.append(",\"stopped\":");
            str(sb, stopped);
        }
        sb.append('}');
        out.write(sb.toString());
        return i;
    }

    private boolean check(long chars, int i) {
        if (i >= maxNodes) {
            stopped = "more than " + maxNodes + " distinct plan and expression nodes";
        } else if (chars > maxChars) {
            stopped = "plan extract larger than " + maxChars + " characters";
        } else if ((steps++ & 255) == 0) {  // the first node too: a small plan is checked once
            if (System.currentTimeMillis() > deadline) {
                stopped = "per-write time budget exceeded while reading the plan";
            } else {
                double free = freeHeap();
                if (free < minFreeHeap) {
                    stopped = "driver heap low (" + Math.round(free * 100) + " % free, floor "
                        + Math.round(minFreeHeap * 100) + " %)";
                }
            }
        }
        return stopped != null;
    }

    /** The share of the driver's max heap that is free. The heap's current use counts garbage no collection
     * has reclaimed yet (G1 lets the heap fill before it collects), so when that figure is below the floor
     * the live estimate is the smaller of what the last collection left in the heap's pools and what each
     * pool held after the last collection that reclaimed it: a young collection leaves the old generation's
     * garbage in place, and only a mixed or full one says what the old generation really holds. */
    private double freeHeap() {
        Runtime rt = Runtime.getRuntime();
        double max = rt.maxMemory();
        double free = (max - (rt.totalMemory() - rt.freeMemory())) / max;
        if (free >= minFreeHeap) {
            return free;
        }
        long live = usedAfterLastGc();
        long collected = usedAfterCollections();
        if (collected >= 0 && (live < 0 || collected < live)) {
            live = collected;
        }
        return live < 0 ? free : (max - live) / max;
    }

    /** The heap pools' use after the last collection that reclaimed each of them (-1: unknown). */
    public long usedAfterCollections() {
        try {
            java.util.List pools = java.lang.management.ManagementFactory.getMemoryPoolMXBeans();
            long used = -1;
            for (int k = 0; k < pools.size(); k++) {
                java.lang.management.MemoryPoolMXBean pool = (java.lang.management.MemoryPoolMXBean) pools.get(k);
                if (pool.getType() != java.lang.management.MemoryType.HEAP) {
                    continue;
                }
                java.lang.management.MemoryUsage after = pool.getCollectionUsage();
                if (after == null) {
                    return -1;  // a heap pool no collector reports on: no estimate
                }
                used = Math.max(used, 0) + after.getUsed();
            }
            return used;
        } catch (Throwable t) {
            return -1;
        }
    }

    /** Heap bytes in use right after the most recent garbage collection (-1: unknown). */
    public long usedAfterLastGc() {
        try {
            java.util.HashSet heapPools = new java.util.HashSet();
            java.util.List pools = java.lang.management.ManagementFactory.getMemoryPoolMXBeans();
            for (int k = 0; k < pools.size(); k++) {
                java.lang.management.MemoryPoolMXBean pool = (java.lang.management.MemoryPoolMXBean) pools.get(k);
                if (pool.getType() == java.lang.management.MemoryType.HEAP) {
                    heapPools.add(pool.getName());
                }
            }
            java.util.List beans = java.lang.management.ManagementFactory.getGarbageCollectorMXBeans();
            long end = -1;
            long used = -1;
            for (int k = 0; k < beans.size(); k++) {
                Object bean = beans.get(k);
                if (!(bean instanceof com.sun.management.GarbageCollectorMXBean)) {
                    continue;
                }
                com.sun.management.GcInfo info = ((com.sun.management.GarbageCollectorMXBean) bean).getLastGcInfo();
                if (info == null || info.getEndTime() <= end) {
                    continue;
                }
                end = info.getEndTime();
                used = 0;
                java.util.Iterator it = info.getMemoryUsageAfterGc().entrySet().iterator();
                while (it.hasNext()) {
                    java.util.Map.Entry e = (java.util.Map.Entry) it.next();
                    if (heapPools.contains(e.getKey())) {
                        used += ((java.lang.management.MemoryUsage) e.getValue()).getUsed();
                    }
                }
            }
            return used;
        } catch (Throwable t) {
            return -1;  // no collector information: the current use (garbage included) decides
        }
    }

    private Object[] seq(Object s) {
        ArrayList out = new ArrayList();
        scala.collection.Iterator it = ((scala.collection.Iterable) s).iterator();
        while (it.hasNext()) {
            out.add(it.next());
        }
        return out.toArray();
    }

    private String[] fieldNames(Class c) throws Exception {
        String[] hit = (String[]) names.get(c);
        if (hit == null) {
            Object[] raw = seq(ctorNames.invoke(reflection, new Object[] {c}));
            hit = new String[raw.length];
            for (int k = 0; k < raw.length; k++) {
                hit[k] = (String) raw[k];
            }
            names.put(c, hit);
        }
        return hit;
    }

    private void node(StringBuilder sb, Object node) throws Exception {
        Object[] children = seq(m_children.invoke(node, new Object[0]));
        String cls = node.getClass().getName();
        boolean plan = logicalPlan.isInstance(node);
        if (plan && children.length == 0) {
            leaves.add(node);
        }
        sb.append("{\"class\":");
        str(sb, cls);
        sb.append(",\"num-children\":").append(children.length);
        sb.append(",\"$c\":[");  // not "children": Union has a field of that name
        for (int k = 0; k < children.length; k++) {
            if (k > 0) {
                sb.append(',');
            }
            sb.append(idOf(children[k]));
        }
        sb.append(']');
        String[] fields = fieldNames(node.getClass());
        if (!nestsTrees(node, children)) {
            // no nested tree: Spark's own jsonFields (class overrides included, e.g. Literal's value)
            Object[] own = seq(m_jsonFields.invoke(node, new Object[0]));
            for (int k = 0; k < own.length; k++) {
                scala.Tuple2 kv = (scala.Tuple2) own[k];
                String text = (String) compact.invoke(jsonMethods, new Object[] {kv._2()});
                if (text != null && text.length() > 0) {
                    sb.append(',');
                    str(sb, (String) kv._1());
                    sb.append(':').append(text);
                }
            }
            sb.append('}');
            inMemory(node, plan, cls);
            return;
        }
        ArrayList values = new ArrayList();
        scala.collection.Iterator it = ((scala.Product) node).productIterator();
        while (it.hasNext()) {
            values.add(it.next());
        }
        Object[] other = seq(m_otherCopyArgs.invoke(node, new Object[0]));
        for (int k = 0; k < other.length; k++) {
            values.add(other[k]);
        }
        int n = Math.min(fields.length, values.size());
        for (int k = 0; k < n; k++) {
            int mark = sb.length();
            sb.append(',');
            str(sb, fields[k]);
            sb.append(':');
            if (!value(sb, node, children, values.get(k), true)) {
                sb.setLength(mark);
            }
        }
        sb.append('}');
        inMemory(node, plan, cls);
    }

    /** Whether a constructor field of node holds a tree that is not one of its children (as itself, in a Seq
     * or an Option). */
    private boolean nestsTrees(Object node, Object[] children) throws Exception {
        scala.collection.Iterator it = ((scala.Product) node).productIterator();
        while (it.hasNext()) {
            Object v = it.next();
            if (v != null && treeNode.isInstance(v)) {
                if (childIndex(node, children, v) < 0) {
                    return true;
                }
            } else if (hasTree(v, 0)) {
                if (!(v instanceof scala.collection.Seq)) {
                    return true;
                }
                Object[] items = seq(v);
                for (int k = 0; k < items.length; k++) {
                    if (!treeNode.isInstance(items[k]) || childIndex(node, children, items[k]) < 0) {
                        return true;
                    }
                }
            }
        }
        Object[] other = seq(m_otherCopyArgs.invoke(node, new Object[0]));
        for (int k = 0; k < other.length; k++) {
            if (hasTree(other[k], 0)) {
                return true;
            }
        }
        return false;
    }

    private void inMemory(Object node, boolean plan, String cls) {
        if (plan && cls.endsWith(".InMemoryRelation")) {
            try {  // the cached plan is not a field: walk it too (its relations are this write's inputs)
                Object builder = node.getClass().getMethod("cacheBuilder", new Class[0]).invoke(node, new Object[0]);
                Object cached = builder.getClass().getMethod("logicalPlan", new Class[0])
                    .invoke(builder, new Object[0]);
                idOf(cached);
            } catch (Throwable t) {
                // no cached plan to walk: the engine says the cache could not be traced
            }
        }
    }

    private int childIndex(Object node, Object[] children, Object v) throws Exception {
        for (int k = 0; k < children.length; k++) {
            if (children[k] == v) {
                return k;
            }
        }
        Object set = m_containsChild.invoke(node, new Object[0]);
        if (((scala.collection.immutable.Set) set).contains(v)) {
            for (int k = 0; k < children.length; k++) {
                if (children[k].equals(v)) {
                    return k;
                }
            }
        }
        return -1;
    }

    private boolean hasTree(Object v, int depth) {
        if (depth > 3 || v == null) {
            return false;
        }
        if (treeNode.isInstance(v)) {
            return true;
        }
        if (v instanceof scala.Option) {
            scala.Option o = (scala.Option) v;
            return !o.isEmpty() && hasTree(o.get(), depth + 1);
        }
        if (v instanceof scala.Tuple2) {
            scala.Tuple2 t = (scala.Tuple2) v;
            return hasTree(t._1(), depth + 1) || hasTree(t._2(), depth + 1);
        }
        if (v instanceof scala.collection.Seq) {
            Object[] items = seq(v);
            for (int k = 0; k < items.length; k++) {
                if (hasTree(items[k], depth + 1)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** One field value; false: nothing to write (Spark's JSON drops the field). */
    private boolean value(StringBuilder sb, Object node, Object[] children, Object v, boolean top) throws Exception {
        if (v != null && treeNode.isInstance(v)) {
            int idx = top ? childIndex(node, children, v) : -1;
            if (idx >= 0) {
                sb.append(idx);
            } else {
                sb.append("{\"$t\":").append(idOf(v)).append('}');
            }
            return true;
        }
        if (v instanceof scala.collection.Seq && hasTree(v, 0)) {
            Object[] items = seq(v);
            boolean allChildren = top;
            int[] idx = new int[items.length];
            for (int k = 0; k < items.length && allChildren; k++) {
                idx[k] = treeNode.isInstance(items[k]) ? childIndex(node, children, items[k]) : -1;
                allChildren = idx[k] >= 0;
            }
            if (!allChildren && allTrees(items)) {
                refs(sb, items);
                return true;
            }
            sb.append('[');
            for (int k = 0; k < items.length; k++) {
                if (k > 0) {
                    sb.append(',');
                }
                if (allChildren) {
                    sb.append(idx[k]);
                } else if (!value(sb, node, children, items[k], false)) {
                    sb.append("null");
                }
            }
            sb.append(']');
            return true;
        }
        if (top && v instanceof scala.collection.Seq && ((scala.collection.Seq) v).isEmpty()) {
            sb.append("[]");  // Spark: an empty Seq is a Seq of children
            return true;
        }
        if (v instanceof scala.Option && hasTree(v, 0)) {
            return value(sb, node, children, ((scala.Option) v).get(), false);
        }
        if (v instanceof scala.Tuple2 && hasTree(v, 0)) {
            // CaseWhen's branches: Spark's JSON writes each tree of a pair in full (again under every parent);
            // here each is a reference to its node, as a nested tree is elsewhere
            scala.Tuple2 t = (scala.Tuple2) v;
            sb.append("{\"product-class\":\"scala.Tuple2\",\"_1\":");
            if (!value(sb, node, children, t._1(), false)) {
                sb.append("null");
            }
            sb.append(",\"_2\":");
            if (!value(sb, node, children, t._2(), false)) {
                sb.append("null");
            }
            sb.append('}');
            return true;
        }
        Object jv = parseToJson.invoke(node, new Object[] {v});
        String text = jv == null ? "null" : (String) compact.invoke(jsonMethods, new Object[] {jv});
        if (text == null || text.length() == 0) {
            return false;
        }
        sb.append(text);
        return true;
    }

    private boolean allTrees(Object[] items) {
        for (int k = 0; k < items.length; k++) {
            if (items[k] == null || !treeNode.isInstance(items[k])) {
                return false;
            }
        }
        return true;
    }

    /** A Seq of nested trees (a Project's projectList, a relation's output) as {"$ts": [id, [first, last], ...]}: the
     * node ids in order, a run of three or more consecutive ids as its first and last. A wide plan's Projects list the
     * same attributes in the same order, so a 2,000-column list is a few numbers instead of 2,000 references. */
    private void refs(StringBuilder sb, Object[] items) {
        int[] ids = new int[items.length];
        for (int k = 0; k < items.length; k++) {
            ids[k] = idOf(items[k]);
        }
        sb.append("{\"$ts\":[");
        int k = 0;
        while (k < ids.length) {
            int end = k;
            while (end + 1 < ids.length && ids[end + 1] == ids[end] + 1) {
                end++;
            }
            if (k > 0) {
                sb.append(',');
            }
            if (end - k >= 2) {
                sb.append('[').append(ids[k]).append(',').append(ids[end]).append(']');
                k = end + 1;
            } else {
                sb.append(ids[k]);
                k++;
            }
        }
        sb.append("]}");
    }

    private static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                String hex = Integer.toHexString(c);
                sb.append("\\u");
                for (int p = hex.length(); p < 4; p++) {
                    sb.append('0');
                }
                sb.append(hex);
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }
}
"""
