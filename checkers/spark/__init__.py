"""The distributed explorer on Apache Spark."""
