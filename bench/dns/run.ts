/**
 * bench/dns: `nodenet dns` beside dnsmasq, serving the same Service records, in one run on the same core
 * (issue 30's benchmark).
 *
 *   npm run bench:dns -- [--smoke] [--services 10000] [--namespaces 100] [--duration 10] [--clients 10]
 *                        [--outstanding 100] [--freshness 10] [--servers nodenet,dnsmasq] [--out-dir bench/results]
 *
 * The setup, all on 127.0.0.1 in this namespace (no root needed; nothing leaves the machine):
 *   - a control plane (bench/apiserver/server.child.ts: SQLite in /tmp/nn-bench-dns-<pid>-*, its coredns
 *     addon disabled, since nodenet dns is run here by hand) and --services ClusterIP Services in
 *     --namespaces namespaces, created through the API; the ClusterIPs it allocates are the records;
 *   - a fake upstream DNS server (wire.ts) in this process, the only upstream of both servers, answering
 *     `ext-<k>.example` (TEST-NET addresses) so no real name is ever asked;
 *   - `nodenet dns` (dist/nodenet.js, so `npm run build` first; the npm script does) with the admin kubeconfig,
 *     list+watching the API, forwarding other names to the fake upstream;
 *   - dnsmasq (Debian's dnsmasq-base), the same records in an --addn-hosts file, --local=/cluster.local/ so a
 *     missing cluster name is NXDOMAIN without asking upstream, and the fake upstream for everything else.
 * Both servers run under `taskset -c 1`, dnsperf under `taskset -c 0`: each server has core 1 to itself
 * while it is measured (the other is idle), and the load generator never competes with it.
 *
 * Per case (a) cluster names, (b) cached external names (warmed up just before, so from the cache: the
 * upstream's query count during the run shows it), (c) NXDOMAIN, per server in turn: one dnsperf run of
 * --duration seconds, UDP, -c --clients, -q --outstanding, -v (per-query latencies: parse.ts).
 * Then (d) freshness: a Service created and one deleted through the API, the time to the first answer of
 * nodenet dns that shows it (polled every 10 ms with wire.ts's client); for dnsmasq the same change as a
 * rewritten hosts file, which it never notices by itself (checked: polled for a while with no reload) and
 * re-reads on SIGHUP (measured: rewrite + SIGHUP to first answer).
 * Answers are checked with wire.ts's client: before the cases, a sample of cluster names against the API's
 * ClusterIPs and of missing names for NXDOMAIN; just before the external case (its warm-up), every external
 * name against the upstream's address.
 *
 * Prints a Markdown report; writes <out-dir>/dns-<date>.json and a chart dns-<date>.{svg,png}. Every child
 * process (control plane, servers, dnsperf) is killed and the temporary directory removed on every way out,
 * SIGINT and SIGTERM included.
 */
import { stopServerChild } from '../lib/server-child.js';
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import { loadavg } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from '../lib/args.js';
import { ApiClient, closedLoop, outcomeOf } from '../lib/http-client.js';
import { parseKubeconfig, type ApiTarget } from '../lib/kubeconfig.js';
import { machineMeta } from '../lib/machine.js';
import { parseDnsBenchArgs, type DnsBenchArgs, type ServerName } from './args.js';
import { parseDnsperf } from './parse.js';
import { caseResult, chartRows, formatReport, SERVER_LABELS, type CaseResult, type Change, type DnsBenchResult, type DnsMeta, type FreshnessResult, type NoReloadCheck, type Verification } from './report.js';
import { clientSocket, queryA, startFakeUpstream, type FakeUpstream } from './wire.js';
import { CASES, caseNames, CLUSTER_DOMAIN, EXTERNAL_NAMES, externalIP, externalName, fqdn, hostsFile, namespaceBody, namespaceName, queryFile, serviceAt, serviceBody, type CaseName } from './workload.js';
import { renderChart } from './chart.js';
import { DNSMASQ, DNSPERF, dnsmasqVersion, dnsperfVersion } from './tools.js';

