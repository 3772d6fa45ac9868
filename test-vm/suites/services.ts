/**
 * The Services suite (test/services-suite.ts, the one `npm test` runs in
 * namespaces on the host) on Debian's kernel, in IPVS mode and in iptables
 * and nftables modes: one VM, three labs of namespaces side by side, each a
 * node whose agent follows a manifest directory, with pods, underlay hosts
 * and real packets. The host's kernel has no IPVS: this is where IPVS mode
 * meets a real one, and where the three modes' ping behaviours are checked
 * on the same kernel (IPVS with KUBE-IPVS-FILTER and without it).
 *
 * The suite's module-level tap calls go to a tap-lite Harness per mode
 * (the runner bundles guest/tap-lite.ts as `tap`). Its timeouts stretch
 * by NODENET_TEST_TIME_SCALE; its pass conditions do not.
 */
import type { GuestContext, VmSuite } from '../suite.js';
import { collect } from '../guest/tap-lite.js';
import { lookupSmoke } from './lookup.js';
import type { Mode } from '../../test/services-suite.js';

const ALL_MODES: readonly Mode[] = ['ipvs', 'iptables', 'nftables'];

async function run(ctx: GuestContext, modes: readonly Mode[]): Promise<string> {
  // The labs' agent logs, kept on the host with the run (test-vm/run.ts --keep, or a failed run).
  process.env['NODENET_LAB_KEEP_LOGS'] ??= `${ctx.share}/labs`;
  // Imported here, not at the top: the runner on the host imports this file for the suite's settings, and
  // there `tap` is the real one, which would start a test run of its own.
  const { servicesSuite } = await import('../../test/services-suite.js');
  const harnesses = modes.map((mode) => collect(mode, () => servicesSuite(mode), (line) => ctx.log(`[${mode}] ${line}`)));
  // The rule-lookup benchmark's small IPVS run (suites/lookup.ts) shares this VM: one boot fewer in CI.
  const lookup = lookupSmoke(ctx).then((details) => ({ ok: true, details }), (e: unknown) => ({ ok: false, details: e instanceof Error ? e.message : String(e) }));
  const results = await Promise.all(harnesses.map((h) => h.run()));
  const smoke = await lookup;
  const summary = results.map((r) => `${r.name} ${r.tests - new Set(r.failures.map((f) => f.split(':')[0])).size}/${r.tests} tests, ${r.passed} assertions`).join('; ');
  const failed = results.filter((r) => r.failed > 0);
  if (failed.length > 0 || !smoke.ok) {
    const why = failed.map((r) => `${r.name}: ${r.failed} failures, first: ${r.failures[0]?.split('\n')[0]}`);
    if (!smoke.ok) why.push(`lookup smoke: ${smoke.details}`);
    throw new Error(`${why.join('; ')} (${summary})`);
  }
  return `${summary}; lookup smoke: ${smoke.details}`;
}

export const suites: VmSuite[] = [
  // CI's: IPVS mode, the one this machine's kernel cannot run (iptables and nftables modes run the same suite in
  // npm test, on the host's kernel). Under TCG beside npm test the three modes took 722 s of CI's 36 minutes.
  { name: 'services', vms: 1, memoryMiB: 2048, timeoutSec: { kvm: 600, tcg: 1500 }, run: (ctx) => run(ctx, ['ipvs']) },
  // The three modes side by side on Debian's kernel, their ping behaviours compared on one kernel.
  { name: 'services-all', vms: 1, memoryMiB: 2048, timeoutSec: { kvm: 600, tcg: 1500 }, extra: true, run: (ctx) => run(ctx, ALL_MODES) },
];
