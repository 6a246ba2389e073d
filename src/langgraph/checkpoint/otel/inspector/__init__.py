"""The checkpoint inspector, `langgraph-otel` (docs/inspector.md): reads a saver and/or span
files (`sources`), computes what each command shows (`views`, as the `model` classes) and prints
it (`render`) or writes the HTML report (`report`); `compat` checks stored threads against a new
graph; `cli` is the command line (the ``langgraph-otel`` console script)."""
