"""kcm: a formally checked model of Apache Kafka's ZooKeeper-mode controller."""

import os as _os

__version__ = "0.1.0"
# The name on PyPI (`pip install kcm-kafka`); `kcm` there is an unrelated project. The import package and the
# command stay `kcm`.
DISTRIBUTION = "kcm-kafka"
PROJECT_URL = f"https://pypi.org/project/{DISTRIBUTION}/"

# kcm uses numpy for sorting and arrays, never for linear algebra; numpy's OpenBLAS would otherwise start a thread
# per extra core at import that spins for about 60 ms of CPU in every kcm process. Set before numpy is imported
# (by the explorers), unless the user chose a value.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kcm import compiled as _compiled  # noqa: E402  (the compiled build, when built, must come before any import)

_compiled.install()
