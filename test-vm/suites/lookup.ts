/**
 * The rule-lookup benchmark (bench/lookup) on Debian's kernel, for IPVS:
 * the host has none. `nodenet bench lookup` runs the extra suite `lookup`
 * with its modes, sizes and client limits as --param values and reads
 * lookup.json from the run's share. `lookupSmoke` is the default set's
 * small run (IPVS at 100 Services, short client loops), which the
 * `services` suite runs in its VM beside the Services suite (and
 * `lookup-smoke` alone): it checks that every figure is produced, not how
 * large it is.
 */
import { writeFileSync } from 'node:fs';
import type { GuestContext, VmSuite } from '../suite.js';
import { runner } from '../guest/node.js';
import { measure, describeMachine } from '../../bench/lookup/measure.js';
import { LOOKUP_MODES, type LookupMode } from '../../bench/lookup/modes.js';
import type { CaseResult } from '../../bench/lookup/case.js';

interface Params { modes: LookupMode[]; sizes: number[]; count: number; seconds: number; warmup: number; rtt: number; changes: number }

function params(ctx: GuestContext, d: Params): Params {
  const p = ctx.params;
  const num = (k: string, v: number) => (p.has(k) ? Number(p.get(k)) : v);
  const modes = p.has('modes') ? p.get('modes')!.split(',').filter((m): m is LookupMode => (LOOKUP_MODES as readonly string[]).includes(m)) : d.modes;
  return {
    modes, sizes: p.has('sizes') ? p.get('sizes')!.split(',').map(Number) : d.sizes,
    count: num('count', d.count), seconds: num('seconds', d.seconds), warmup: num('warmup', d.warmup), rtt: num('rtt', d.rtt), changes: num('changes', d.changes),
  };
}

/** What a case must have produced: every figure (their sizes are the finding, not a condition). */
export function missingFigures(r: CaseResult): string[] {
  const miss: string[] = [];
  if (r.error) return [r.error];
  if (r.fullSyncMs == null) miss.push('full sync time');
  if (r.rssMiB == null) miss.push('RSS');
  if (r.targets.length !== 2 || r.targets.some((t) => t.run.connect.count === 0)) miss.push('connect latencies to the first and last Service');
  if (!r.targets.find((t) => t.position === 'last')?.run.rtt) miss.push('established round trip');
  return miss;
}

function bench(defaults: Params, strict: boolean) {
  return async (ctx: GuestContext): Promise<string> => {
    const p = params(ctx, defaults);
    const t0 = Date.now();
    const results = await measure({
      ...p, connectTimeoutMs: 3000, runner,
      progress: (i, n, what) => ctx.log(`[lookup ${i + 1}/${n}] ${what}`),
    });
    const doc = { machine: describeMachine('vm', ctx.params.get('accel') ?? null), results };
    writeFileSync(`${ctx.share}/lookup.json`, `${JSON.stringify(doc, null, 2)}\n`);
    const bad = results.map((r) => ({ r, miss: missingFigures(r) })).filter((x) => x.miss.length);
    const summary = results.map((r) => `${r.mode} ${r.services}: ${r.error ? 'failed' : `sync ${r.fullSyncMs} ms, last p50 ${r.targets.at(-1)?.run.connect.p50.toFixed(0)} µs`}`).join('; ');
    ctx.log(`lookup: ${results.length} cases in ${((Date.now() - t0) / 1000).toFixed(0)} s: ${summary}`);
    if (strict && bad.length) throw new Error(bad.map((x) => `${x.r.mode} ${x.r.services}: no ${x.miss.join(', ')}`).join('; '));
    return summary;
  };
}

const SMOKE: Params = { modes: ['ipvs'], sizes: [100], count: 300, seconds: 1, warmup: 20, rtt: 50, changes: 1 };

/** The smoke run, for another suite's VM to run beside its own work (the default set runs it in `services`'s VM). */
export const lookupSmoke = bench(SMOKE, true);

export const suites: VmSuite[] = [
  {
    name: 'lookup', vms: 1, memoryMiB: 3072, extra: true,
    timeoutSec: { kvm: 3600, tcg: 4 * 3600 },
    run: bench({ modes: ['ipvs'], sizes: [100, 1000, 5000, 10000, 30000], count: 20000, seconds: 3, warmup: 200, rtt: 1000, changes: 3 }, false),
  },
  {
    // In the default set it runs inside `services`'s VM (one boot fewer in CI); alone by name.
    name: 'lookup-smoke', vms: 1, memoryMiB: 1536, extra: true,
    timeoutSec: { kvm: 300, tcg: 900 },
    run: lookupSmoke,
  },
];
