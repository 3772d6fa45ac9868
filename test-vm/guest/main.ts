/**
 * The guest side of a VM suite: bundled by the runner into the run's dist
 * snapshot (dist/vm/guest.mjs) and started by boot.sh in every VM. Reads
 * the VM's role from the kernel command line, runs the suite's `run`, and
 * prints the one NODENET-VM-RESULT line the runner waits for.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resultLine } from '../qemu.js';
import { suitesOf, type GuestContext, type VmSuite } from '../suite.js';

function param(cmdline: string, name: string): string {
  const m = new RegExp(`(?:^|\\s)nodenet\\.${name}=(\\S+)`).exec(cmdline);
  if (!m) throw new Error(`kernel command line has no nodenet.${name}`);
  return m[1]!;
}

async function findSuite(name: string): Promise<VmSuite> {
  const file = param(readFileSync('/proc/cmdline', 'utf8'), 'file');
  // esbuild bundles every file this pattern can name (test-vm/suites/*.ts): a new suite is one new file.
  const mod = (await import(`../suites/${file}.ts`)) as Parameters<typeof suitesOf>[0];
  const s = suitesOf(mod).find((x) => x.name === name);
  if (!s) throw new Error(`test-vm/suites/${file}.ts has no suite ${name}`);
  return s;
}

async function main(): Promise<void> {
  const cmdline = readFileSync('/proc/cmdline', 'utf8');
  const name = param(cmdline, 'suite');
  const vm = Number(param(cmdline, 'vm'));
  const vms = Number(param(cmdline, 'vms'));
  // The suites' timeouts stretch by this (the runner's NODENET_VM_TIME_SCALE); their pass conditions do not.
  process.env['NODENET_TEST_TIME_SCALE'] = param(cmdline, 'timescale');
  const t0 = Date.now();
  const ctx: GuestContext = {
    suite: name, vm, vms,
    ip: (n) => `192.168.100.${10 + n}`,
    params: new Map([...cmdline.matchAll(/(?:^|\s)nodenet\.param\.([a-z][a-z0-9-]*)=(\S+)/g)].map((m) => [m[1]!, m[2]!] as [string, string])),
    share: '/vmshare', repo: '/nodenet', dist: '/nodenet/dist',
    log: (msg) => process.stdout.write(`[vm${vm} ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`),
  };
  let line: string;
  try {
    const suite = await findSuite(name);
    const details = await suite.run(ctx);
    line = resultLine({ pass: true, suite: name, details: `vm${vm} ${((Date.now() - t0) / 1000).toFixed(1)}s ${details}` });
  } catch (e) {
    const msg = e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e);
    process.stdout.write(`${msg}\n`);
    line = resultLine({ pass: false, suite: name, details: `vm${vm} ${e instanceof Error ? e.message : String(e)}` });
  }
  writeFileSync('/run/nodenet-vm-result', `${line}\n`);
  process.stdout.write(`${line}\n`);
  process.exit(0);
}

void main();