const TAG = '[bench:dns]';
const here = dirname(fileURLToPath(import.meta.url));
const REPO = join(here, '..', '..');
const SERVER_CHILD = join(here, '..', 'apiserver', 'server.child.ts');
const NODENET_JS = join(REPO, 'dist', 'nodenet.js');
const PREFIX = 'nn-bench-dns-';
const SERVER_CORE = '1';
const CLIENT_CORE = '0';
const POLL_MS = 10;
const FRESHNESS_LIMIT_MS = 10_000;
const VERIFY_SAMPLE = 200;

const say = (s: string) => void process.stderr.write(`${TAG} ${s}\n`);
const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the run owns, for the signal handler and the end. */
interface Ctx {
  readonly children: ChildProcess[];
  dataDir: string | null;
  upstream: FakeUpstream | null;
  interrupted: boolean;
}

function killChildren(ctx: Ctx): void {
  for (const p of ctx.children) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
}

/** A crashed run's data directories (their pid gone), and only those. */
function removeLeftovers(): void {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const d of readdirSync('/tmp')) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(d);
    if (m && !alive(Number(m[1]))) rmSync(join('/tmp', d), { recursive: true, force: true });
  }
}

/** A port free for both TCP and UDP on 127.0.0.1 (nodenet dns listens on both). */
async function freePort(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const srv = createServer();
    const port = await new Promise<number>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => resolve((srv.address() as { port: number }).port));
    });
    const udp = createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((r) => udp.close(() => r()));
    await new Promise<void>((r) => srv.close(() => r()));
    if (ok) return port;
  }
  throw new Error('no port free for both TCP and UDP on 127.0.0.1');
}

// ---- the API ----

interface Api {
  readonly child: ChildProcess;
  readonly kubeconfig: string;
  readonly target: ApiTarget;
}

async function startApi(ctx: Ctx, dataDir: string): Promise<Api> {
  // bench/apiserver's server child: SQLite in dataDir, no node lifecycle to speak of, the coredns addon off.
  const child = fork(SERVER_CHILD, [dataDir, 'warn', '', '', 'coredns'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: process.execArgv });
  ctx.children.push(child);
  const kubeconfig = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the control plane did not start in 60 s')), 60_000);
    child.on('message', (m: unknown) => {
      const msg = m as { type?: string; kubeconfig?: string; error?: string };
      clearTimeout(timer);
      if (msg.type === 'ready' && msg.kubeconfig) resolve(msg.kubeconfig);
      else reject(new Error(`the control plane failed to start: ${msg.error ?? JSON.stringify(m)}`));
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`the control plane exited (${sig ?? code}) before it was ready`));
    });
  });
  return { child, kubeconfig, target: parseKubeconfig(readFileSync(kubeconfig, 'utf8')) };
}

const stopApi = stopServerChild;

/** The namespaces and Services; fqdn → the ClusterIP the API allocated. */
async function loadServices(c: ApiClient, a: DnsBenchArgs): Promise<Map<string, string>> {
  const ns = await closedLoop(a.namespaces, 16, async (m) => outcomeOf(await c.send('POST', '/api/v1/namespaces', namespaceBody(namespaceName(m)))));
  const badNs = ns.outcomes.find((o) => !o.ok);
  if (badNs) throw new Error(`creating the namespaces: ${badNs.error}`);
  const ips = new Map<string, string>();
  let failed: string | null = null;
  await closedLoop(a.services, 32, async (i) => {
    const s = serviceAt(i, a.namespaces);
    const r = await c.send('POST', `/api/v1/namespaces/${s.namespace}/services`, serviceBody(s));
    const o = outcomeOf(r);
    if (o.ok) {
      const ip = (JSON.parse(r.body.toString('utf8')) as { spec?: { clusterIP?: string } }).spec?.clusterIP;
      if (ip) ips.set(fqdn(s), ip);
      else failed ??= `${fqdn(s)}: created without a ClusterIP`;
    } else failed ??= `${fqdn(s)}: ${o.error}`;
    if (i > 0 && i % 2000 === 0) say(`  ${i} Services ...`);
    return o;
  });
  if (failed) throw new Error(`creating the Services: ${failed}`);
  // Records in the Services' order, so the hosts file reads svc-0, svc-1, ...
  return new Map(Array.from({ length: a.services }, (_, i) => fqdn(serviceAt(i, a.namespaces))).map((n) => [n, ips.get(n)!]));
}

