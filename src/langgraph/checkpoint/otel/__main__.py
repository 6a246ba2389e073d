"""`python -m langgraph.checkpoint.otel`: the checkpoint inspector (`langgraph-otel`)."""

import sys

from langgraph.checkpoint.otel.inspector.cli import main

sys.exit(main())
