"""The ground-truth harness of the verdicts (issue 29): generated LangGraph apps and release
changes, threads recorded on them, an oracle that runs each thread on for real under the old
and the new code, and the verdicts (`replay`, `compat`, the online detectors, offline
`diverge`) compared with what really happened.

- `desk`: the apps' world (orders, a side-effect ledger, the oracle's event log), their tools
  and `DeskModel`, a scripted chat model that answers from the messages.
- `apps`: `AppSpec` (a seeded, JSON-serialisable description) and `build(spec, world)` for
  every app shape: prebuilt ReAct, `create_agent` with middleware, supervisor, swarm, deep
  agent, the Functional API, subgraphs, `Send` map-reduce.
- `changes`: release changes (`Change`), as functions of an `AppSpec`.
- `threads`: thread scenarios (finished, parked, killed, forked, bare, several turns) and the
  driver that runs their actions.
- `oracle`: observations of real runs and what they say about each verdict's claim.
- `verdicts`: the verdicts, run as a user runs them.
- `cases`: the generator, the known-limits table and the confusion matrix; `python -m
  ground_truth` (`make ground-truth`) runs it.
"""
