"""The agent under test kept apart from the harness that ran it.

Some sources state the harness in the agent slot: lm-evaluation-harness runs a model
with no agent around it (the importer names the harness there), and an inspect_ai log
without a named plan states only its solver chain (`system_message+generate`), inspect's
own building blocks. The stated agent stays as stated; `agent_identity` says which
harness ran the run and which agent, if any, was under test.
"""

from __future__ import annotations

# The harness each import format is the output of; a format absent here (the
# orchestrator's, alwm's, native, JUnit, benchledger's own runs) states no harness.
HARNESS_OF_FORMAT: dict[str, str] = {
    "lm_eval": "lm-evaluation-harness",
    "inspect_ai": "inspect_ai",
    "bfcl": "bfcl",
    "swebench": "swebench",
    "terminal_bench": "terminal-bench",
}
# inspect_ai's built-in solvers: a chain of only these is the harness generating, no agent.
INSPECT_SOLVERS = frozenset(
    {
        "generate",
        "system_message",
        "user_message",
        "prompt_template",
        "chain_of_thought",
        "multiple_choice",
        "self_critique",
        "use_tools",
        "assistant_message",
    }
)


def agent_identity(agent: str, source_format: str | None) -> tuple[str | None, str | None]:
    """(agent_id, harness): the agent under test (None where the slot names the harness
    or its built-in steps) and the harness that ran it (None where none is stated)."""
    harness = HARNESS_OF_FORMAT.get(source_format or "")
    if agent == harness or agent in HARNESS_OF_FORMAT.values():
        return None, harness or agent
    if source_format == "inspect_ai" and set(agent.split("+")) <= INSPECT_SOLVERS:
        return None, harness
    return agent, harness
