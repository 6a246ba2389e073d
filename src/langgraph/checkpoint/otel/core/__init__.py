"""The wrapper: delegation, what each call reports, spans and metrics, auto-instrumentation.

Imports `analysis` and the package's base modules, never the packages built on it (`testing`,
`export`, `inspector`).
"""
