/**
 * bench/apiserver: the embedded Kubernetes API server under load, over
 * HTTPS as kubectl and the agents reach it, side by side with the
 * published references (SIG-scalability's API call SLOs; vcluster's load
 * test of k3s on SQLite).
 *
 *   npm run bench:apiserver -- [--quick] [--storage sqlite|etcd|sqlite,etcd] [--out FILE] [more in args.ts]
 *
 * The server runs in a child process of its own (server.child.ts) over a
 * fresh data directory /tmp/nn-bench-apiserver-*, removed at the end, also
 * on failure or SIGINT; it listens on 127.0.0.1 only and needs no root.
 * Its store is SQLite in that directory (the default), or etcd: Debian's
 * etcd-server, --etcd-members members (3) on loopback ports with their data
 * under /tmp/nn-bench-etcd-* (controlplane/testing/etcd.ts), killed and
 * removed at the end, also on failure or SIGINT. Before the server starts
 * on etcd, etcd alone is measured against the same members (etcd-floor.ts):
 * the floor. With both backends, each gets the whole sequence below, one
 * after the other, and the report sets them side by side.
 * This process is the client. In order (after a warm-up in a namespace of
 * its own, whose Services are then deleted):
 *   1. durable creates, 1 and 16 closed-loop clients, into the empty store
 *      (the slope's first point);
 *   2. load: N Services and 2N EndpointSlices through concurrent creates
 *      (a create figure of its own), into `default`;
 *   3. lists of them, in one request and in pages of 500 (client-go's
 *      reflector pages), with the server's RSS and its peak over the lists
 *      (VmHWM, reset through /proc/<pid>/clear_refs before each row);
 *   4. the same closed-loop creates and an open loop at 200/s (vcluster's
 *      rate), into the loaded store (the slope's second point);
 *   5. the store topped up to --slope Services, and the closed-loop creates
 *      again (its last point);
 *   6. watch delivery with 10 and 100 watchers: one write at a time, each
 *      seen by every watcher before the next.
 * Every timed create case writes into a namespace of its own, and its
 * Services are deleted (a deletecollection) before the next case, so each
 * case meets the store as the slope's point says.
 * Prints a Markdown report (report.ts), writes JSON only with --out.
 */
import { stopServerChild } from '../lib/server-child.js';
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from '../lib/args.js';
import { machineMeta } from '../lib/machine.js';
import { EtcdCluster } from '../../controlplane/testing/etcd.js';
import { parseBenchArgs, type BenchArgs, type StorageKind } from './args.js';
import { measureFailover } from './failover.js';
import { measureFloor } from './etcd-floor.js';
import { costOf, parseEtcdMetrics, sumMembers, type EtcdCounters } from './etcd-metrics.js';
import { ApiClient, closedLoop, openLoop, openWatch, outcomeOf, type Outcome } from '../lib/http-client.js';
import { parseKubeconfig, type ApiTarget } from '../lib/kubeconfig.js';
import { parseWatchLine } from '../lib/ndjson.js';
import { mountOf, parseProcStatCpuMs, parseProcStatIdentity, parseProcStatTotals, parseProcStatus } from '../lib/proc.js';
import {
  formatComparisonReport, formatReport, type BenchResult, type Comparison, type CreateCase, type EtcdFloor, type ListCase, type MemoryPoints, type Meta, type SlopePoint, type WatchCase, type FailoverFigures,
} from './report.js';
import { thousands } from '../lib/report.js';
import { summarize } from '../lib/stats.js';
import { isLoadObject, loadServiceName, loadSlice, namespace, service, SERVICES_PATH, SLICES_PATH, WARMUP_NAMESPACE, WARMUP_SERVICES_PATH } from './workload.js';

const SERVER = join(dirname(fileURLToPath(import.meta.url)), 'server.child.ts');
const TAG = '[bench:apiserver]';
const PAGE = 500;
const WARMUP = 1000;
const WATCH_WAIT_MS = 5000;
const HEADERS_WAIT_MS = 3000;

