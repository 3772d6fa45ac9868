/**
 * How to program IPVS, measured on Debian's kernel: the kernel's generic
 * netlink family (netfilter/ipvs-genl.ts, what the agent uses) against
 * `ipvsadm -R` batches (netfilter/ipvsadm.ts, the fallback), both through
 * nodenet's own executors and the same op lists. For N virtual servers with
 * two real servers each: adding them all (a full sync from nothing), listing
 * them back with their counters (every full sync lists the kernel), one
 * real server changed (a partial sync's typical batch), then a flush. The
 * table goes to the serial log and, as JSON, to the run's share
 * (ipvs-programming.json); the result line carries the summary.
 *
 * A measurement, not a test of behaviour: its assertions are only that
 * each executor left the kernel exactly as the ops say (the list matches).
 * An extra suite (`--all` or `--suite ipvs-programming`, about 2.5 minutes
 * under TCG): CI's budget goes to the tests. Times under qemu TCG are several
 * times the native ones; the ratio between the two is the finding.
 */
import { writeFileSync } from 'node:fs';
import type { GuestContext, VmSuite } from '../suite.js';
import { runner, sh } from '../guest/node.js';
import { GenlIpvs } from '../../agent/src/netfilter/ipvs/ipvs-genl.js';
import { IpvsadmExecutor } from '../../agent/src/netfilter/ipvs/ipvsadm.js';
import type { Ipvs, IpvsOp, VirtualServer } from '../../agent/src/netfilter/ipvs/ipvs-types.js';

const SIZES = [100, 1000, 5000];

function ops(n: number): { add: IpvsOp[]; change: IpvsOp[] } {
  const add: IpvsOp[] = [];
  for (let i = 0; i < n; i++) {
    const vs: VirtualServer = { protocol: 'TCP', address: `10.96.${(i >> 8) & 255}.${i & 255}`, port: 80, scheduler: 'rr', persistentTimeout: 0 };
    add.push({ op: 'add-service', vs });
    for (const j of [1, 2]) add.push({ op: 'add-dest', vs, rs: { address: `10.244.${(i >> 8) & 255}.${(i * 2 + j) & 255}`, port: 8080 + j, weight: 1, forward: 'masq' } });
  }
  const vs0 = (add[0] as Extract<IpvsOp, { op: 'add-service' }>).vs;
  const change: IpvsOp[] = [
    { op: 'edit-dest', vs: vs0, rs: { address: '10.244.0.1', port: 8081, weight: 0, forward: 'masq' } },
    { op: 'add-dest', vs: vs0, rs: { address: '10.244.9.9', port: 8080, weight: 1, forward: 'masq' } },
  ];
  return { add, change };
}

async function time<T>(f: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await f();
  return { ms: performance.now() - t0, value };
}

interface Row { n: number; executor: string; addMs: number; listMs: number; changeMs: number; flushMs: number }

async function measure(ctx: GuestContext, ipvs: Ipvs, n: number): Promise<Row> {
  const { add, change } = ops(n);
  await ipvs.flush();
  const a = await time(() => ipvs.apply(add));
  const l = await time(() => ipvs.list());
  const dests = l.value.reduce((s, v) => s + v.dests.length, 0);
  if (l.value.length !== n || dests !== 2 * n) throw new Error(`${ipvs.kind} at ${n}: the kernel lists ${l.value.length} services and ${dests} real servers`);
  const c = await time(() => ipvs.apply(change));
  const after = await ipvs.listDests(change[0]!.vs);
  if (after?.length !== 3 || after.find((d) => d.port === 8081)?.weight !== 0) throw new Error(`${ipvs.kind} at ${n}: the change did not land: ${JSON.stringify(after)}`);
  const f = await time(() => ipvs.flush());
  const row = { n, executor: ipvs.kind, addMs: a.ms, listMs: l.ms, changeMs: c.ms, flushMs: f.ms };
  ctx.log(`${ipvs.kind} n=${n}: add ${a.ms.toFixed(0)} ms, list ${l.ms.toFixed(0)} ms, change ${c.ms.toFixed(1)} ms, flush ${f.ms.toFixed(0)} ms`);
  return row;
}

async function run(ctx: GuestContext): Promise<string> {
  for (const m of ['ip_vs', 'ip_vs_rr']) await sh(['modprobe', m]);
  const genl = await GenlIpvs.open();
  const adm = new IpvsadmExecutor({ runner });
  const rows: Row[] = [];
  try {
    for (const n of SIZES) for (const ipvs of [genl, adm] as Ipvs[]) rows.push(await measure(ctx, ipvs, n));
  } finally {
    await genl.flush().catch(() => undefined);
    genl.close();
  }
  const pad = (s: string, w: number) => s.padStart(w);
  const lines = [
    `${pad('virtual servers', 15)} ${pad('executor', 8)} ${pad('add all ms', 11)} ${pad('list ms', 9)} ${pad('1 change ms', 12)} ${pad('flush ms', 9)}`,
    ...rows.map((r) => `${pad(String(r.n), 15)} ${pad(r.executor, 8)} ${pad(r.addMs.toFixed(0), 11)} ${pad(r.listMs.toFixed(0), 9)} ${pad(r.changeMs.toFixed(1), 12)} ${pad(r.flushMs.toFixed(0), 9)}`),
  ];
  ctx.log(`IPVS programming (2 real servers per virtual server; ${(await sh(['uname', '-r'])).stdout.trim()}, qemu):\n${lines.join('\n')}`);
  writeFileSync(`${ctx.share}/ipvs-programming.json`, JSON.stringify({ kernel: (await sh(['uname', '-r'])).stdout.trim(), rows }, null, 2));
  const at = (n: number, k: string) => rows.find((r) => r.n === n && r.executor === k)!;
  const big = SIZES.at(-1)!;
  return `at ${big}: genl add ${at(big, 'genl').addMs.toFixed(0)} ms / list ${at(big, 'genl').listMs.toFixed(0)} ms / change ${at(big, 'genl').changeMs.toFixed(1)} ms; ipvsadm add ${at(big, 'ipvsadm').addMs.toFixed(0)} ms / list ${at(big, 'ipvsadm').listMs.toFixed(0)} ms / change ${at(big, 'ipvsadm').changeMs.toFixed(1)} ms`;
}

export const suite: VmSuite = {
  name: 'ipvs-programming', vms: 1, extra: true,
  timeoutSec: { kvm: 300, tcg: 900 },
  run,
};
