"""What is built on the wrapper: the inspector, the demo, the resume harness, OTLP JSON files."""
