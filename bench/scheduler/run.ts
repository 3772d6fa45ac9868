/**
 * bench/scheduler: Pods scheduled per second, from creation to binding, with 100 and 1,000 fake Nodes and 10,000
 * Pods, beside kube-scheduler's own scheduler_perf figure (report.ts says what it is and why the two differ).
 *
 *   npm run bench:scheduler -- [--quick] [--nodes 100,1000] [--pods 10000] [--clients 16] [--cycle-pods 2000] [--out FILE]
 *
 * Per Node count, on a fresh control plane (bench/apiserver/server.child.ts, its Nodes' grace period an hour: SQLite in /tmp/nn-bench-scheduler-<pid>-*, removed at
 * the end, also on failure or SIGINT; 127.0.0.1 only; no root):
 *   1. the Nodes are posted (workload.ts: scheduler_perf's node-default, larger) and a namespace made;
 *   2. a watch on the namespace's Pods opens, then `--clients` closed-loop clients create `--pods` Pods
 *      (pod-default: 100m cpu, 500Mi); the watch records when each is first seen bound;
 *   3. once every Pod is bound (or 10 minutes have passed): Pods bound per second of wall time, the per-second
 *      samples, create → bound latency per Pod, and the server's CPU per Pod;
 *   then again on another fresh control plane with the Pods queued up first (the bench holds the scheduler's Lease
 *   while it creates them, then lets it go): the scheduler's own drain rate, from its first binding to its last;
 *   4. in this process, the same Nodes in a scheduler cache and `--cycle-pods` cycles of the default profile, each
 *      Pod assumed where it goes: what the framework alone costs, without the API.
 * Prints a Markdown report; writes JSON only with --out.
 */
import { stopServerChild } from '../lib/server-child.js';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from '../lib/args.js';
import { ApiClient, closedLoop, openWatch, outcomeOf } from '../lib/http-client.js';
import { parseKubeconfig, type ApiTarget } from '../lib/kubeconfig.js';
import { machineMeta } from '../lib/machine.js';
import { parseProcStatCpuMs } from '../lib/proc.js';
import { summarize } from '../lib/stats.js';
import { SchedulerCache } from '../../controlplane/scheduler/cache.js';
import { schedule } from '../../controlplane/scheduler/framework.js';
import { defaultProfile } from '../../controlplane/scheduler/profile.js';
import type { KObject } from '../../controlplane/store/types.js';
import { formatReport, type ApiFigures, type SchedCase } from './report.js';
import { NAMESPACE, nodeObject, parseSchedArgs, podName, podObject, throughputSamples, type SchedArgs } from './workload.js';

const here = dirname(fileURLToPath(import.meta.url));
const SERVER = join(here, '..', 'apiserver', 'server.child.ts');
const PREFIX = 'nn-bench-scheduler-';
const WAIT_MS = 600_000;

interface Server {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly target: ApiTarget;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A crashed run's data directories (their pid gone), and only those. */
function removeLeftovers(): void {
  for (const d of readdirSync('/tmp')) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(d);
    if (m && !alive(Number(m[1]))) rmSync(join('/tmp', d), { recursive: true, force: true });
  }
}