// ---- the servers ----

interface DnsServer {
  readonly name: ServerName;
  readonly port: number;
  readonly proc: ChildProcess;
  /** The tail of its stderr, for errors. */
  log(): string;
}

function startProc(ctx: Ctx, name: ServerName, argv: readonly string[], port: number): DnsServer {
  // taskset execs the server: the pid is the server's own, and the pinning holds for all its threads.
  const p = spawn('taskset', ['-c', SERVER_CORE, ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
  ctx.children.push(p);
  let tail = '';
  p.stderr!.on('data', (d: Buffer) => (tail = `${tail}${d.toString()}`.slice(-3000)));
  p.on('exit', (code, sig) => {
    if (!ctx.interrupted) say(`  ${SERVER_LABELS[name]} exited (${sig ?? code})`);
  });
  return { name, port, proc: p, log: () => tail.trim() };
}

/** Waits until the server answers `name` with `ip` (nodenet dns: its lists arrived). */
async function waitAnswer(s: DnsServer, name: string, ip: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null) throw new Error(`${SERVER_LABELS[s.name]} exited: ${s.log().slice(-1000)}`);
    const r = await queryA(s.port, name, 200).catch(() => null);
    if (r?.rcode === 'NOERROR' && r.ips.includes(ip)) return;
    if (Date.now() > until) throw new Error(`${SERVER_LABELS[s.name]} did not answer ${name} with ${ip} in ${timeoutMs / 1000} s (last: ${JSON.stringify(r)}): ${s.log().slice(-1000)}`);
    await sleep(100);
  }
}

function dnsmasqArgs(port: number, hosts: string, upstreamPort: number): string[] {
  return [DNSMASQ, '--no-daemon', '--no-resolv', '--no-hosts', `--addn-hosts=${hosts}`, `--port=${port}`, '--listen-address=127.0.0.1', '--bind-interfaces',
    // Options as `--x=v`: dnsmasq 2.90 rejects `--cache-size 10000` (optional-argument options take no separate value).
    '--cache-size=10000', `--local=/${CLUSTER_DOMAIN}/`, `--server=127.0.0.1#${upstreamPort}`];
}

function nodenetArgs(port: number, kubeconfig: string, upstreamPort: number): string[] {
  return [process.execPath, NODENET_JS, 'dns', '--kubeconfig', kubeconfig, '--listen', `127.0.0.1:${port}`, '--upstream', `127.0.0.1:${upstreamPort}`,
    '--cluster-domain', CLUSTER_DOMAIN, '--metrics-port', '0', '--health-port', '0', '--ready-port', '0'];
}

// ---- measuring ----

async function dnsperf(ctx: Ctx, s: DnsServer, file: string, out: string, a: DnsBenchArgs): Promise<string> {
  const argv = ['-c', CLIENT_CORE, DNSPERF, '-s', '127.0.0.1', '-p', String(s.port), '-m', 'udp', '-d', file, '-l', String(a.durationS),
    '-c', String(a.clients), '-q', String(a.outstanding), '-t', '5', '-v'];
  const p = spawn('taskset', argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  ctx.children.push(p);
  const sink = createWriteStream(out);
  p.stdout!.pipe(sink);
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err = `${err}${d.toString()}`.slice(-2000)));
  const code = await new Promise<number | null>((r) => p.on('close', (c) => r(c)));
  await new Promise<void>((r) => (sink.writableFinished ? r() : sink.on('finish', () => r())));
  if (code !== 0) throw new Error(`dnsperf exited ${code}: ${err.trim()}`);
  return out;
}

