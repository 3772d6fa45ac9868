/**
 * bench/overlay/chart: each path's TCP throughput as a share of the underlay's, as bars (Vega-Lite, the spec built
 * here, pure; rendered to SVG by vega without a browser, rasterised to PNG by resvg, as bench/lookup/chart.ts).
 * The seeds' claim (a tunnel costs, routing does not) reads off the bars: nodenet's paths beside the ceilings built
 * by hand and the underlay.
 */
import type { ShareBar } from './report.js';

export function chartSpec(bars: readonly ShareBar[], title: string): Record<string, unknown> {
  // 0–110% unless a bar goes past it (a routed path or one node can beat the underlay here): then room for its figure.
  const top = Math.max(110, ...bars.map((b) => Math.ceil(b.sharePct / 10) * 10 + 10));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'TCP throughput across nodes (iperf3, median) as a share of the underlay between the same two nodes' },
    data: { values: bars },
    background: 'white',
    width: 520,
    height: { step: 26 },
    layer: [
      {
        mark: { type: 'bar' },
        encoding: {
          y: { field: 'case', type: 'nominal', title: null, sort: { field: 'order', op: 'min' }, axis: { labelLimit: 320 } },
          x: { field: 'sharePct', type: 'quantitative', title: '% of the underlay', scale: { domain: [0, top] } },
          color: { field: 'kind', type: 'nominal', title: null, sort: ['nodenet', 'by hand', 'reference'], scale: { range: ['#4c78a8', '#bab0ac', '#54a24b'] } },
          tooltip: [{ field: 'case' }, { field: 'sharePct', format: '.1f' }],
        },
      },
      {
        mark: { type: 'text', align: 'left', dx: 4 },
        encoding: {
          y: { field: 'case', type: 'nominal', sort: { field: 'order', op: 'min' } },
          x: { field: 'sharePct', type: 'quantitative' },
          text: { field: 'sharePct', type: 'quantitative', format: '.0f' },
        },
      },
    ],
  };
}

/** The chart as SVG and PNG (vega, vega-lite and resvg are loaded only here). */
export async function renderChart(bars: readonly ShareBar[], title: string): Promise<{ svg: string; png: Buffer }> {
  const [vega, vl, { Resvg }] = await Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]);
  const compiled = vl.compile(chartSpec(bars, title) as never).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const png = new Resvg(svg, { background: 'white', fitTo: { mode: 'zoom', value: 2 }, font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  return { svg, png: Buffer.from(png) };
}
