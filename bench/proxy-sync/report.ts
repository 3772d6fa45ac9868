/**
 * bench/proxy-sync/report: the result of one case, checked when it crosses
 * the process boundary (a child prints it as JSON), the Markdown table and
 * the verdict on the issue's targets. Pure.
 *
 * Times in the table are Proxier.lastSync.durationMs (what the agent itself
 * reports); the targets are judged on the wall time around syncNow(), which
 * also covers draining the trackers and building the snapshot, so a pass
 * there is never flattered.
 */
import { BENCH_MODES, isBenchMode, modeLabel, type BenchMode } from '../lib/proxy-modes.js';
import { thousands } from '../lib/report.js';
import { median } from '../lib/stats.js';
import type { CommandTiming } from './timing-runner.js';

export interface SyncMeasure {
  readonly ok: boolean;
  /** Wall time of `await proxier.syncNow()` (for a change: from the handler call). */
  readonly wallMs: number;
  /** Proxier.lastSync.durationMs; null when the sync never reported (killed). */
  readonly durationMs: number | null;
  readonly scope: 'full' | 'partial' | null;
  /** Services in a partial scope. */
  readonly changedServices: number | null;
  /** The nftables backend's own split (render vs nft -f); null in iptables mode. */
  readonly renderMs: number | null;
  readonly applyMs: number | null;
  /** Of applyMs, the kernel's time over nodenet's netlink batch; null through `nft -f`, in iptables mode, or in older results. */
  readonly kernelMs: number | null;
  /** The commands the sync ran (canary checks, listings, the restore / nft -f), in order, with their wall time. */
  readonly commands: readonly CommandTiming[];
  readonly error: string | null;
}

export interface CaseResult {
  readonly mode: BenchMode;
  readonly services: number;
  readonly netns: string;
  /** Where the case ran when not on this machine ("a qemu VM, kernel 6.1.0-...-amd64, TCG"); absent here. */
  readonly where?: string;
  /** From the iptables executor (`iptables -V`); null in nftables mode. */
  readonly iptablesBackend: 'nft' | 'legacy' | null;
  /** Time to feed every Service and EndpointSlice through the handlers. */
  readonly feedMs: number;
  readonly full: SyncMeasure | null;
  /** Rules the full sync wrote (iptables: lines of the restore; nftables: rules). */
  readonly rules: number | null;
  /** nftables: set and map elements the full sync wrote; null in iptables mode. */
  readonly elements: number | null;
  /** Per-endpoint chains the kernel holds after the full sync (expected: 2 per Service). */
  readonly kernelEndpointChains: number | null;
  /** process RSS before feeding anything, and after the full sync (MiB). */
  readonly rssBaselineMiB: number;
  readonly rssMiB: number | null;
  /** RSS after the full GC the agent runs after a large full sync (node/full-gc.ts) and a second's rest; null in older results. */
  readonly rssAfterGcMiB: number | null;
  readonly heapUsedMiB: number | null;
  readonly changes: readonly SyncMeasure[];
  /**
   * iptables modes: the kernel's floor for the nat table the case built, measured after the changes.
   * noopMs: `*nat COMMIT` through iptables-restore --noflush (reads the whole table, commits nothing);
   * replaceMs: the same plus `-F` of the empty canary chain, which makes it commit: one whole-table
   * replace, the least any change costs with iptables-legacy. null in nftables mode or when not measured.
   */
  readonly restoreFloor: RestoreFloor | null;
  /** A second full sync by a new Proxier and backend over the rules already in the kernel (agent restart). */
  readonly restart: SyncMeasure | null;
  readonly restartSkipped: string | null;
  /** The case hit --cap-s: a sync was killed or later steps skipped. */
  readonly capped: boolean;
  readonly error: string | null;
}

export interface RestoreFloor {
  readonly noopMs: number;
  readonly replaceMs: number;
}

// ---- validation at the process boundary ----

type Obj = Record<string, unknown>;

