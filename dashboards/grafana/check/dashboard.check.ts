// Type check of ../langgraph-checkpoints.json against npm @grafana/schema (run: npm run check, or
// tests/integration/test_grafana_dashboard.py). generate.mjs turns the JSON into langgraph-checkpoints.gen.ts,
// an object literal with `satisfies Dashboard` (a plain JSON import widens its strings; see there).
import type { Dashboard } from '@grafana/schema';

import { dashboard } from './langgraph-checkpoints.gen.js';

// The whole dashboard: panels, rows, templating, annotations, time, ...
const d = dashboard satisfies Dashboard;

// Stricter than the schema where Grafana's import needs it: every panel has an id and a grid
// position, and every query panel names its data source as a reference ({ type, uid }). The
// values themselves (the ${datasource} / ${tempo} variables) are checked by the Python test.
interface GridPos {
  x: number;
  y: number;
  w: number;
  h: number;
}
interface PlacedPanel {
  id: number;
  type: string;
  gridPos: GridPos;
}
interface QueryPanel extends PlacedPanel {
  datasource: { type: string; uid: string };
  targets: ReadonlyArray<{ refId: string }>;
}
interface Placed {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: ReadonlyArray<QueryPanel | (PlacedPanel & { type: 'row'; panels: ReadonlyArray<never> })>;
}
export const placed = d satisfies Placed;
