/**
 * bench/proxy-sync's cases on Debian's kernel, for IPVS mode: the host has no IPVS. `npm run bench:proxy --
 * --modes ipvs` runs this extra suite with its sizes, repeat and restart as --param values and reads
 * proxy-sync.json back from the run's share. Each case runs as on the host: its own process (the bench's
 * bundle, dist/bench/proxy-sync.mjs, which bench:proxy builds before it starts the VM), its own scratch
 * namespace, the real backend as the agent composes it. Under TCG the times are many times the native
 * ones (the finding there is the RSS, which emulation does not change, and the shape); KVM is used when the
 * host has it.
 */
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import type { GuestContext, VmSuite } from '../suite.js';
import { caseArgv, caseOutput } from '../../bench/proxy-sync/child.js';

function runCase(script: string, mode: string, size: number, o: { repeat: number; capS: number; restart: boolean }, log: (m: string) => void): Promise<unknown> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, caseArgv(script, { mode, services: size, netns: `nn-bps-vm-${mode}-${size}` }, o), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr!.setEncoding('utf8').on('data', (d: string) => { for (const l of d.split('\n')) if (l.trim()) log(`  ${l.slice(0, 300)}`); });
    p.on('close', (code) => {
      let r: unknown = null;
      try {
        r = caseOutput(out);
      } catch (e) {
        return resolve({ mode, services: size, error: `unreadable result: ${e instanceof Error ? e.message : String(e)}` });
      }
      resolve(r ?? { mode, services: size, error: `case process exited ${code} without a result` });
    });
  });
}

export const suite: VmSuite = {
  name: 'proxy-sync', vms: 1, memoryMiB: 3072, extra: true,
  timeoutSec: { kvm: 3600, tcg: 6 * 3600 },
  async run(ctx: GuestContext): Promise<string> {
    const p = ctx.params;
    const modes = (p.get('modes') ?? 'ipvs').split(',');
    const sizes = (p.get('sizes') ?? '1000,10000').split(',').map(Number);
    const repeat = Number(p.get('repeat') ?? 3);
    const restart = p.get('restart') === '1';
    const capS = Number(p.get('cap') ?? 3 * 3600);
    const script = `${ctx.dist}/bench/proxy-sync.mjs`;
    if (!existsSync(script)) throw new Error(`${script} is missing: run this suite through npm run bench:proxy, which bundles it`);
    const where = `a qemu VM, kernel ${release()}, ${p.get('accel') ?? 'tcg'}`;
    const results: unknown[] = [];
    for (const mode of modes) {
      for (const size of sizes) {
        ctx.log(`[proxy-sync] ${mode} ${size} Services ...`);
        const t0 = Date.now();
        const r = (await runCase(script, mode, size, { repeat, capS, restart }, ctx.log)) as Record<string, unknown>;
        results.push({ ...r, where });
        ctx.log(`[proxy-sync] ${mode} ${size}: ${r['error'] ? `ERROR ${String(r['error'])}` : 'done'} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
        writeFileSync(`${ctx.share}/proxy-sync.json`, `${JSON.stringify({ kernel: release(), results }, null, 2)}\n`);
      }
    }
    const failed = results.filter((r) => (r as { error?: unknown }).error);
    return `${results.length} cases, ${failed.length} with an error`;
  },
};
