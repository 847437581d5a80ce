"""kcm.oracle API: verdicts in-process and assert_valid failing a test with the first violation."""

import pytest

from kcm.oracle import assert_valid, check_events

GOOD = [{"type": "controller_elected", "epoch": 1},
        {"type": "partition_state_change", "partition": "t-0", "from": "NonExistentPartition", "to": "NewPartition"}]


def test_check_events_valid_and_invalid():
    assert check_events(GOOD).ok
    v = check_events(GOOD + [{"type": "controller_elected", "epoch": 1}])
    assert (v.ok, v.line) == (False, 3)


def test_assert_valid_raises_with_first_violation():
    assert_valid(GOOD)
    with pytest.raises(AssertionError, match="event 2: partition table"):
        assert_valid([GOOD[0], {"type": "partition_state_change", "partition": "t-0",
                                "from": "NonExistentPartition", "to": "OfflinePartition"}])