const say = (s: string) => void process.stderr.write(`${TAG} ${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- the server process ----

interface Server {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly target: ApiTarget;
  exited: boolean;
  /** The store's processes (etcd's members), whose CPU counts to each case; none for SQLite. */
  readonly storePids: readonly number[];
  /** etcd's members, for their metrics; null for SQLite. */
  readonly etcd: EtcdCluster | null;
}

async function startServer(dataDir: string, logLevel: string, etcd: EtcdCluster | null): Promise<Server> {
  const child = fork(SERVER, [dataDir, logLevel, ...(etcd ? [`etcd:${etcd.endpoints}`] : [])], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: process.execArgv });
  const ready = await new Promise<{ url: string; kubeconfig: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start in 60 s')), 60_000);
    child.on('message', (m: unknown) => {
      const msg = m as { type?: string; url?: string; kubeconfig?: string; error?: string };
      clearTimeout(timer);
      if (msg.type === 'ready' && msg.url && msg.kubeconfig) resolve({ url: msg.url, kubeconfig: msg.kubeconfig });
      else reject(new Error(`the server failed to start: ${msg.error ?? JSON.stringify(m)}`));
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${sig ?? code}) before it was ready`));
    });
  });
  const s: Server = { child, pid: child.pid!, target: parseKubeconfig(readFileSync(ready.kubeconfig, 'utf8')), exited: false, storePids: etcd ? childPids('etcd') : [], etcd };
  child.on('exit', () => (s.exited = true));
  return s;
}

const stopServer = stopServerChild;

