"""kcm: a formally checked model of Apache Kafka's ZooKeeper-mode controller."""

__version__ = "0.1.0"

from kcm import compiled as _compiled  # noqa: E402  (the compiled build, when built, must come before any import)

_compiled.install()
