"""Java source (part of ``apl.sieve``, compiled with Janino; see :mod:`..prune_rule_source`):
``RemoteIndexFolders``: whether a remote table root has index folders, listed through Hadoop's ``FileSystem``
and remembered per root for ``spark.airflow_lineage.sieveIndexCheckSeconds``.
"""

SOURCE = r"""
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
"""
