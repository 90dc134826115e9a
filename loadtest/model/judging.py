"""How a scenario's run is judged: the checker, given what the scenario says about the run.

Owns ``judge``: the one call both runtimes (the local emulation and a deployed function)
make to judge a run's history and end state with the scenario's outcome, body shape and
expected overlap. The rules themselves are ``loadtest.model.checker``'s.
"""

from __future__ import annotations

from loadtest.model.checker import Check, check
from loadtest.model.history.log import EndState, History
from loadtest.model.scenario.body import body_shape
from loadtest.model.scenario.loading import Scenario


def judge(
    scenario: Scenario, history: History, end_state: EndState, *, cut_short: bool = False
) -> Check:
    """The verdict and counts of one variant's run of ``scenario``.

    ``cut_short``: the run ended before its workload was settled (an absence is then
    left unjudged).
    """
    return check(
        history,
        end_state,
        scenario.judged_outcome,
        cut_short=cut_short,
        body=body_shape(scenario.workload),
        expect_overlap=scenario.expect_overlap,
        effects=scenario.effects,
    )
