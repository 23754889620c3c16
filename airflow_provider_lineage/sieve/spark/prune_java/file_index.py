"""Java source (part of ``apl.sieve``, compiled with Janino; see :mod:`..prune_rule_source`):
``SieveFileIndex`` (Spark's file index minus the excluded files) and the ``HadoopFsRelation`` subclass that
names a narrowed scan in ``explain()`` and the SQL tab.
"""

SOURCE = r"""class SieveFileIndex implements FileIndex {
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
"""
