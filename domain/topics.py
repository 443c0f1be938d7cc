"""Topics of events that code outside their own modules recognizes by name.

A stored event states its topic (`Event.TOPIC`: `domain.<module>:<class>`), so the event
store, the projection runner and a projection can tell these events apart without loading
the modules that define them: a command that appends a verdict then loads no run events.
A test checks every one against its class.
"""

from __future__ import annotations

CELLS_RECORDED = "domain.run:CellsRecorded"
RUN_FACTS_ADDED = "domain.run:RunFactsAdded"
RUN_FINISHED = "domain.run:RunFinished"
RUN_IMPORTED = "domain.run:RunImported"
RUN_INVALIDATED = "domain.run:RunInvalidated"
RUN_REINSTATED = "domain.run:RunReinstated"
RUN_SUPERSEDED = "domain.run:RunSuperseded"
SCORE_CORRECTED = "domain.run:ScoreCorrected"
STALE_RUN_RECOVERED = "domain.run:StaleRunRecovered"

GATE_EVALUATED = "domain.verdicts:GateEvaluated"
GATE_FINDINGS_RECORDED = "domain.verdicts:GateFindingsRecorded"
REVIEW_RECORDED = "domain.verdicts:ReviewRecorded"
