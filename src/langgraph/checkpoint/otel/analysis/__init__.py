"""Pure logic over checkpoints and spans: hashing, records, lineage, divergence, diffs, summaries.

Free of OpenTelemetry and of saver details; imports only `names`, `options` and `bounded`.
"""
