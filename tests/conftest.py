"""Suite-wide settings that keep every verdict the same from run to run.

Every Hypothesis test without settings of its own runs derandomized (the same examples each run), with no
deadline (a busy machine must not turn a slow example into a failure) and no example database (a failure found
once on one machine must not change what a later run tries).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "kcm-suite",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("kcm-suite")
