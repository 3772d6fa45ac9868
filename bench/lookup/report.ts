/**
 * bench/lookup/report: the benchmark's results as a document (the JSON
 * written under bench/results/), a Markdown table and the chart's data
 * rows. Pure.
 */
import { median } from '../lib/stats.js';
import type { CaseResult } from './case.js';
import { modeLabel, type LookupMode } from './modes.js';

export const SCHEMA = 'nodenet.bench.lookup/v1';

/** Where a set of cases ran: this machine, or the qemu VM (Debian's kernel) for IPVS. */
export interface Machine {
  readonly where: 'host' | 'vm';
  readonly kernel: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly accel: string | null;
  readonly versions: Readonly<Record<string, string>>;
  readonly iptablesBackend: 'nft' | 'legacy' | null;
}

export interface RunSet {
  readonly machine: Machine;
  readonly results: readonly CaseResult[];
}

export interface LookupDocument {
  readonly schema: typeof SCHEMA;
  readonly date: string;
  readonly command: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly runs: readonly RunSet[];
  /** Why a mode asked for has no figures (e.g. the VM could not run), instead of silence. */
  readonly missing: readonly string[];
}

/** An earlier result file (--include), checked for the fields this module reads. @throws naming what is wrong */
export function parseDocument(v: unknown, file: string): LookupDocument {
  const d = v as Partial<LookupDocument> | null;
  if (!d || typeof d !== 'object' || d.schema !== SCHEMA) throw new Error(`${file} is not a ${SCHEMA} result file`);
  if (!Array.isArray(d.runs) || d.runs.some((r) => !r || typeof r !== 'object' || !r.machine || !Array.isArray(r.results))) throw new Error(`${file}: runs must be a list of { machine, results }`);
  return { ...d, missing: Array.isArray(d.missing) ? d.missing : [] } as LookupDocument;
}

/** The published figures the benchmark compares with. */
export const REFERENCE = [
  'KEP-3866 (kube-proxy nftables): first-packet p99 at 30,000 Services about 0.72 ms in iptables mode, about 0.04 ms in nftables mode.',
  'Measured here by hand at 10,000 Services, new connections per second to the first Service / the last: iptables-legacy 20k / 6.8k; nftables verdict maps flat at about 21k.',
] as const;

const int = (n: number | null | undefined): string => (n == null || !Number.isFinite(n) ? '–' : Math.round(n).toLocaleString('en-US'));
const us = (n: number | null | undefined): string => (n == null || !Number.isFinite(n) ? '–' : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US'));

function target(r: CaseResult, position: 'first' | 'last') {
  return r.targets.find((t) => t.position === position)?.run ?? null;
}

export function label(r: { mode: LookupMode }, m: Machine): string {
  return `${modeLabel(r.mode, r.mode === 'iptables' ? m.iptablesBackend : null)}${m.where === 'vm' ? ' (VM)' : ''}`;
}

/** One Markdown table of every case, host first. */
export function formatTable(doc: LookupDocument): string {
  const head = [
    '| mode | Services | rules | full sync (ms) | 1-endpoint change (ms) | RSS after the sync / held (MiB) | connect p50 first / last (µs) | connect p99 first / last (µs) | connections/s first / last | established RTT p50 (µs) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const rows: string[] = [];
  for (const set of doc.runs) {
    for (const r of set.results) {
      const f = target(r, 'first');
      const l = target(r, 'last');
      rows.push(r.error
        ? `| ${label(r, set.machine)} | ${int(r.services)} | failed: ${r.error.replace(/\|/g, '/').slice(0, 160)} |||||||`
        : `| ${label(r, set.machine)} | ${int(r.services)} | ${int(r.rules)} | ${int(r.fullSyncMs)} | ${int(median(r.changeSyncMs))} | ${int(r.rssMiB)} / ${int(r.rssHeldMiB ?? null)} | ` +
          `${us(f?.connect.p50)} / ${us(l?.connect.p50)} | ${us(f?.connect.p99)} / ${us(l?.connect.p99)} | ${int(f?.connectsPerSecond)} / ${int(l?.connectsPerSecond)} | ${us(l?.rtt?.p50)} |`);
    }
  }
  return [...head, ...rows].join('\n');
}

/** Where each set of cases ran, one line each. */
export function formatMachines(doc: LookupDocument): string {
  return doc.runs.map((s) => {
    const m = s.machine;
    return `- ${m.where === 'vm' ? `qemu VM (${m.accel ?? '?'})` : 'this machine'}: kernel ${m.kernel}, ${m.cpus} CPUs (${m.cpuModel}); ${Object.entries(m.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`;
  }).join('\n');
}

export interface ChartRow {
  /** The facet row: which machine and kernel, and its place (this machine first). */
  readonly machine: string;
  readonly machineOrder: number;
  readonly mode: string;
  readonly services: number;
  /** 'p50' or 'p99'. */
  readonly stat: string;
  /** 'first Service' or 'last Service'. */
  readonly target: string;
  /** Connect latency in µs. */
  readonly latencyUs: number;
}

export function machineTitle(m: Machine): string {
  return m.where === 'vm' ? `qemu VM, kernel ${m.kernel} (${m.accel ?? '?'})` : `this machine, kernel ${m.kernel}`;
}

/** The chart's data: connect latency p50 and p99 to the first and the last Service, per mode and N. */
export function chartRows(doc: LookupDocument): ChartRow[] {
  const out: ChartRow[] = [];
  for (const [order, set] of doc.runs.entries()) {
    for (const r of set.results) {
      if (r.error) continue;
      for (const t of r.targets) {
        for (const stat of ['p50', 'p99'] as const) {
          const v = t.run.connect[stat];
          if (Number.isFinite(v)) out.push({ machine: machineTitle(set.machine), machineOrder: (set.machine.where === 'vm' ? 1000 : 0) + order, mode: label(r, set.machine).replace(/ \(VM\)$/, ''), services: r.services, stat, target: `${t.position} Service`, latencyUs: v });
        }
      }
    }
  }
  return out;
}

/**
 * What the figures say about the expected shape, in words: per machine and
 * mode, how the last Service's p50 at the largest N compares with the
 * first's (the linear walk grows; the hashed lookups stay flat).
 */
export function shapeLines(doc: LookupDocument): string[] {
  const lines: string[] = [];
  for (const set of doc.runs) {
    const modes = [...new Set(set.results.filter((r) => !r.error).map((r) => r.mode))];
    for (const m of modes) {
      const rs = set.results.filter((r) => r.mode === m && !r.error).sort((a, b) => a.services - b.services);
      const big = rs.at(-1);
      const f = big && target(big, 'first');
      const l = big && target(big, 'last');
      if (!big || !f || !l) continue;
      lines.push(`- ${label(big, set.machine)} at ${int(big.services)} Services: the last Service's connect p50 is ${(l.connect.p50 / f.connect.p50).toFixed(2)}× the first's ` +
        `(${us(l.connect.p50)} vs ${us(f.connect.p50)} µs), ${int(l.connectsPerSecond)} vs ${int(f.connectsPerSecond)} connections/s.`);
    }
  }
  return lines;
}
