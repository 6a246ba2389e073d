"""Every LangGraph internal the package reads, behind one documented surface.

LangGraph's public API does not say which load starts a run, which node a task ran, or when a
run ends; its internals and string formats do. Everything that reads them lives here, so a
LangGraph release that changes them is met in one place:

- `formats`: task paths, `branch:to:`/`join:` channels, `Send` packets (pure).
- `namespaces`: checkpoint namespaces (`parent_namespace`, `namespace_depth`, `graph_key`,
  `subgraph_node`) and the node names other layers need (`START`) (pure).
- `loop`: runs seen from the loop (`install`, `entering_run`, `LoopEntry`, `set_task_scope`,
  `update_node`, `run_outcome`), robust to savers between LangGraph and the wrapper; the values
  of delta channels as each checkpoint is created (`delta_values`, `delta_snapshot_value`).
- `graph`: a compiled graph's structure by name (`graph_description`, for the fingerprint),
  and its nodes rewritten (the resume harness).
- `savers`: savers that delegate to another one (the Agent Server's adapter, users' own), so
  an instrumented saver behind them is found and never wrapped twice.

When an internal is missing, its signal is logged once as missing and the wrapper goes on
delegating and reporting what it knows; no run ever fails on its account.
"""
