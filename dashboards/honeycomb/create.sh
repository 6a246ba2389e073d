#!/usr/bin/env bash
# Create the langgraph-checkpoint-otel queries, query annotations, board and triggers in Honeycomb.
# Order matters: queries -> query ids -> annotations -> board (references both ids) -> triggers.
# Needs curl and jq. Environment:
#   HONEYCOMB_API_KEY  configuration API key (Manage Queries and Columns, Manage Public Boards,
#                      Manage Triggers); never written to disk by this script
#   HONEYCOMB_DATASET  dataset slug the spans land in (with OTLP: the service.name)
#   HONEYCOMB_API      optional, default https://api.honeycomb.io (EU: https://api.eu1.honeycomb.io)
set -euo pipefail
: "${HONEYCOMB_API_KEY:?set HONEYCOMB_API_KEY}"
: "${HONEYCOMB_DATASET:?set HONEYCOMB_DATASET}"
API="${HONEYCOMB_API:-https://api.honeycomb.io}"
HERE="$(cd "$(dirname "$0")" && pwd)"

post() {  # post PATH  (JSON body on stdin) -> response on stdout
  curl -sS --fail-with-body -X POST "$API$1" \
    -H "X-Honeycomb-Team: $HONEYCOMB_API_KEY" -H "Content-Type: application/json" --data-binary @-
}

board="$(cat "$HERE/board.json")"
for file in "$HERE"/queries/*.json; do
  key="$(basename "$file" .json)"
  query_id="$(post "/1/queries/$HONEYCOMB_DATASET" < "$file" | jq -er .id)"
  annotation_id="$(jq --arg k "$key" --arg q "$query_id" '.[$k] + {query_id: $q}' "$HERE/annotations.json" \
    | post "/1/query_annotations/$HONEYCOMB_DATASET" | jq -er .id)"
  board="$(jq --arg k "$key" --arg q "$query_id" --arg a "$annotation_id" '
    (.panels[] | select(.type == "query") | .query_panel
      | select(.query_id == "@query:\($k)")) |= (.query_id = $q | .query_annotation_id = $a)' <<<"$board")"
  echo "query $key: $query_id (annotation $annotation_id)"
done
if jq -e '[.. | strings | select(startswith("@query:") or startswith("@annotation:"))] | length > 0' <<<"$board" >/dev/null; then
  echo "board still has unresolved placeholders" >&2
  exit 1
fi
echo "board: $(post /1/boards <<<"$board" | jq -r '.links.board_url // .id')"
for file in "$HERE"/triggers/*.json; do
  echo "trigger $(basename "$file" .json): $(post "/1/triggers/$HONEYCOMB_DATASET" < "$file" | jq -r .id)"
done