async function measureCase(ctx: Ctx, checks: Checks, s: DnsServer, c: CaseName, file: string, a: DnsBenchArgs, dir: string): Promise<CaseResult> {
  if (c === 'external') {
    // Warm-up, and the external names' answers checked: every one once through this server just before its
    // run, so the run is answered from its cache (nodenet dns caps a cached answer at 30 s, CoreDNS's
    // `cache 30`: a warm-up any earlier could expire during the run).
    await check(checks, s, externalChecks());
  }
  const up0 = ctx.upstream!.queries();
  const out = await dnsperf(ctx, s, file, join(dir, `dnsperf-${c}-${s.name}.out`), a);
  const up1 = ctx.upstream!.queries();
  const run = parseDnsperf(readFileSync(out, 'utf8'));
  rmSync(out, { force: true });
  return caseResult(c, s.name, run, up1 - up0);
}

/** Answers checked per server: cluster names give the API's ClusterIP, external ones the upstream's address, missing ones NXDOMAIN. */
type Checks = Map<ServerName, { checked: number; agreed: number; mismatches: string[] }>;

async function check(checks: Checks, s: DnsServer, want: readonly (readonly [string, string])[]): Promise<void> {
  const c = checks.get(s.name) ?? { checked: 0, agreed: 0, mismatches: [] };
  checks.set(s.name, c);
  for (const [name, expected] of want) {
    const r = await queryA(s.port, name, 1000);
    const got = r === null ? 'no answer' : r.rcode === 'NOERROR' ? r.ips.join(',') : r.rcode;
    c.checked++;
    if (got === expected) c.agreed++;
    else c.mismatches.push(`${name}: ${got}, expected ${expected}`);
  }
}

const externalChecks = (): [string, string][] => Array.from({ length: EXTERNAL_NAMES }, (_, k): [string, string] => [externalName(k), externalIP(k)]);

/** Polls `name` every POLL_MS until `done` holds for the answer; ms from t0, or null at the limit. */
async function pollUntil(port: number, name: string, t0: number, done: (r: { rcode: string; ips: readonly string[] }) => boolean, limitMs = FRESHNESS_LIMIT_MS): Promise<number | null> {
  const sock = await clientSocket();
  try {
    for (;;) {
      const sent = performance.now();
      const r = await queryA(port, name, 100, sock).catch(() => null);
      if (r && done(r)) return performance.now() - t0;
      if (performance.now() - t0 > limitMs) return null;
      const wait = POLL_MS - (performance.now() - sent);
      if (wait > 0) await sleep(wait);
    }
  } finally {
    sock.close();
  }
}

interface Freshness {
  readonly results: FreshnessResult[];
  readonly noReload: NoReloadCheck | null;
}