async function startServer(dataDir: string): Promise<Server> {
  // bench/apiserver's server child: SQLite (no STORAGE), the node lifecycle grace period an hour.
  const child = fork(SERVER, [dataDir, 'warn', '', '3600000'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: process.execArgv });
  const ready = await new Promise<{ kubeconfig: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start in 60 s')), 60_000);
    child.on('message', (m: unknown) => {
      const msg = m as { type?: string; kubeconfig?: string; error?: string };
      clearTimeout(timer);
      if (msg.type === 'ready' && msg.kubeconfig) resolve({ kubeconfig: msg.kubeconfig });
      else reject(new Error(`the server failed to start: ${msg.error ?? JSON.stringify(m)}`));
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${sig ?? code}) before it was ready`));
    });
  });
  return { child, pid: child.pid!, target: parseKubeconfig(readFileSync(ready.kubeconfig, 'utf8')) };
}

const stopServer = stopServerChild;

const cpuMs = (pid: number) => parseProcStatCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function must(client: ApiClient, method: string, path: string, body?: unknown, ok = [200, 201]): Promise<Record<string, unknown>> {
  const r = await client.send(method, path, body);
  if (!ok.includes(r.status)) throw new Error(`${method} ${path}: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
  return JSON.parse(r.body.toString('utf8') || '{}') as Record<string, unknown>;
}

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler';
const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** Takes the kube-scheduler Lease from the embedded scheduler (a holder of an hour): it stops leading, and scheduling. */
async function holdSchedulerLease(c: ApiClient): Promise<void> {
  for (let i = 0; ; i++) {
    const r = await c.send('GET', LEASE);
    if (r.status === 200) {
      const lease = JSON.parse(r.body.toString('utf8')) as Record<string, Record<string, unknown>>;
      const now = microTime(Date.now());
      const put = await c.send('PUT', LEASE, { ...lease, spec: { ...lease['spec'], holderIdentity: 'nn-bench-scheduler', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now } });
      if (put.status === 200) return;
    }
    if (i > 100) throw new Error(`could not take the kube-scheduler Lease: ${r.status}`);
    await sleep(100);
  }
}

export type Phase = 'live' | 'backlog';

/**
 * The API part: Nodes, then Pods created while a watch sees them bound. `live`: the scheduler runs while they are
 * created. `backlog`: the bench holds the scheduler's Lease while every Pod is created, then lets it go; the
 * scheduler takes it back (its 2 s retry period) and drains the backlog, as scheduler_perf's Pods queue up faster
 * than they are scheduled.
 */
async function measureApi(a: SchedArgs, nodes: number, phase: Phase): Promise<ApiFigures> {
  const dataDir = mkdtempSync(join('/tmp', `${PREFIX}${process.pid}-`));
  let server: Server | null = null;
  let client: ApiClient | null = null;
  let watch: { close(): void } | null = null;
  try {
    server = await startServer(dataDir);
    client = new ApiClient(server.target, { maxSockets: a.clients + 2 });
    const c = client;
    await must(c, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    const made = await closedLoop(nodes, 16, async (i) => outcomeOf(await c.send('POST', '/api/v1/nodes', nodeObject(i))));
    const bad = made.outcomes.find((o) => !o.ok);
    if (bad) throw new Error(`creating the Nodes: ${bad.error}`);
    // The ServiceAccount admission needs the namespace's default ServiceAccount, which its controller makes.
    for (let i = 0; (await c.send('GET', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/default`)).status !== 200; i++) {
      if (i > 300) throw new Error('no default ServiceAccount in 30 s');
      await sleep(100);
    }
    if (phase === 'backlog') {
      await holdSchedulerLease(c);
      // The leader finds the Lease taken at its next renewal, and stops once its renew deadline (10 s) has passed
      // without one, as client-go's elector does.
      await sleep(13_000);
    }
    const list = await must(c, 'GET', `/api/v1/namespaces/${NAMESPACE}/pods?limit=1`);
    const rv = String((list['metadata'] as Record<string, unknown>)['resourceVersion']);
    const boundAt = new Map<string, number>();
    let watchError: Error | null = null;
    let allBound: () => void = () => {};
    let target = Infinity;
    const done = new Promise<void>((r) => (allBound = r));
    watch = openWatch(c, `/api/v1/namespaces/${NAMESPACE}/pods?watch=1&resourceVersion=${rv}&allowWatchBookmarks=false`, (line, at) => {
      const ev = JSON.parse(line) as { object?: { metadata?: { name?: string }; spec?: { nodeName?: string } } };
      const name = ev.object?.metadata?.name;
      if (name && ev.object?.spec?.nodeName && !boundAt.has(name)) {
        boundAt.set(name, at);
        if (boundAt.size >= target) allBound();
      }
    }, (e) => (watchError = e));
    const sentAt = new Map<string, number>();
    const cpu0 = cpuMs(server.pid);
    const t0 = performance.now();
    const created = await closedLoop(a.pods, a.clients, async (i) => {
      sentAt.set(podName(i), performance.now());
      return outcomeOf(await c.send('POST', `/api/v1/namespaces/${NAMESPACE}/pods`, podObject(i)));
    });
    const ok = created.outcomes.filter((o) => o.ok).length;
    let releasedAt = t0;
    if (phase === 'backlog') {
      if (boundAt.size) throw new Error(`${boundAt.size} Pods were bound while the bench held the scheduler's Lease`);
      releasedAt = performance.now();
      await must(c, 'DELETE', LEASE);
    }
    target = ok;
    if (boundAt.size >= target) allBound();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, WAIT_MS)))]);
    clearTimeout(timer);
    const cpu1 = cpuMs(server.pid);
    if (watchError) throw watchError;
    const times = [...boundAt.values()];
    const first = times.length ? Math.min(...times) : performance.now();
    const end = times.length ? Math.max(...times) : performance.now();
    // Live: from the first create. Backlog: from the first binding (the scheduler's drain, its start aside).
    const from = phase === 'live' ? t0 : first;
    const latencies = phase === 'live' ? [...boundAt].map(([n, at]) => at - (sentAt.get(n) ?? at)) : [];
    const firstBad = created.outcomes.find((o) => !o.ok);
    return {
      phase, created: ok, createErrors: a.pods - ok, firstError: firstBad?.error ?? null, createPerSec: ok / (created.wallMs / 1000),
      bound: boundAt.size, wallMs: end - from, podsPerSec: boundAt.size / (Math.max(1, end - from) / 1000),
      samples: summarize(throughputSamples(from, times)), latencyMs: summarize(latencies), serverCpuMsPerPod: (cpu1 - cpu0) / Math.max(1, boundAt.size),
      startMs: phase === 'backlog' ? first - releasedAt : null,
    };
  } finally {
    watch?.close();
    client?.close();
    if (server) await stopServer(server.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The framework alone: the default profile's cycles over the same Nodes, each Pod assumed where it goes. */
function measureCycle(nodes: number, pods: number): Pick<SchedCase, 'nodesPerCycle' | 'cycle'> {
  const cache = new SchedulerCache();
  for (let i = 0; i < nodes; i++) cache.setNode(nodeObject(i) as KObject);
  const plugins = defaultProfile({ defaultSelector: () => null, namespaceLabels: () => undefined });
  const us: number[] = [];
  let start = 0;
  let filtered = 0;
  const t0 = performance.now();
  for (let i = 0; i < pods; i++) {
    const pod = { ...podObject(i), metadata: { name: podName(i), namespace: NAMESPACE, uid: `u${i}` } } as KObject;
    const c0 = performance.now();
    const snap = cache.snapshot();
    const d = schedule(pod, snap, plugins, { start });
    start = (start + d.evaluated) % snap.length;
    filtered += d.evaluated;
    if (d.node === null) throw new Error(`cycle ${i}: fits nowhere`);
    cache.assume(`pods/${NAMESPACE}/${podName(i)}`, pod, d.node);
    us.push((performance.now() - c0) * 1000);
  }
  const wall = performance.now() - t0;
  return { nodesPerCycle: filtered / pods, cycle: { pods, perSec: pods / (wall / 1000), usPerPod: summarize(us) } };
}

async function main(): Promise<number> {
  const a = benchArgs(parseSchedArgs);
  if (a === 2) return 2;
  removeLeftovers();
  const before = loadavg();
  const cases: SchedCase[] = [];
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  try {
    for (const n of a.nodes) {
      if (interrupted) break;
      console.error(`scheduler bench: ${n} nodes, ${a.pods} pods ...`);
      const live = await measureApi(a, n, 'live');
      const backlog = await measureApi(a, n, 'backlog');
      const cyc = measureCycle(n, Math.min(a.cyclePods, n * 110));
      cases.push({ nodes: n, pods: a.pods, clients: a.clients, live, backlog, ...cyc });
    }
  } finally {
    process.off('SIGINT', onSignal);
  }
  const result = { meta: machineMeta(before), cases };
  console.log(formatReport(result));
  if (a.out) writeFileSync(a.out, `${JSON.stringify(result, null, 2)}\n`);
  return cases.every((c) => [c.live, c.backlog].every((p) => p.bound === p.created && !p.createErrors)) ? 0 : 1;
}

process.exitCode = await main();
