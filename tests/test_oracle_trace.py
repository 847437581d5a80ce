"""check-trace replay: legal traces pass, the first illegal step is reported with its line."""

import json

from kcm.checkers.oracle_trace import check_lines
from kcm.model.tables import rule_set

RULES = rule_set("seeds")
LEGAL = [
    {"type": "controller_elected", "epoch": 1},
    {"type": "partition_state_change", "partition": "t-0", "from": "NonExistentPartition", "to": "NewPartition"},
    {"type": "partition_state_change", "partition": "t-0", "from": "NewPartition", "to": "OnlinePartition"},
    {"type": "leader_and_isr_write", "partition": "t-0", "leader_epoch": 0, "controller_epoch": 1},
]


def _lines(events):
    return [json.dumps(e) for e in events]


def test_legal_trace_is_valid():
    assert check_lines(_lines(LEGAL), RULES).ok


def test_table_move_not_allowed_is_first_violation():
    bad = LEGAL + [{"type": "partition_state_change", "partition": "t-0", "from": "OnlinePartition",
                    "to": "NewPartition"}]
    v = check_lines(_lines(bad), RULES)
    assert (v.ok, v.line, v.malformed) == (False, 5, False)
    assert v.state_before["partitions"] == {"t-0": "OnlinePartition"}


def test_leader_epoch_not_increasing_and_stale_controller_epoch():
    again = LEGAL + [LEGAL[-1]]
    assert check_lines(_lines(again), RULES).line == 5
    stale = LEGAL[:1] + [{"type": "controller_elected", "epoch": 2},
                         {"type": "leader_and_isr_write", "partition": "t-0", "leader_epoch": 0,
                          "controller_epoch": 1}]
    v = check_lines(_lines(stale), RULES)
    assert (v.line, v.rule.startswith("epoch fencing")) == (3, True)


def test_malformed_line_is_reported_not_raised():
    v = check_lines(_lines(LEGAL[:1]) + ["{not json", "\x00\xff"], RULES)
    assert (v.ok, v.malformed, v.line) == (False, True, 2)
    assert check_lines(['{"type": "controller_elected"}'], RULES).malformed
