/**
 * bench/cni/report: one run's rows, the table the bench prints, and issue
 * 24's targets for the shim against the floor of the same run. Pure.
 *
 * The floor is a bare `node -e 0` started the way a runtime starts a plugin:
 * no Node plugin can be faster, and the machine's speed at the time of the
 * run is in it, so the targets are relative to it:
 * - concurrency 1: nodenet's ADD p50 at most the floor's + 8 ms;
 * - concurrency 16: nodenet's ADDs per second at least 0.8 × the floor's.
 * Every nodenet row is checked (0 Services and N Services alike); the
 * reference plugins, and `/bin/true` (the floor of any native plugin, since
 * the shim is C), are shown beside them for scale, never checked.
 * Percentiles are bench/lib/stats' (nearest rank).
 */
import { table as markdownTable } from '../lib/report.js';

export type PluginKind = 'floor' | 'exec-floor' | 'nodenet' | 'reference';

export interface Row {
  readonly plugin: string;
  readonly kind: PluginKind;
  readonly conc: number;
  readonly add: { p50: number; p99: number; perSec: number };
  readonly del: { p50: number; p99: number; perSec: number };
  readonly agentAdd: { p50: number; p99: number } | null;
  readonly agentDel: { p50: number; p99: number } | null;
  readonly cpuPerAdd: { plugin: number; agent: number | null };
}

/** Issue 24's targets. */
export const ADD_P50_ABOVE_FLOOR_MS = 8;
export const RATE_SHARE_OF_FLOOR = 0.8;

export interface TargetCheck {
  readonly target: 'latency' | 'rate';
  readonly plugin: string;
  readonly conc: number;
  /** The floor's figure: ADD p50 ms (latency) or ADDs/s (rate). */
  readonly floor: number;
  /** floor + 8 ms, or 0.8 × floor. */
  readonly limit: number;
  readonly value: number;
  /** The reference plugins' figure at the same concurrency, null without them. */
  readonly reference: number | null;
  readonly met: boolean;
}

/**
 * The targets for every nodenet row. A missing floor row at a concurrency leaves that target out
 * (nothing to compare with); a NaN value is not met.
 */
export function checkTargets(rows: readonly Row[]): TargetCheck[] {
  const find = (kind: PluginKind, conc: number) => rows.find((r) => r.kind === kind && r.conc === conc);
  const out: TargetCheck[] = [];
  const lat = find('floor', 1);
  const rate = find('floor', 16);
  for (const r of rows.filter((x) => x.kind === 'nodenet')) {
    if (r.conc === 1 && lat) {
      const limit = lat.add.p50 + ADD_P50_ABOVE_FLOOR_MS;
      out.push({ target: 'latency', plugin: r.plugin, conc: 1, floor: lat.add.p50, limit, value: r.add.p50, reference: find('reference', 1)?.add.p50 ?? null, met: r.add.p50 <= limit });
    }
    if (r.conc === 16 && rate) {
      const limit = rate.add.perSec * RATE_SHARE_OF_FLOOR;
      out.push({ target: 'rate', plugin: r.plugin, conc: 16, floor: rate.add.perSec, limit, value: r.add.perSec, reference: find('reference', 16)?.add.perSec ?? null, met: r.add.perSec >= limit });
    }
  }
  return out;
}

export function fmt(x: number): string {
  return Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : '–';
}

export function table(rows: readonly Row[], pods: number): string {
  const head = ['plugin', 'conc', 'ADD p50 / p99 ms', 'DEL p50 / p99 ms', 'ADDs/s', 'DELs/s', 'agent ADD p50 / p99 ms', 'agent DEL p50 / p99 ms', 'CPU per ADD: plugin + agent ms'];
  const cells = rows.map((r) => [
    r.plugin, String(r.conc),
    `${fmt(r.add.p50)} / ${fmt(r.add.p99)}`, `${fmt(r.del.p50)} / ${fmt(r.del.p99)}`,
    fmt(r.add.perSec), fmt(r.del.perSec),
    r.agentAdd ? `${fmt(r.agentAdd.p50)} / ${fmt(r.agentAdd.p99)}` : '–',
    r.agentDel ? `${fmt(r.agentDel.p50)} / ${fmt(r.agentDel.p99)}` : '–',
    `${fmt(r.cpuPerAdd.plugin)}${r.cpuPerAdd.agent === null ? '' : ` + ${fmt(r.cpuPerAdd.agent)}`}`,
  ]);
  return `${pods} pods per batch\n\n${markdownTable(head, cells, 2)}\n`;
}

/** The targets as a table: what each nodenet row reached against the floor's limit, the reference beside it. */
export function targetsTable(checks: readonly TargetCheck[]): string {
  if (checks.length === 0) return 'targets: no floor row to compare with\n';
  const head = ['target (issue 24)', 'plugin', 'floor', 'limit', 'nodenet', 'reference', 'met'];
  const cells = checks.map((c) => {
    const [what, unit] = c.target === 'latency'
      ? [`ADD p50 at concurrency 1 ≤ floor + ${ADD_P50_ABOVE_FLOOR_MS} ms`, ' ms']
      : [`ADDs/s at concurrency 16 ≥ ${RATE_SHARE_OF_FLOOR} × floor`, '/s'];
    return [what, c.plugin, `${fmt(c.floor)}${unit}`, `${fmt(c.limit)}${unit}`, `${fmt(c.value)}${unit}`, c.reference === null ? '–' : `${fmt(c.reference)}${unit}`, c.met ? 'yes' : '**no**'];
  });
  return `${markdownTable(head, cells, 2)}\n`;
}
