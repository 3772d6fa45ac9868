/**
 * bench/dns/chart: queries per second and p99 latency per case, the servers side by side, as two bar charts
 * next to each other (Vega-Lite, the spec built here, pure; rendered to SVG by vega without a browser,
 * rasterised to PNG by resvg, as bench/overlay/chart.ts).
 */
import type { ChartRow } from './report.js';

function bars(field: 'qps' | 'p99Ms', title: string, format: string): Record<string, unknown> {
  const x = { field: 'case', type: 'nominal', title: null, sort: { field: 'order', op: 'min' }, axis: { labelAngle: 0, labelLimit: 200 } };
  return {
    width: 330,
    height: 240,
    layer: [
      {
        mark: { type: 'bar' },
        encoding: {
          x, xOffset: { field: 'server', sort: ['nodenet dns', 'dnsmasq'] },
          y: { field, type: 'quantitative', title },
          color: { field: 'server', type: 'nominal', title: null, sort: ['nodenet dns', 'dnsmasq'], scale: { range: ['#4c78a8', '#bab0ac'] } },
          tooltip: [{ field: 'case' }, { field: 'server' }, { field, format }],
        },
      },
      {
        mark: { type: 'text', dy: -6, fontSize: 10 },
        encoding: { x, xOffset: { field: 'server', sort: ['nodenet dns', 'dnsmasq'] }, y: { field, type: 'quantitative' }, text: { field, type: 'quantitative', format } },
      },
    ],
  };
}

export function chartSpec(rows: readonly ChartRow[], title: string, subtitle: string): Record<string, unknown> {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle },
    data: { values: rows },
    background: 'white',
    hconcat: [bars('qps', 'queries per second (dnsperf)', ',.0f'), bars('p99Ms', 'p99 latency (ms)', '.2f')],
  };
}

/** The chart as SVG and PNG (vega, vega-lite and resvg are loaded only here). */
export async function renderChart(rows: readonly ChartRow[], title: string, subtitle: string): Promise<{ svg: string; png: Buffer }> {
  const [vega, vl, { Resvg }] = await Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]);
  const compiled = vl.compile(chartSpec(rows, title, subtitle) as never).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const png = new Resvg(svg, { background: 'white', fitTo: { mode: 'zoom', value: 2 }, font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  return { svg, png: Buffer.from(png) };
}
