import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from '@jest/globals';

import { projectRoot } from '../helpers/processes.ts';

/**
 * The Grafana dashboard's shape as an import needs it: its queries run against the fleet in
 * test/integration/e2e/prometheus.fleet.test.ts; here, what Grafana itself would get wrong: a panel
 * tied to one data source, panels off the 24-column grid or on top of one another, a chart without
 * a unit on its axis.
 */
type GridPos = { x: number; y: number; w: number; h: number };
type Panel = {
  id: number;
  type: string;
  title: string;
  description?: string;
  gridPos: GridPos;
  datasource?: { type: string; uid: string };
  targets?: { datasource: { type: string; uid: string }; expr: string; refId: string }[];
  fieldConfig?: { defaults: { unit?: string } };
};
const dashboard = JSON.parse(
  readFileSync(path.join(projectRoot, 'docs', 'operations', 'grafana-dashboard.json'), 'utf8'),
) as { uid: string; title: string; panels: Panel[]; templating: { list: Record<string, unknown>[] } };
const charts = dashboard.panels.filter((p) => p.type !== 'row');
const variable = { type: 'prometheus', uid: '${datasource}' };

describe('docs/operations/grafana-dashboard.json', () => {
  it('asks for its Prometheus data source on import, and every panel and query uses that choice', () => {
    expect(dashboard.uid).toBe('svc-platform');
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    for (const panel of charts) {
      expect({ title: panel.title, datasource: panel.datasource }).toEqual({
        title: panel.title,
        datasource: variable,
      });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource).toEqual(variable);
    }
  });

  it('gives every chart a title, a description and a unit', () => {
    for (const panel of charts) {
      expect(panel.title).not.toBe('');
      expect({ title: panel.title, described: (panel.description ?? '').length > 20 }).toEqual({
        title: panel.title,
        described: true,
      });
      expect({ title: panel.title, unit: typeof panel.fieldConfig?.defaults.unit }).toEqual({
        title: panel.title,
        unit: 'string',
      });
    }
  });

  it('lays its panels on the 24-column grid without overlap, with unique ids', () => {
    const cells = new Map<string, string>();
    for (const panel of dashboard.panels) {
      const { x, y, w, h } = panel.gridPos;
      expect(x >= 0 && w > 0 && x + w <= 24 && y >= 0 && h > 0).toBe(true);
      for (let col = x; col < x + w; col++) {
        for (let row = y; row < y + h; row++) {
          const key = `${col},${row}`;
          expect({ cell: key, taken: cells.get(key) }).toEqual({ cell: key, taken: undefined });
          cells.set(key, panel.title);
        }
      }
    }
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
