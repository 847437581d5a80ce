"""Stop at the first violation (the default of `kcm explore`), `--continue`, and canonical counterexamples."""

from __future__ import annotations

import json

from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs

from kcm.cli import main


def test_the_command_stops_after_the_level_of_the_first_violation_and_continue_goes_on(capsys):
    assert main(["explore", "--config", "unclean", "--quiet", "--json"]) == 1
    stopped = json.loads(capsys.readouterr().out)
    assert main(["explore", "--config", "unclean", "--quiet", "--json", "--continue"]) == 1
    whole = json.loads(capsys.readouterr().out)
    assert stopped["stopped_at_violation"] and not stopped["complete"]
    assert whole["complete"] and not whole["stopped_at_violation"]
    assert stopped["distinct_states"] < whole["distinct_states"]
    first = min(c["length"] for c in whole["counterexamples"].values())
    assert stopped["depth"] == first
    # Every property the stopped run reports broken has the whole run's (shortest, canonical) counterexample.
    assert stopped["counterexamples"] and all(
        whole["counterexamples"][name] == cex for name, cex in stopped["counterexamples"].items())


def test_a_clean_config_is_explored_whole_by_default(capsys):
    assert main(["explore", "--config", "tiny", "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["complete"] and not out["stopped_at_violation"] and out["distinct_states"] == 381


def test_the_counterexample_does_not_depend_on_the_order_an_engine_yields_successors():
    model = BoundedSystem(load_config("unclean"))
    expand = bfs.expander(model)

    def backwards(frontier):
        return list(expand(frontier))[::-1]  # as an engine whose workers answer in another order might

    forwards = bfs.search(model, "local", expand)
    reverse = bfs.search(model, "reversed", backwards)
    assert forwards.violations and (forwards.distinct_states, forwards.transitions) == (
        reverse.distinct_states, reverse.transitions)
    assert {k: [a.to_step() for a in v] for k, v in forwards.violations.items()} == {
        k: [a.to_step() for a in v] for k, v in reverse.violations.items()}
    # The parent links too: every state's path is the least one, so the visited sets are the same arrays.
    fa, ra = forwards.visited.arrays(), reverse.visited.arrays()
    assert fa.keys() == ra.keys() and all((fa[k] == ra[k]).all() for k in fa)


def test_stop_at_names_only_the_properties_that_end_the_search():
    model = BoundedSystem(load_config("unclean"))
    whole = bfs.explore(model)
    assert bfs.explore(model, stop_at=["NoSuchProperty"]).distinct_states == whole.distinct_states
    first = min(whole.violations, key=lambda name: len(whole.violations[name]))
    part = bfs.explore(model, stop_at=[first])
    assert part.stopped and part.depth == len(whole.violations[first])
    assert part.violations[first] == whole.violations[first]