function isObj(x: unknown): x is Obj {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function field<T>(o: Obj, k: string, ok: (v: unknown) => v is T, what: string, path: string): T {
  const v = o[k];
  if (!ok(v)) throw new TypeError(`${path}.${k}: expected ${what}, got ${JSON.stringify(v)}`);
  return v;
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isNumOrNull = (v: unknown): v is number | null => v === null || isNum(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isStrOrNull = (v: unknown): v is string | null => v === null || isStr(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isKind = (v: unknown): v is 'nft' | 'legacy' | null => v === null || v === 'nft' || v === 'legacy';
const isScope = (v: unknown): v is 'full' | 'partial' | null => v === null || v === 'full' || v === 'partial';

function parseCommand(x: unknown, path: string): CommandTiming {
  if (!isObj(x)) throw new TypeError(`${path}: expected an object`);
  return {
    cmd: field(x, 'cmd', isStr, 'a string', path),
    startMs: field(x, 'startMs', isNum, 'a number', path),
    ms: field(x, 'ms', isNum, 'a number', path),
    exitCode: field(x, 'exitCode', isNumOrNull, 'a number or null', path),
  };
}

function parseSync(x: unknown, path: string): SyncMeasure {
  if (!isObj(x)) throw new TypeError(`${path}: expected an object`);
  const cmds = x['commands'];
  if (!Array.isArray(cmds)) throw new TypeError(`${path}.commands: expected an array`);
  return {
    ok: field(x, 'ok', isBool, 'a boolean', path),
    wallMs: field(x, 'wallMs', isNum, 'a number', path),
    durationMs: field(x, 'durationMs', isNumOrNull, 'a number or null', path),
    scope: field(x, 'scope', isScope, '"full", "partial" or null', path),
    changedServices: field(x, 'changedServices', isNumOrNull, 'a number or null', path),
    renderMs: field(x, 'renderMs', isNumOrNull, 'a number or null', path),
    applyMs: field(x, 'applyMs', isNumOrNull, 'a number or null', path),
    kernelMs: x['kernelMs'] === undefined ? null : field(x, 'kernelMs', isNumOrNull, 'a number or null', path),
    commands: cmds.map((c, i) => parseCommand(c, `${path}.commands[${i}]`)),
    error: field(x, 'error', isStrOrNull, 'a string or null', path),
  };
}

function parseFloor(x: unknown, path: string): RestoreFloor | null {
  if (x === null || x === undefined) return null; // undefined: results written before the floor was measured
  if (!isObj(x)) throw new TypeError(`${path}: expected an object or null`);
  return { noopMs: field(x, 'noopMs', isNum, 'a number', path), replaceMs: field(x, 'replaceMs', isNum, 'a number', path) };
}

/** Checks a case result read back from a child process's JSON. Throws TypeError naming the bad field. */
export function parseCaseResult(x: unknown): CaseResult {
  const p = 'result';
  if (!isObj(x)) throw new TypeError(`${p}: expected an object`);
  const full = x['full'] === null ? null : parseSync(x['full'], `${p}.full`);
  const restart = x['restart'] === null ? null : parseSync(x['restart'], `${p}.restart`);
  const ch = x['changes'];
  if (!Array.isArray(ch)) throw new TypeError(`${p}.changes: expected an array`);
  return {
    mode: field(x, 'mode', isBenchMode, `one of ${BENCH_MODES.join(', ')}`, p),
    services: field(x, 'services', isNum, 'a number', p),
    netns: field(x, 'netns', isStr, 'a string', p),
    ...(x['where'] === undefined ? {} : { where: field(x, 'where', isStr, 'a string', p) }),
    iptablesBackend: field(x, 'iptablesBackend', isKind, '"nft", "legacy" or null', p),
    feedMs: field(x, 'feedMs', isNum, 'a number', p),
    full,
    rules: field(x, 'rules', isNumOrNull, 'a number or null', p),
    elements: field(x, 'elements', isNumOrNull, 'a number or null', p),
    kernelEndpointChains: field(x, 'kernelEndpointChains', isNumOrNull, 'a number or null', p),
    rssBaselineMiB: field(x, 'rssBaselineMiB', isNum, 'a number', p),
    rssMiB: field(x, 'rssMiB', isNumOrNull, 'a number or null', p),
    rssAfterGcMiB: x['rssAfterGcMiB'] === undefined ? null : field(x, 'rssAfterGcMiB', isNumOrNull, 'a number or null', p),
    heapUsedMiB: field(x, 'heapUsedMiB', isNumOrNull, 'a number or null', p),
    changes: ch.map((c, i) => parseSync(c, `${p}.changes[${i}]`)),
    restoreFloor: parseFloor(x['restoreFloor'], `${p}.restoreFloor`),
    restart,
    restartSkipped: field(x, 'restartSkipped', isStrOrNull, 'a string or null', p),
    capped: field(x, 'capped', isBool, 'a boolean', p),
    error: field(x, 'error', isStrOrNull, 'a string or null', p),
  };
}

// ---- statistics and formatting ----

export function max(xs: readonly number[]): number {
  return xs.length ? Math.max(...xs) : NaN;
}

/** Milliseconds: one decimal below 10 ms, whole numbers with separators above. */
export function ms(n: number): string {
  if (!Number.isFinite(n)) return '–';
  return n < 10 ? n.toFixed(1) : thousands(n);
}

function syncCell(m: SyncMeasure | null, capped: boolean, capS: number): string {
  if (m === null) return capped ? `capped at ${capS} s` : '–';
  if (!m.ok) return capped ? `> ${thousands(capS * 1000)} (capped)` : 'failed';
  return ms(m.durationMs ?? m.wallMs);
}

function changeDurations(r: CaseResult): number[] {
  return r.changes.filter((c) => c.ok).map((c) => c.durationMs ?? c.wallMs);
}

export const TABLE_HEAD = ['mode', 'Services', 'rules/elements', 'full sync (ms)', 'one-endpoint change p50/max (ms)', 'restart full sync (ms)', 'restore floor no-op / replace (ms)', 'RSS (MiB): after the sync / after the GC'];

/** One Markdown row per case, in the order given. */
export function formatTable(results: readonly CaseResult[], capS: number): string {
  const rows = results.map((r) => {
    const rules = r.rules === null ? '–' : r.elements === null ? thousands(r.rules) : `${thousands(r.rules)} + ${thousands(r.elements)}`;
    const d = changeDurations(r);
    const failed = r.changes.length - d.length;
    const change = r.changes.length === 0 ? (r.capped ? 'capped' : '–') : `${ms(median(d))} / ${ms(max(d))}${failed ? ` (${failed} failed)` : ''}`;
    const restart = r.restart ? syncCell(r.restart, r.capped, capS) : r.restartSkipped ? 'skipped' : '–';
    const rss = r.rssMiB === null ? '–' : `${r.rssMiB.toFixed(0)}${r.rssAfterGcMiB === null ? '' : ` / ${r.rssAfterGcMiB.toFixed(0)}`}`;
    const floor = r.restoreFloor === null ? '–' : `${ms(r.restoreFloor.noopMs)} / ${ms(r.restoreFloor.replaceMs)}`;
    return [modeLabel(r), thousands(r.services), rules, syncCell(r.full, r.capped, capS), change, restart, floor, rss];
  });
  return [`| ${TABLE_HEAD.join(' | ')} |`, `|${TABLE_HEAD.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((c) => `| ${c.join(' | ')} |`)].join('\n');
}

// ---- targets ----

export interface TargetVerdict {
  readonly target: string;
  /** null: not measured in this run. */
  readonly pass: boolean | null;
  readonly detail: string;
}

const CHANGE_TARGET_SERVICES = 10_000;
const CHANGE_TARGET_MS = 200;
const FULL_TARGET_MS = 5_000;

/**
 * The issue's targets: a one-endpoint change at 10,000 Services applied in
 * under 200 ms in each mode (every repeat, wall time), and a full nftables
 * sync at 10,000 Services in under 5 s (wall time).
 */
export function evaluateTargets(results: readonly CaseResult[], modes: readonly BenchMode[]): TargetVerdict[] {
  const out: TargetVerdict[] = [];
  for (const m of modes) {
    const r = results.find((x) => x.mode === m && x.services === CHANGE_TARGET_SERVICES);
    const target = `one-endpoint change at 10,000 Services < ${CHANGE_TARGET_MS} ms, ${r ? modeLabel(r) : m}`;
    if (!r) {
      out.push({ target, pass: null, detail: 'no 10,000-Service case in this run' });
      continue;
    }
    const walls = r.changes.map((c) => c.wallMs);
    if (r.changes.length === 0 || r.changes.some((c) => !c.ok)) {
      out.push({ target, pass: false, detail: r.changes.length === 0 ? `no change measured${r.capped ? ' (case capped)' : ''}` : 'a change sync failed' });
      continue;
    }
    const worst = max(walls);
    out.push({ target, pass: worst < CHANGE_TARGET_MS, detail: `wall p50 ${ms(median(walls))} ms, max ${ms(worst)} ms over ${walls.length}` });
  }
  if (modes.includes('nftables')) {
    const r = results.find((x) => x.mode === 'nftables' && x.services === CHANGE_TARGET_SERVICES);
    const target = `full nftables sync at 10,000 Services < ${FULL_TARGET_MS / 1000} s`;
    if (!r) out.push({ target, pass: null, detail: 'no 10,000-Service case in this run' });
    else if (!r.full || !r.full.ok) out.push({ target, pass: false, detail: r.full?.error ?? 'no full sync' });
    else out.push({ target, pass: r.full.wallMs < FULL_TARGET_MS, detail: `wall ${ms(r.full.wallMs)} ms` });
  }
  return out;
}

const BIG = 30_000;
const BIG_FULL_MS = 3_000;
const BIG_CHANGE_MS = 150;
const BIG_RSS_MIB = 250;

/**
 * Issue 12's targets at 30,000 Services: nftables (either layout) full sync ≤ 3 s and a one-endpoint change
 * ≤ 150 ms (every repeat, the sync's own duration); RSS held after the sync's collection ≤ 250 MiB in every mode.
 */
export function targets30k(results: readonly CaseResult[], modes: readonly BenchMode[]): TargetVerdict[] {
  const out: TargetVerdict[] = [];
  for (const m of modes) {
    const r = results.find((x) => x.mode === m && x.services === BIG);
    const label = r ? modeLabel(r) : m;
    if (m === 'nftables' || m === 'nftables-sharded') {
      const full = `full sync at 30,000 Services ≤ ${BIG_FULL_MS / 1000} s, ${label}`;
      const change = `one-endpoint change at 30,000 Services ≤ ${BIG_CHANGE_MS} ms, ${label}`;
      if (!r) {
        out.push({ target: full, pass: null, detail: 'no 30,000-Service case in this run' }, { target: change, pass: null, detail: 'no 30,000-Service case in this run' });
      } else {
        const f = r.full;
        out.push(!f || !f.ok ? { target: full, pass: false, detail: f?.error ?? 'no full sync' } : { target: full, pass: (f.durationMs ?? f.wallMs) <= BIG_FULL_MS, detail: `${ms(f.durationMs ?? f.wallMs)} ms` });
        const d = changeDurations(r);
        out.push(d.length === 0 || d.length !== r.changes.length
          ? { target: change, pass: false, detail: r.changes.length === 0 ? 'no change measured' : 'a change sync failed' }
          : { target: change, pass: max(d) <= BIG_CHANGE_MS, detail: `p50 ${ms(median(d))} ms, max ${ms(max(d))} ms over ${d.length}` });
      }
    }
    const rss = `RSS held at 30,000 Services ≤ ${BIG_RSS_MIB} MiB, ${label}`;
    if (!r || r.rssAfterGcMiB === null) out.push({ target: rss, pass: null, detail: r ? 'not measured' : 'no 30,000-Service case in this run' });
    else out.push({ target: rss, pass: r.rssAfterGcMiB <= BIG_RSS_MIB, detail: `${Math.round(r.rssAfterGcMiB)} MiB after the sync's collection` });
  }
  return out;
}

/** Total time covered by the commands, counting overlapping (parallel) ones once. */
export function commandTime(cmds: readonly CommandTiming[]): number {
  const iv = cmds.map((c) => [c.startMs, c.startMs + c.ms] as const).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [s, e] of iv) {
    if (e <= end) continue;
    total += e - Math.max(s, end);
    end = e;
  }
  return total;
}

/**
 * Where a sync's time went: "1,010 ms = nft -j list tables ip 840 + nft -f - 130 + other 40";
 * commands that ran in parallel with the one before are joined with "||", and
 * "other" (render, snapshot, bookkeeping) is what no command covered.
 */
export function splitLine(m: SyncMeasure): string {
  const total = m.durationMs ?? m.wallMs;
  let line = '';
  let prevEnd = -Infinity;
  for (const c of m.commands) {
    line += `${line === '' ? '' : c.startMs < prevEnd ? ' || ' : ' + '}${c.cmd} ${ms(c.ms)}`;
    prevEnd = Math.max(prevEnd, c.startMs + c.ms);
  }
  const other = `other ${ms(Math.max(0, total - commandTime(m.commands)))}`;
  return `${ms(total)} ms = ${line === '' ? other : `${line} + ${other}`}`;
}

export function formatTargets(verdicts: readonly TargetVerdict[]): string {
  return verdicts.map((v) => `- ${v.target}: ${v.pass === null ? 'NOT MEASURED' : v.pass ? 'PASS' : 'FAIL'} (${v.detail})`).join('\n');
}
