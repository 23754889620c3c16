"""Java source (part of ``apl.sieve``, compiled with Janino; see :mod:`..prune_rule_source`):
``Json``: the request to the Python side, Spark's translated source filters and their literal values as JSON.
"""

SOURCE = r"""class Json {
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

    /** Spark's source filters that compare a column with one literal, and the op each is sent as. */
    static final Class[] COMPARISONS = new Class[] {
        org.apache.spark.sql.sources.EqualTo.class, org.apache.spark.sql.sources.EqualNullSafe.class,
        org.apache.spark.sql.sources.GreaterThan.class, org.apache.spark.sql.sources.GreaterThanOrEqual.class,
        org.apache.spark.sql.sources.LessThan.class, org.apache.spark.sql.sources.LessThanOrEqual.class,
        org.apache.spark.sql.sources.StringStartsWith.class};
    static final String[] OPS = new String[] {"eq", "eq_null_safe", "gt", "ge", "lt", "le", "starts_with"};

    static void junction(StringBuilder sb, String op, org.apache.spark.sql.sources.Filter left,
                         org.apache.spark.sql.sources.Filter right) throws Exception {
        sb.append("{\"op\":\"").append(op).append("\",\"children\":[");
        filter(sb, left); sb.append(','); filter(sb, right);
        sb.append("]}");
    }

    static void filter(StringBuilder sb, org.apache.spark.sql.sources.Filter f) throws Exception {
        if (f instanceof org.apache.spark.sql.sources.And) {
            org.apache.spark.sql.sources.And a = (org.apache.spark.sql.sources.And) f;
            junction(sb, "and", a.left(), a.right());
            return;
        }
        if (f instanceof org.apache.spark.sql.sources.Or) {
            org.apache.spark.sql.sources.Or o = (org.apache.spark.sql.sources.Or) f;
            junction(sb, "or", o.left(), o.right());
            return;
        }
        for (int i = 0; i < COMPARISONS.length; i++) {
            if (COMPARISONS[i].isInstance(f)) {  // Scala case classes with attribute() and value(), no common type
                String attribute = (String) f.getClass().getMethod("attribute", new Class[0]).invoke(f, new Object[0]);
                Object v = f.getClass().getMethod("value", new Class[0]).invoke(f, new Object[0]);
                leaf(sb, OPS[i], attribute); sb.append(",\"value\":"); value(sb, v); sb.append('}');
                return;
            }
        }
        if (f instanceof org.apache.spark.sql.sources.In) {
            org.apache.spark.sql.sources.In e = (org.apache.spark.sql.sources.In) f;
            leaf(sb, "in", e.attribute()); sb.append(",\"values\":[");
            Object[] vs = e.values();
            for (int i = 0; i < vs.length; i++) { if (i > 0) sb.append(','); value(sb, vs[i]); }
            sb.append("]}");
        } else if (f instanceof org.apache.spark.sql.sources.IsNull) {
            leaf(sb, "is_null", ((org.apache.spark.sql.sources.IsNull) f).attribute()); sb.append('}');
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
