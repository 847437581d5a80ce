"""The pytest plugin: another project's tests use the kcm_oracle fixture and fail with kcm's first violation."""

from pathlib import Path

pytest_plugins = ["pytester"]

TRACES = Path(__file__).resolve().parent.parent / "specs" / "traces"

INNER = '''
ELECTED = {"type": "controller_elected", "broker": 0, "epoch": 1}
CREATED = {"type": "partition_state_change", "partition": "t-0", "from": "NonExistentPartition",
           "to": "NewPartition"}


def test_legal_controller(kcm_oracle):
    kcm_oracle.feed(ELECTED)
    kcm_oracle.feed_all([CREATED, {"type": "partition_state_change", "partition": "t-0",
                                   "from": "NewPartition", "to": "OnlinePartition"}])
    assert kcm_oracle.verdict().ok


def test_zombie_controller(kcm_oracle):
    kcm_oracle.feed_all([ELECTED, {"type": "controller_elected", "broker": 1, "epoch": 2}])
    kcm_oracle.feed({"type": "leader_and_isr_write", "partition": "t-0", "leader": 0, "leader_epoch": 0,
                     "isr": [0], "zk_version": 0, "controller_epoch": 1})
    raise RuntimeError("not reached: the feed above fails the test")
'''


def test_one_passing_and_one_failing_inner_test(pytester):
    pytester.makepyfile(test_controller=INNER)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*AssertionError: kcm: event 3: ZkEpochFencing: leader-and-ISR write by controller epoch 1 after "
        "controller epoch 2 was elected*",
        "*state before:*'controller_epoch': 2*",
        "FAILED test_controller.py::test_zombie_controller*"])
    assert "not reached" not in result.stdout.str()


def test_trace_files_and_rule_set_option(pytester):
    pytester.makepyfile(test_files=f'''
def test_valid_file(kcm_oracle):
    kcm_oracle.check_file({str(TRACES / "valid_failover_produce_fetch.jsonl")!r})


def test_invalid_file(kcm_oracle):
    kcm_oracle.check_file({str(TRACES / "invalid_leader_hw_decreases.jsonl")!r})


def test_offline_to_offline(kcm_oracle):
    kcm_oracle.feed_all([
        {{"type": "partition_state_change", "partition": "t-0", "from": "NonExistentPartition", "to": "NewPartition"}},
        {{"type": "partition_state_change", "partition": "t-0", "from": "NewPartition", "to": "OfflinePartition"}},
        {{"type": "partition_state_change", "partition": "t-0", "from": "OfflinePartition",
          "to": "OfflinePartition"}}])
''')
    seeds = pytester.runpytest("-p", "no:cacheprovider", "--kcm-rules", "seeds")
    seeds.assert_outcomes(passed=1, failed=2)
    seeds.stdout.fnmatch_lines(["*invalid_leader_hw_decreases.jsonl line 27: LeaderHwMonotone: *"])
    kafka = pytester.runpytest("-p", "no:cacheprovider")  # the default rule set is kafka
    kafka.assert_outcomes(passed=2, failed=1)
    unknown = pytester.runpytest("-p", "no:cacheprovider", "--kcm-rules", "nope")
    unknown.assert_outcomes(errors=3)
    unknown.stdout.fnmatch_lines(["*unknown rule set 'nope'*"])
