"""Record a run and its cells from Python code: `python examples/python_api.py [LEDGER]`.

The answers are a stand-in for a real evaluation; `benchledger runs` and `show` list
the run it records (in ledger.db, or the ledger given).
"""

import sys

import benchledger

answers = {f"question-{i}": i % 4 != 0 for i in range(1000)}

with benchledger.open(sys.argv[1] if len(sys.argv) > 1 else "ledger.db") as ledger:
    work = {"benchmark": "toy_qa", "agent": "my-agent", "provider": "local", "model": "m1"}
    with ledger.run(**work, config={"temperature": 0.0}) as run:
        for key, correct in answers.items():
            run.cell(key, "passed" if correct else "failed", score=float(correct))
    print(run.run_key, run.ending)