async function measureFreshness(servers: readonly DnsServer[], api: ApiClient, a: DnsBenchArgs, hostsPath: string, records: Map<string, string>): Promise<Freshness> {
  const samples = new Map<string, { ms: number[]; timeouts: number }>();
  const add = (s: ServerName, c: Change, x: number | null) => {
    const k = `${s}/${c}`;
    const e = samples.get(k) ?? { ms: [], timeouts: 0 };
    if (x === null) e.timeouts++;
    else e.ms.push(x);
    samples.set(k, e);
  };
  const nodenet = servers.find((s) => s.name === 'nodenet');
  const dnsmasq = servers.find((s) => s.name === 'dnsmasq');
  const ns = namespaceName(0);
  const extra = new Map<string, string>();
  const rewrite = () => writeFileSync(hostsPath, hostsFile(new Map([...records, ...extra])));
  let noReload: NoReloadCheck | null = null;
  if (dnsmasq) {
    // dnsmasq never re-reads --addn-hosts by itself: a name added to the file, polled for a while, no SIGHUP.
    const name = `stale.${ns}.svc.${CLUSTER_DOMAIN}`;
    extra.set(name, '10.111.255.254');
    const t0 = performance.now();
    rewrite();
    const waitedMs = a.smoke ? 500 : 2000;
    const seen = await pollUntil(dnsmasq.port, name, t0, (r) => r.rcode === 'NOERROR', waitedMs);
    noReload = { waitedMs, stillStale: seen === null };
    say(`  dnsmasq, hosts file rewritten, no reload: ${seen === null ? `still NXDOMAIN after ${waitedMs} ms` : `answered after ${seen.toFixed(0)} ms`}`);
  }
  for (let k = 0; k < a.freshness; k++) {
    const name = `fresh-${k}`;
    const full = `${name}.${ns}.svc.${CLUSTER_DOMAIN}`;
    let ip = `10.111.0.${k + 1}`;
    if (nodenet) {
      // Polling starts with the request: the first answer with an address is the one that reflects the create.
      const t0 = performance.now();
      const poll = pollUntil(nodenet.port, full, t0, (r) => r.rcode === 'NOERROR' && r.ips.length > 0);
      const res = await api.send('POST', `/api/v1/namespaces/${ns}/services`, serviceBody({ name, namespace: ns }));
      if (res.status !== 201) throw new Error(`creating ${full}: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
      ip = (JSON.parse(res.body.toString('utf8')) as { spec: { clusterIP: string } }).spec.clusterIP;
      add('nodenet', 'create', await poll);
    }
    if (dnsmasq) {
      extra.set(full, ip);
      const t0 = performance.now();
      rewrite();
      dnsmasq.proc.kill('SIGHUP');
      add('dnsmasq', 'create', await pollUntil(dnsmasq.port, full, t0, (r) => r.rcode === 'NOERROR' && r.ips.includes(ip)));
    }
    if (nodenet) {
      const t0 = performance.now();
      const poll = pollUntil(nodenet.port, full, t0, (r) => r.rcode === 'NXDOMAIN');
      const res = await api.send('DELETE', `/api/v1/namespaces/${ns}/services/${name}`);
      if (res.status !== 200 && res.status !== 202) throw new Error(`deleting ${full}: ${res.status}`);
      add('nodenet', 'delete', await poll);
    }
    if (dnsmasq) {
      extra.delete(full);
      const t0 = performance.now();
      rewrite();
      dnsmasq.proc.kill('SIGHUP');
      add('dnsmasq', 'delete', await pollUntil(dnsmasq.port, full, t0, (r) => r.rcode === 'NXDOMAIN'));
    }
  }
  const results: FreshnessResult[] = [];
  for (const s of servers) {
    for (const c of ['create', 'delete'] as const) {
      const e = samples.get(`${s.name}/${c}`);
      if (!e) continue;
      results.push({ server: s.name, change: c, via: s.name === 'nodenet' ? `API ${c === 'create' ? 'POST' : 'DELETE'} (list+watch)` : 'hosts file rewritten + SIGHUP', samplesMs: e.ms, timeouts: e.timeouts });
    }
  }
  return { results, noReload };
}

// ---- main ----

function meta(loadavgBefore: number[]): DnsMeta {
  const dirty = spawnSync('git', ['-C', REPO, 'status', '--porcelain'], { encoding: 'utf8' }).stdout?.trim() ? ' (with uncommitted changes)' : '';
  return {
    ...machineMeta(loadavgBefore),
    dnsperf: dnsperfVersion() ?? '?',
    dnsmasq: dnsmasqVersion() ?? '?',
    commit: `${spawnSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout?.trim() || '?'}${dirty}`,
    pinning: `both servers pinned to core ${SERVER_CORE} (taskset -c ${SERVER_CORE}), dnsperf to core ${CLIENT_CORE} (taskset -c ${CLIENT_CORE}); one server measured at a time`,
  };
}

async function main(): Promise<number> {
  const a = benchArgs(parseDnsBenchArgs);
  if (a === 2) return 2;
  if (dnsperfVersion() === null || dnsmasqVersion() === null) {
    console.error('bench:dns needs dnsperf and dnsmasq. On Debian: apt-get install -y dnsperf dnsmasq-base (the binary alone: no dnsmasq service; the bench runs its own on 127.0.0.1)');
    return 2;
  }
  if (spawnSync('taskset', ['-c', SERVER_CORE, 'true']).status !== 0) {
    console.error(`bench:dns pins the servers to core ${SERVER_CORE} and dnsperf to core ${CLIENT_CORE}: it needs taskset (util-linux) and at least 2 CPUs`);
    return 2;
  }
  if (a.servers.includes('nodenet') && !existsSync(NODENET_JS)) {
    console.error(`${NODENET_JS} is missing: run \`npm run build\` first (npm run bench:dns does)`);
    return 2;
  }
  const ctx: Ctx = { children: [], dataDir: null, upstream: null, interrupted: false };
  const cleanup = async () => {
    killChildren(ctx);
    await ctx.upstream?.close().catch(() => undefined);
    if (ctx.dataDir) rmSync(ctx.dataDir, { recursive: true, force: true });
  };
  const onSignal = (sig: NodeJS.Signals) => {
    if (ctx.interrupted) return;
    ctx.interrupted = true;
    say(`${sig}: stopping the servers`);
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  removeLeftovers();
  const loadavgBefore = loadavg();
  const notes: string[] = [];
  const cases: CaseResult[] = [];
  const checks: Checks = new Map();
  let freshness: Freshness = { results: [], noReload: null };
  let load = { services: a.services, wallMs: NaN };
  let failed: string | null = null;
  let api: Api | null = null;
  let client: ApiClient | null = null;
  try {
    const dir = mkdtempSync(join('/tmp', `${PREFIX}${process.pid}-`));
    ctx.dataDir = dir;
    // dnsmasq drops to nobody after start and re-reads the hosts file as nobody on SIGHUP.
    chmodSync(dir, 0o755);
    ctx.upstream = await startFakeUpstream();
    say(`fake upstream on 127.0.0.1:${ctx.upstream.port}; control plane ...`);
    api = await startApi(ctx, join(dir, 'api'));
    client = new ApiClient(api.target, { maxSockets: 34 });
    say(`creating ${a.namespaces} namespaces and ${a.services} Services ...`);
    const t0 = performance.now();
    const records = await loadServices(client, a);
    load = { services: records.size, wallMs: performance.now() - t0 };
    say(`  ${records.size} Services in ${(load.wallMs / 1000).toFixed(1)} s`);
    const hostsPath = join(dir, 'hosts');
    writeFileSync(hostsPath, hostsFile(records), { mode: 0o644 });
    const names = caseNames(a.services, a.namespaces);
    const files = new Map<CaseName, string>();
    for (const c of CASES) {
      const f = join(dir, `queries-${c}.txt`);
      writeFileSync(f, queryFile(names[c]));
      files.set(c, f);
    }
    const servers: DnsServer[] = [];
    const last = fqdn(serviceAt(a.services - 1, a.namespaces));
    for (const s of a.servers) {
      const port = await freePort();
      const srv = s === 'nodenet'
        ? startProc(ctx, s, nodenetArgs(port, api.kubeconfig, ctx.upstream.port), port)
        : startProc(ctx, s, dnsmasqArgs(port, hostsPath, ctx.upstream.port), port);
      // Ready when it answers the last Service created (nodenet dns: its lists have arrived).
      const t1 = performance.now();
      await waitAnswer(srv, last, records.get(last)!, 60_000);
      say(`${SERVER_LABELS[s]} on 127.0.0.1:${port} (pid ${srv.proc.pid}, core ${SERVER_CORE}), answering in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
      servers.push(srv);
    }
    const sample: [string, string][] = [
      ...names.cluster.slice(0, VERIFY_SAMPLE).map((n): [string, string] => [n, records.get(n)!]),
      ...names.nxdomain.slice(0, 20).map((n): [string, string] => [n, 'NXDOMAIN']),
    ];
    for (const s of servers) {
      await check(checks, s, sample);
      const v = checks.get(s.name)!;
      say(`answers from ${SERVER_LABELS[s.name]}: ${v.agreed}/${v.checked} as expected${v.mismatches.length ? ` (${v.mismatches.slice(0, 3).join('; ')})` : ''}`);
    }
    for (const c of CASES) {
      for (const s of servers) {
        const r = await measureCase(ctx, checks, s, c, files.get(c)!, a, dir);
        cases.push(r);
        say(`${c} ${SERVER_LABELS[s.name]}: ${r.qps.toFixed(0)} q/s, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms, lost ${r.lost}/${r.sent}` +
          `${r.wrongRcode ? `, ${r.wrongRcode} wrong rcodes ${JSON.stringify(r.rcodes)}` : ''}${c === 'external' ? `, upstream asked ${r.upstreamQueries}×` : ''}`);
        if (r.wrongRcode) notes.push(`${c}, ${SERVER_LABELS[s.name]}: ${r.wrongRcode} answers had another rcode than expected (${JSON.stringify(r.rcodes)})`);
      }
    }
    if (a.freshness) {
      say(`freshness: ${a.freshness} creates and deletes per server ...`);
      freshness = await measureFreshness(servers, client, a, hostsPath, records);
      for (const f of freshness.results) say(`  ${SERVER_LABELS[f.server]} ${f.change}: ${f.samplesMs.map((x) => x.toFixed(0)).join(', ')} ms${f.timeouts ? `, ${f.timeouts} timed out` : ''}`);
    }
    // A server that died under the load would have left dnsperf its lost queries; say so plainly.
    for (const s of servers) {
      if (s.proc.exitCode !== null || s.proc.signalCode !== null) throw new Error(`${SERVER_LABELS[s.name]} exited during the run: ${s.log().slice(-1000)}`);
    }
  } catch (e) {
    failed = errText(e);
    if (!ctx.interrupted) say(`ERROR: ${failed}`);
  } finally {
    if (!ctx.interrupted) {
      client?.close();
      for (const p of ctx.children) if (p !== api?.child && p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
      if (api) await stopApi(api.child).catch(() => undefined);
      await cleanup();
    }
  }
  if (ctx.interrupted) await new Promise<never>(() => undefined);
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  const verification: Verification[] = [...checks].map(([server, c]) => ({ server, ...c }));
  for (const v of verification) if (v.agreed !== v.checked) notes.push(`${SERVER_LABELS[v.server]} gave ${v.checked - v.agreed} unexpected answers of ${v.checked}`);
  if (failed) notes.push(`the run stopped: ${failed}`);
  const result: DnsBenchResult = { meta: meta(loadavgBefore), args: a, load, cases, freshness: freshness.results, noReload: freshness.noReload, verification, notes };
  const report = formatReport(result);
  console.log(`\n${report}`);
  const outDir = isAbsolute(a.outDir) ? a.outDir : join(REPO, a.outDir);
  const base = join(outDir, `dns-${result.meta.date.slice(0, 10)}`);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${base}.json`, `${JSON.stringify({ ...result, report }, null, 2)}\n`);
  say(`results written to ${base}.json`);
  if (cases.length) {
    try {
      const { svg, png } = await renderChart(chartRows(cases), `Cluster DNS on this machine, ${result.meta.date.slice(0, 10)}`,
        `${a.services.toLocaleString('en')} Services; dnsperf -c ${a.clients} -q ${a.outstanding} for ${a.durationS} s per case; each server alone on one core`);
      writeFileSync(`${base}.svg`, svg);
      writeFileSync(`${base}.png`, png);
      say(`chart written to ${base}.svg and .png`);
    } catch (e) {
      say(`the chart could not be drawn: ${errText(e)}`);
    }
  }
  return failed || notes.length ? 1 : 0;
}

process.exitCode = await main();
