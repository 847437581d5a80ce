"""kcm: a formally checked model of Apache Kafka's ZooKeeper-mode controller."""

__version__ = "0.1.0"
