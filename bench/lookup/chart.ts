/**
 * bench/lookup/chart: the latency chart, drawn by Vega-Lite (the spec is
 * built here, pure; vega renders it to SVG without a browser) and rasterised
 * to PNG by resvg. Columns: p50 and p99 of connect(); rows: the machine (this
 * one, and the VM whose kernel has IPVS, each on its own y scale); x: the
 * number of Services (log); colour: the mode; dashes: the first Service or
 * the last.
 */
import type { ChartRow } from './report.js';

export function chartSpec(rows: readonly ChartRow[], title: string): Record<string, unknown> {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'new-connection latency (connect(), µs) against the number of ClusterIP Services; solid: the Service matched last, dashed: matched first' },
    data: { values: rows },
    background: 'white',
    facet: {
      row: { field: 'machine', type: 'nominal', title: null, sort: { field: 'machineOrder', op: 'min' }, header: { labelFontSize: 12, labelFontWeight: 'bold' } },
      column: { field: 'stat', type: 'nominal', title: null, sort: ['p50', 'p99'], header: { labelFontSize: 12, labelExpr: "'connect ' + datum.value" } },
    },
    spec: {
      width: 360,
      height: 240,
      mark: { type: 'line', point: true, strokeWidth: 2 },
      encoding: {
        x: { field: 'services', type: 'quantitative', scale: { type: 'log', nice: false }, title: 'Services', axis: { format: '~s' } },
        y: { field: 'latencyUs', type: 'quantitative', title: 'µs', scale: { zero: true } },
        color: { field: 'mode', type: 'nominal', title: 'mode', scale: { scheme: 'tableau10' } },
        strokeDash: { field: 'target', type: 'nominal', title: 'connection to', sort: ['last Service', 'first Service'], scale: { range: [[1, 0], [5, 4]] }, legend: null },
        tooltip: [{ field: 'mode' }, { field: 'services' }, { field: 'target' }, { field: 'stat' }, { field: 'latencyUs', format: '.1f' }],
      },
    },
    resolve: { scale: { y: 'independent' } },
  };
}

/** The chart as SVG and PNG (vega, vega-lite and resvg are loaded only here). */
export async function renderChart(rows: readonly ChartRow[], title: string): Promise<{ svg: string; png: Buffer }> {
  const [vega, vl, { Resvg }] = await Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]);
  const compiled = vl.compile(chartSpec(rows, title) as never).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const png = new Resvg(svg, { background: 'white', fitTo: { mode: 'zoom', value: 2 }, font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  return { svg, png: Buffer.from(png) };
}
