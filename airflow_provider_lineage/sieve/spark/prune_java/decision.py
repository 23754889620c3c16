"""Java source (part of ``apl.sieve``, compiled with Janino; see :mod:`..prune_rule_source`):
``SieveTable``, ``Node`` / ``Combine`` / ``Leaf`` and ``Decision``: the Python side's answer to one scan,
parsed and applied to Spark's listing in the JVM.
"""

SOURCE = r"""
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
"""
