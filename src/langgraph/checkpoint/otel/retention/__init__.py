"""Retention for long-lived threads: plan what a policy removes (read only), apply it with an
archive first, and restore from that archive (`langgraph-otel retention`, `restore`).

`scan` reads the stored checkpoints, `analysis.retention` plans, `archive` writes and reads the
archive file, `apply` removes, `restore` puts back, `telemetry` reports spans and counters.
"""