const memMiB = (pid: number) => {
  const s = parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { rss: s.rssKiB / 1024, hwm: s.hwmKiB / 1024 };
};
const cpuMs = (pid: number) => parseProcStatCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
/** This process's children with this command name (etcd's members). */
function childPids(comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const p = parseProcStatIdentity(readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (p.ppid === process.pid && p.comm === comm) out.push(p.pid);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
const pidsCpuMs = (pids: readonly number[]) => pids.reduce((n, p) => {
  try {
    return n + cpuMs(p);
  } catch {
    return n;
  }
}, 0);
/** etcd's members' own counters, together. */
async function etcdCounters(c: EtcdCluster): Promise<EtcdCounters> {
  const texts = await Promise.all(Array.from({ length: c.size }, async (_, i) => (await fetch(`${c.endpoint(i)}/metrics`)).text()));
  return sumMembers(texts.map(parseEtcdMetrics));
}
const machineBusyMs = () => parseProcStatTotals(readFileSync('/proc/stat', 'utf8')).busyMs;
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** Resets VmHWM to the current RSS (clear_refs "5"); false when the kernel refuses. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

// ---- machine ----

function fsyncFloor(dir: string, rounds: number): number[] {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'a');
  const buf = Buffer.alloc(4096, 7);
  const out: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now();
      writeSync(fd, buf);
      fdatasyncSync(fd);
      out.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return out;
}

// ---- phases ----

interface CpuMark {
  readonly server: number;
  readonly client: number;
  /** etcd's members (0 for SQLite). */
  readonly store: number;
}
const cpuMark = (s: Server): CpuMark => ({ server: cpuMs(s.pid), client: ownCpuMs(), store: pidsCpuMs(s.storePids) });
const cpuSince = (s: Server, m: CpuMark): CpuMark => {
  const now = cpuMark(s);
  return { server: now.server - m.server, client: now.client - m.client, store: now.store - m.store };
};

/** Where a case starts: CPU, and etcd's counters when the store is etcd. */
interface Mark {
  readonly cpu: CpuMark;
  readonly etcd: EtcdCounters | null;
}
const mark = async (s: Server): Promise<Mark> => ({ etcd: s.etcd ? await etcdCounters(s.etcd) : null, cpu: cpuMark(s) });

async function createCase(s: Server, m: Mark, kind: CreateCase['kind'], resource: CreateCase['resource'], o: { concurrency: number | null; qps: number | null; outcomes: readonly Outcome[]; wallMs: number; maxLagMs: number | null }): Promise<CreateCase> {
  const cpu = cpuSince(s, m.cpu);
  const etcdCost = s.etcd && m.etcd ? costOf(m.etcd, await etcdCounters(s.etcd), o.outcomes.length) : null;
  const ok = o.outcomes.filter((x) => x.ok);
  const bad = o.outcomes.filter((x) => !x.ok);
  const n = Math.max(1, o.outcomes.length);
  return {
    kind, resource, concurrency: o.concurrency, qps: o.qps, requests: o.outcomes.length, errors: bad.length, firstError: bad[0]?.error ?? null,
    wallMs: o.wallMs, perSec: ok.length / (o.wallMs / 1000), latencyMs: summarize(ok.map((x) => x.latencyMs)),
    serverCpuMsPerOp: cpu.server / n, clientCpuMsPerOp: cpu.client / n, maxSendLagMs: o.maxLagMs,
    ...(s.etcd ? { storeCpuMsPerOp: cpu.store / n, etcdCost } : {}),
  };
}

async function create(client: ApiClient, path: string, obj: unknown, scheduledAt?: number): Promise<Outcome> {
  return outcomeOf(await client.send('POST', path, obj), scheduledAt);
}

async function closedCase(s: Server, client: ApiClient, kind: 'closed' | 'load', resource: CreateCase['resource'], n: number, conc: number, make: (i: number) => unknown, path = resource === 'Service' ? SERVICES_PATH : SLICES_PATH): Promise<CreateCase> {
  const m = await mark(s);
  const r = await closedLoop(n, conc, (i) => create(client, path, make(i)));
  const c = await createCase(s, m, kind, resource, { concurrency: conc, qps: null, outcomes: r.outcomes, wallMs: r.wallMs, maxLagMs: null });
  say(`${kind} ${thousands(n)} ${resource}s, ${conc} clients: ${c.perSec.toFixed(0)}/s, p50 ${c.latencyMs.p50.toFixed(2)} ms, p99 ${c.latencyMs.p99.toFixed(2)} ms, errors ${c.errors}${c.firstError ? ` (${c.firstError})` : ''}`);
  return c;
}

async function pacedCase(s: Server, client: ApiClient, n: number, qps: number, path: string): Promise<CreateCase> {
  const m = await mark(s);
  const r = await openLoop(n, qps, (i, at) => create(client, path, service(`p${qps}-${i}`), at));
  const c = await createCase(s, m, 'paced', 'Service', { concurrency: null, qps, outcomes: r.outcomes, wallMs: r.wallMs, maxLagMs: r.maxLagMs });
  say(`paced ${thousands(n)} Services at ${qps}/s: mean ${c.latencyMs.mean.toFixed(2)} ms, p99 ${c.latencyMs.p99.toFixed(2)} ms, send lag max ${r.maxLagMs.toFixed(1)} ms, errors ${c.errors}`);
  return c;
}

async function listOnce(client: ApiClient, path: string, limit: number | null): Promise<{ items: number; pages: number; bytes: number; fetchMs: number; parseMs: number }> {
  let cont = '';
  let items = 0;
  let pages = 0;
  let bytes = 0;
  let parseMs = 0;
  const t0 = performance.now();
  do {
    const q = limit === null ? '' : `?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
    const r = await client.send('GET', path + q);
    if (r.status !== 200) throw new Error(`GET ${path}${q}: HTTP ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
    bytes += r.body.length;
    const p0 = performance.now();
    const o = JSON.parse(r.body.toString('utf8')) as { items?: unknown[]; metadata?: { continue?: string } };
    parseMs += performance.now() - p0;
    items += o.items?.length ?? 0;
    cont = o.metadata?.continue ?? '';
    pages++;
  } while (cont);
  return { items, pages, bytes, fetchMs: performance.now() - t0 - parseMs, parseMs };
}

async function listCase(s: Server, client: ApiClient, kind: ListCase['kind'], path: string, limit: number | null, repeat: number): Promise<ListCase> {
  const canReset = resetPeak(s.pid);
  const runs = [];
  for (let i = 0; i < repeat; i++) runs.push(await listOnce(client, path, limit));
  const m = memMiB(s.pid);
  const last = runs[runs.length - 1]!;
  const l: ListCase = {
    kind, path, limit, items: last.items, pages: last.pages, bytes: last.bytes,
    fetchMs: summarize(runs.map((r) => r.fetchMs)), parseMs: summarize(runs.map((r) => r.parseMs)), totalMs: summarize(runs.map((r) => r.fetchMs + r.parseMs)),
    rssAfterMiB: m.rss, peakRssMiB: canReset ? m.hwm : null,
  };
  say(`list ${thousands(l.items)} ${kind}${limit ? ` (pages of ${limit})` : ''}: ${(l.bytes / 1048576).toFixed(1)} MiB, fetch p50 ${l.fetchMs.p50.toFixed(0)} ms, parse p50 ${l.parseMs.p50.toFixed(0)} ms, RSS ${m.rss.toFixed(0)} MiB, peak ${l.peakRssMiB?.toFixed(0) ?? '–'} MiB`);
  return l;
}

/** A namespace of the case's own (created if absent) and the path of its Services. */
async function caseNamespace(client: ApiClient, name: string): Promise<string> {
  const r = await client.send('POST', '/api/v1/namespaces', namespace(name));
  if (r.status !== 201 && r.status !== 409) throw new Error(`creating namespace ${name}: HTTP ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
  return `/api/v1/namespaces/${name}/services`;
}

/**
 * Deletes every Service at `path` (one deletecollection), so the next case meets the store as it was before this one,
 * then waits for the server to go idle: its controllers work through the deletions after the request, and that
 * CPU would otherwise be counted to the next case.
 */
async function deleteServices(client: ApiClient, path: string, s: Server): Promise<void> {
  const r = await client.send('DELETE', path);
  if (r.status !== 200) throw new Error(`DELETE ${path}: HTTP ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
  await serverIdle(s);
}

/** Waits until the server, and each etcd member on average, used under 3% of a CPU over 300 ms (at most 30 s). */
async function serverIdle(s: Server): Promise<void> {
  for (const t0 = performance.now(); performance.now() - t0 < 30_000;) {
    const c0 = cpuMs(s.pid);
    const e0 = pidsCpuMs(s.storePids);
    await sleep(300);
    if (cpuMs(s.pid) - c0 < 9 && pidsCpuMs(s.storePids) - e0 < 9 * Math.max(1, s.storePids.length)) return;
  }
}

/** How many objects at `path` are not the load's: the server's own. */
async function serversOwn(client: ApiClient, path: string): Promise<number> {
  const r = await client.send('GET', path);
  if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status}`);
  const o = JSON.parse(r.body.toString('utf8')) as { items?: { metadata?: { name?: string } }[] };
  return (o.items ?? []).filter((x) => !isLoadObject(x.metadata?.name)).length;
}

/** How many Services the store holds, in every namespace (a list of one item and its remainingItemCount). */
async function servicesInStore(client: ApiClient): Promise<number> {
  const r = await client.send('GET', '/api/v1/services?limit=1');
  const o = JSON.parse(r.body.toString('utf8')) as { items?: unknown[]; metadata?: { remainingItemCount?: number } };
  if (r.status !== 200) throw new Error(`GET /api/v1/services?limit=1: HTTP ${r.status}`);
  return (o.items?.length ?? 0) + (o.metadata?.remainingItemCount ?? 0);
}

/** The closed-loop cases at the store's present size, each in a namespace of its own and deleted after. */
async function slopePoint(s: Server, client: ApiClient, tag: string, concurrency: readonly number[], creates: number, slices: number): Promise<SlopePoint> {
  const services = await servicesInStore(client);
  await serverIdle(s); // after a load, too
  const cases: CreateCase[] = [];
  for (const conc of concurrency) {
    const path = await caseNamespace(client, `bench-${tag}-c${conc}`);
    cases.push(await closedCase(s, client, 'closed', 'Service', creates, conc, (i) => service(`c${conc}-${i}`), path));
    await deleteServices(client, path, s);
  }
  return { services, slices, cases };
}

async function currentRV(client: ApiClient): Promise<string> {
  const r = await client.send('GET', `${SERVICES_PATH}?limit=1`);
  const rv = (JSON.parse(r.body.toString('utf8')) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
  if (r.status !== 200 || !rv) throw new Error(`GET ${SERVICES_PATH}?limit=1: HTTP ${r.status}, no resourceVersion`);
  return rv;
}

interface Waiter {
  readonly name: string;
  remaining: number;
  resolve(): void;
}

/**
 * W watchers on Services in `default` from the current revision; a
 * sentinel write first (every watcher seeing it proves its watch is
 * registered), then `writes` creates, one at a time, each awaited by every
 * watcher (or WATCH_WAIT_MS) before the next.
 */
async function watchCase(s: Server, writer: ApiClient, watchers: number, writes: number, notes: Set<string>): Promise<WatchCase> {
  const prefix = `w${watchers}-`;
  const watchClient = new ApiClient(writer.target, { maxSockets: Infinity, keepAlive: false });
  const seen = Array.from({ length: watchers }, () => new Map<string, number>());
  const problems: string[] = [];
  let headers = 0;
  let waiter: Waiter | null = null;
  const rv = await currentRV(writer);
  const streams = seen.map((mine) => openWatch(watchClient, `${SERVICES_PATH}?watch=1&resourceVersion=${rv}`, (line, at) => {
    const ev = parseWatchLine(line);
    if (ev.type === 'ERROR') problems.push(line.slice(0, 300));
    if (!ev.name.startsWith(prefix) || mine.has(ev.name)) return;
    mine.set(ev.name, at);
    if (waiter && waiter.name === ev.name && --waiter.remaining === 0) waiter.resolve();
  }, (e) => problems.push(e.message), () => headers++));
  // A server that flushes a watch's headers at once lets us see every watch open (TLS handshakes take a while under load).
  for (const t0 = performance.now(); headers < watchers && performance.now() - t0 < HEADERS_WAIT_MS;) await sleep(20);
  if (headers === 0) {
    notes.add('The server sends a watch\'s response headers only with its first event (writeHead without flushHeaders): until something changes, a client ' +
      'cannot tell an open watch from a hanging request (kube-apiserver flushes them at once). The bench proves each watch registered with a sentinel write.');
  }
  const writeSeen = async (name: string): Promise<{ sentAt: number; endAt: number; all: boolean }> => {
    let resolve!: () => void;
    const everyone = new Promise<void>((r) => (resolve = r));
    waiter = { name, remaining: watchers - seen.filter((m) => m.has(name)).length, resolve };
    if (waiter.remaining === 0) resolve();
    const reply = await writer.send('POST', SERVICES_PATH, service(name));
    const o = outcomeOf(reply);
    if (!o.ok) throw new Error(`watch case: creating ${name}: ${o.error ?? '?'}`);
    const all = await Promise.race([everyone.then(() => true), sleep(WATCH_WAIT_MS).then(() => false)]);
    waiter = null;
    return { sentAt: reply.sentAt, endAt: reply.endAt, all };
  };
  try {
    const sentinel = await writeSeen(`${prefix}sentinel`);
    if (!sentinel.all) throw new Error(`watch case ${watchers}: only ${seen.filter((m) => m.has(`${prefix}sentinel`)).length} of ${watchers} watchers saw the sentinel write in ${WATCH_WAIT_MS} ms${problems.length ? `: ${problems[0]}` : ''}`);
    const acks: { name: string; sentAt: number; endAt: number }[] = [];
    const c0 = cpuMs(s.pid);
    for (let i = 0; i < writes; i++) {
      const name = `${prefix}${i}`;
      acks.push({ name, ...(await writeSeen(name)) });
    }
    const serverCpu = cpuMs(s.pid) - c0;
    const ackTo: number[] = [];
    const sentTo: number[] = [];
    const last: number[] = [];
    let first = 0;
    for (const a of acks) {
      let worst = -Infinity;
      let all = true;
      for (const m of seen) {
        const at = m.get(a.name);
        if (at === undefined) {
          all = false;
          continue;
        }
        ackTo.push(at - a.endAt);
        sentTo.push(at - a.sentAt);
        if (at < a.endAt) first++;
        worst = Math.max(worst, at - a.sentAt);
      }
      if (all) last.push(worst);
    }
    const w: WatchCase = {
      watchers, writes, events: ackTo.length, missing: watchers * writes - ackTo.length,
      writeMs: summarize(acks.map((a) => a.endAt - a.sentAt)), ackToEventMs: summarize(ackTo), sentToEventMs: summarize(sentTo), lastWatcherMs: summarize(last),
      eventFirstShare: ackTo.length ? first / ackTo.length : 0, serverCpuMsPerWrite: serverCpu / writes,
    };
    say(`watch ${watchers} watchers × ${writes} writes: ack→event p50 ${w.ackToEventMs.p50.toFixed(2)} ms p99 ${w.ackToEventMs.p99.toFixed(2)} ms; ` +
      `sent→event p99 ${w.sentToEventMs.p99.toFixed(2)} ms; missing ${w.missing}${problems.length ? `; problems: ${problems[0]}` : ''}`);
    return w;
  } finally {
    for (const st of streams) st.close();
    await Promise.race([Promise.all(streams.map((st) => st.ended)), sleep(5000)]);
    watchClient.close();
  }
}

// ---- main ----

/** What a run holds that must go at the end, also on failure or a signal. */
interface Held {
  dataDir: string | null;
  server: Server | null;
  etcd: EtcdCluster | null;
  /** A signal came: whatever is taken from now on is released at once. */
  stopped: boolean;
  /** The release under way: a second caller waits for it (the signal's and the main path's). */
  releasing: Promise<void> | null;
}

class Interrupted extends Error {}

/** Stops the server, kills etcd's members, removes their data and the data directory. Concurrent calls share one release. */
async function release(h: Held): Promise<void> {
  if (!h.releasing) {
    const { server, etcd, dataDir } = h;
    h.server = null;
    h.etcd = null;
    h.dataDir = null;
    h.releasing = (async () => {
      if (server) await stopServer(server.child).catch(() => server.child.kill('SIGKILL'));
      if (etcd) await etcd.close().catch((e: unknown) => say(`closing etcd: ${e instanceof Error ? e.message : String(e)}`));
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    })();
  }
  const p = h.releasing;
  await p;
  if (h.releasing === p) h.releasing = null;
}

/** Records something to release; after a signal, releases it at once and stops the run. */
async function keep<K extends 'dataDir' | 'server' | 'etcd'>(h: Held, k: K, v: NonNullable<Held[K]>): Promise<void> {
  h[k] = v;
  if (h.stopped) {
    await release(h);
    throw new Interrupted('interrupted');
  }
}

/** etcd's version, or why it cannot run (Debian's etcd-server is not installed). */
function etcdVersion(): string {
  const r = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`--storage etcd needs etcd on PATH (Debian: apt-get install etcd-server): ${r.error?.message ?? r.stderr}`);
  return /etcd Version: (\S+)/.exec(r.stdout)?.[1] ?? '?';
}

async function main(): Promise<number> {
  const args = benchArgs(parseBenchArgs);
  if (args === 2) return 2;
  const held: Held = { dataDir: null, server: null, etcd: null, stopped: false, releasing: null };
  const onSignal = (sig: NodeJS.Signals) => {
    say(`${sig}: stopping the server and etcd, removing their data`);
    held.stopped = true;
    // The run in progress fails on what was stopped (or stops at its next `keep`) and releases what it took meanwhile;
    // a run that does neither within 15 s is cut short.
    void release(held).finally(() => setTimeout(() => process.exit(130), 15_000).unref());
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const version = args.storage.includes('etcd') ? etcdVersion() : null;
    const runs: BenchResult[] = [];
    let floor: EtcdFloor | null = null;
    for (const kind of args.storage) {
      say(`---- ${kind} ----`);
      const r = await runOne(kind, args, held, version, (f) => (floor = f));
      await release(held);
      runs.push(r);
    }
    let failover: FailoverFigures | null = null;
    if (args.failover > 0) {
      say(`---- failover, ${args.failover} round(s) on an HA lab ----`);
      failover = await measureFailover({ rounds: args.failover, say });
    }
    const only = runs.length === 1 && args.storage[0] === 'sqlite';
    const comparison: Comparison = { runs, floor, failover };
    const report = only ? formatReport(runs[0]!) : formatComparisonReport(comparison);
    console.log(`\n${report}`);
    if (args.out) {
      mkdirSync(dirname(args.out), { recursive: true });
      // SQLite alone: the shape of the results before --storage; otherwise every run, the floor, and a place for the failover figures.
      const json = only ? { ...runs[0]!, args, report } : { runs, floor, failover, args, report };
      writeFileSync(args.out, `${JSON.stringify(json, null, 2)}\n`);
      say(`results written to ${args.out}`);
    }
    const errors = runs.reduce((n, r) => n + [...r.creates, ...r.slope.flatMap((p) => p.cases), ...r.load].reduce((m, c) => m + c.errors, 0) + r.watches.reduce((m, w) => m + w.missing, 0), 0) +
      ((floor as EtcdFloor | null)?.cases.reduce((n, c) => n + c.errors, 0) ?? 0);
    return errors ? 1 : 0;
  } catch (e) {
    // After a signal, what failed is the interrupted run: the signal's release ends the process.
    if (!held.stopped) throw e;
    await release(held);
    return 130;
  } finally {
    await release(held);
    if (!held.stopped) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}

/** One backend's whole sequence (see the header); for etcd, the floor first (handed to `onFloor`). */
async function runOne(kind: StorageKind, args: BenchArgs, held: Held, etcdVersionText: string | null, onFloor: (f: EtcdFloor) => void): Promise<BenchResult> {
  const started = performance.now();
  const dataDir = mkdtempSync('/tmp/nn-bench-apiserver-');
  await keep(held, 'dataDir', dataDir);
  const clients: ApiClient[] = [];
  try {
    let etcd: EtcdCluster | null = null;
    let storageDetail = 'SQLite WAL, synchronous=FULL';
    if (kind === 'etcd') {
      etcd = await EtcdCluster.start(args.etcdMembers, { prefix: 'nn-bench-etcd-' });
      await keep(held, 'etcd', etcd);
      const where = mountOf(tmpdir(), readFileSync('/proc/mounts', 'utf8'));
      storageDetail = `etcd ${etcdVersionText ?? '?'}, ${args.etcdMembers} member${args.etcdMembers === 1 ? '' : 's'} on 127.0.0.1, their data under ${tmpdir()}/nn-bench-etcd-* ` +
        `(${where ? `${where.fsType} on ${where.device}` : 'an unknown filesystem'}, the same disk as the data dir), heartbeat 100 ms, election timeout 1 s`;
      say(`etcd: ${etcd.endpoints}`);
      const pids = childPids('etcd');
      onFloor(await measureFloor({ cluster: etcd, requests: args.floorWrites, concurrency: args.concurrency, etcdCpuMs: () => pidsCpuMs(pids), say }));
    }
    const fsync = summarize(fsyncFloor(dataDir, 100));
    const mount = mountOf(dataDir, readFileSync('/proc/mounts', 'utf8'));
    const loadavgBefore = loadavg();
    const busy0 = machineBusyMs();
    const own0 = ownCpuMs();
    const etcdPids = etcd ? childPids('etcd') : [];
    const store0 = pidsCpuMs(etcdPids);
    const wall0 = performance.now();
    say(`data dir ${dataDir} on ${mount ? `${mount.fsType} (${mount.device})` : 'an unknown filesystem'}; fsync p50 ${fsync.p50.toFixed(2)} ms`);
    const s = await startServer(dataDir, args.logLevel, etcd);
    await keep(held, 'server', s);
    const alive = (phase: string) => {
      if (s.exited) throw new Error(`the server process exited during ${phase}`);
    };
    say(`server pid ${s.pid} at ${s.target.server.origin}`);
    await sleep(500);
    const idle = memMiB(s.pid);
    const writer = new ApiClient(s.target, { maxSockets: 256 });
    const lister = new ApiClient(s.target, { maxSockets: 1 });
    clients.push(writer, lister);
    const notes = new Set<string>();

    // 0. warm-up (TLS connections, the server's JIT), in a namespace of its own
    const nsReply = outcomeOf(await writer.send('POST', '/api/v1/namespaces', namespace(WARMUP_NAMESPACE)));
    if (!nsReply.ok) throw new Error(`creating namespace ${WARMUP_NAMESPACE}: ${nsReply.error ?? '?'}`);
    const probe = await writer.send('POST', WARMUP_SERVICES_PATH, service('probe'));
    if (probe.status !== 201) throw new Error(`the server refuses the bench's Service: ${outcomeOf(probe).error ?? '?'}`);
    const probeSpec = (JSON.parse(probe.body.toString('utf8')) as { spec?: { clusterIP?: unknown } }).spec;
    if (probeSpec?.clusterIP === undefined) {
      notes.add('This server allocates no ClusterIP: a created Service keeps spec.clusterIP unset (kube-apiserver allocates one per ClusterIP Service, ' +
        'which costs it a further write), so these creates do a little less than kube-apiserver\'s.');
    }
    const warmConc = Math.max(...args.concurrency, args.loadConcurrency);
    const warmUp = async (tag: string) => {
      await closedLoop(WARMUP, warmConc, (i) => create(writer, WARMUP_SERVICES_PATH, service(`${tag}-${i}`)));
      await deleteServices(writer, WARMUP_SERVICES_PATH, s);
    };
    await warmUp('warm');
    // The JIT still compiles for a while: the closed-loop cases once more, untimed, so the empty store's point is not
    // also the cold server's (it used to come out slower than the loaded store's).
    await slopePoint(s, writer, 'warm', args.concurrency, args.creates, 0);

    // 1. the slope's first point: the empty store
    const slope: SlopePoint[] = [await slopePoint(s, writer, 'empty', args.concurrency, args.creates, 0)];
    alive('the creates into the empty store');

    // 2. load
    const load: CreateCase[] = [];
    load.push(await closedCase(s, writer, 'load', 'Service', args.services, args.loadConcurrency, (i) => service(loadServiceName(i))));
    alive('the Service load');
    if (args.slices > 0) load.push(await closedCase(s, writer, 'load', 'EndpointSlice', args.slices, args.loadConcurrency, (i) => loadSlice(i, args.services)));
    alive('the EndpointSlice load');
    await sleep(500);
    const afterLoad = memMiB(s.pid);

    // 3. lists
    const lists: ListCase[] = [];
    await currentRV(lister); // the lister's connection, open before timing
    // The namespace also holds what the server makes itself: the `kubernetes` Service and its EndpointSlice, as
    // kube-apiserver makes them (the slice by the API servers' lease reconciler, some time after the start).
    const kinds: [ListCase['kind'], string, number][] = [
      ['Services', SERVICES_PATH, args.services + (await serversOwn(lister, SERVICES_PATH))],
      ['EndpointSlices', SLICES_PATH, args.slices === 0 ? 0 : args.slices + (await serversOwn(lister, SLICES_PATH))],
    ];
    for (const [kind, path, expected] of kinds) {
      if (expected === 0) continue;
      for (const limit of [null, PAGE]) {
        const l = await listCase(s, lister, kind, path, limit, args.listRepeat);
        if (l.items !== expected) throw new Error(`list ${path}: ${l.items} items, expected ${expected}`);
        lists.push(l);
      }
    }
    alive('the lists');

    // 4. creates into the loaded store: the slope's second point, and the paced case
    await warmUp('rewarm');
    const main = await slopePoint(s, writer, 'loaded', args.concurrency, args.creates, args.slices);
    slope.push(main);
    const creates: CreateCase[] = [...main.cases];
    if (args.paced > 0) {
      const path = await caseNamespace(writer, `bench-paced-${args.qps}`);
      creates.push(await pacedCase(s, writer, args.paced, args.qps, path));
      await deleteServices(writer, path, s);
    }
    alive('the creates');

    // 5. the store topped up to --slope Services: the slope's last point
    if (args.slope > 0) {
      const more = args.slope - (await servicesInStore(writer));
      if (more > 0) load.push(await closedCase(s, writer, 'load', 'Service', more, args.loadConcurrency, (i) => service(loadServiceName(args.services + i))));
      alive('the top-up');
      slope.push(await slopePoint(s, writer, 'topped', args.concurrency, args.creates, args.slices));
      alive('the creates into the topped-up store');
    }

    // 6. watches
    const watches: WatchCase[] = [];
    for (const w of args.watchers) watches.push(await watchCase(s, writer, w, args.watchWrites, notes));
    alive('the watches');

    const end = memMiB(s.pid);
    const otherCpus = Math.max(0, machineBusyMs() - busy0 - cpuMs(s.pid) - (ownCpuMs() - own0) - (pidsCpuMs(etcdPids) - store0)) / (performance.now() - wall0);
    const memory: MemoryPoints = { idleMiB: idle.rss, afterLoadMiB: afterLoad.rss, afterAllMiB: end.rss, endHwmMiB: end.hwm };
    if (!lists.some((l) => l.peakRssMiB !== null)) notes.add('/proc/<pid>/clear_refs could not be written: list peaks are not measured (VmHWM at the end is the peak of the whole run).');
    else notes.add('VmHWM is reset before each list row, so "VmHWM at the end" is the peak since the last list row, not of the whole run.');
    const meta: Meta = {
      ...machineMeta(loadavgBefore),
      storage: { kind, detail: storageDetail },
      dataDirFs: mount ? `${mount.fsType} (${mount.device}, mounted on ${mount.mountPoint})` : 'unknown', fsyncMs: fsync,
      serverLogLevel: args.logLevel, otherCpus, quick: args.quick,
    };
    return { meta, creates, slope, load, watches, lists, memory, notes: [...notes], totalWallMs: performance.now() - started };
  } finally {
    for (const c of clients) c.close();
  }
}

process.exitCode = await main();
if (process.exitCode === 130) process.exit(130);
