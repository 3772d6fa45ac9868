/**
 * bench/programming: how fast the agent programs Services it watches on an
 * API server, end to end with real processes: a fresh agent's list + full
 * sync, and the network programming latency of one-endpoint changes, per
 * proxy mode, beside the references (report.ts).
 *
 *   npm run bench:programming -- [--quick] [--modes iptables,nftables] [--services 10000] [--changes 50] [--out FILE]
 *
 * Per mode and size (the contrast size first, then N), a lab of its own
 * (lab/lab.ts; namespaces nn-pg*, removed after the case, on failure and on
 * SIGINT): `nodenet control-plane` from dist/nodenet.js (so `npm run build`
 * first; the npm script does) in the underlay namespace, reached from here
 * on 127.0.0.1 through the lab's relay. Then:
 *   1. N ClusterIP Services and N EndpointSlices of 2 endpoints (workload.ts)
 *      created over HTTPS by concurrent clients (bench/lib's ApiClient);
 *   2. a fresh agent on node n1 (proxyMinSyncMs from --min-sync-ms, log level
 *      debug): spawn → the first proxy-status.json showing every Service with
 *      both endpoints, split into phases from its log and the server's
 *      (timeline.ts); then the same lists made again from the node's namespace
 *      to split a list into HTTP, JSON.parse and client-node (list-probe.child.ts);
 *   3. K one-endpoint changes, one PUT each: the PUT's acknowledgement → the
 *      status file showing it (status-watch.ts), with the sync that did it
 *      from the agent's log and the agent's own
 *      kubeproxy_network_programming_duration_seconds over the changes (its
 *      /metrics in the node's namespace, when it serves one).
 * A progress line per step on stderr; the Markdown report on stdout; JSON
 * only with --out. Needs root; touches nothing outside its namespaces.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from '../lib/args.js';
import { isRoot, machineMeta } from '../lib/machine.js';
import { AGENT_JS, type Lab, type VNode } from '../../agent/src/lab/lab.js';
import { CLUSTER_CIDR } from '../../agent/src/lab/plan.js';
import { newLab, runner } from '../../agent/src/testing/lab.js';
import { ApiClient, closedLoop, outcomeOf } from '../lib/http-client.js';
import { parseKubeconfig } from '../lib/kubeconfig.js';
import { parseProcStatCpuMs, parseProcStatTotals, parseProcStatus } from '../lib/proc.js';
import { modeLabel, type BenchMode } from '../lib/proxy-modes.js';
import { initialEndpoints, planChanges } from '../lib/services.js';
import { median, summarize } from '../lib/stats.js';
import { parseBenchArgs, type BenchArgs } from './args.js';
import { histogramDiff, parseHistogram, summarizeHistogram, type HistogramSummary } from './metrics.js';
import { formatReport, summarizeChanges, type BenchResult, type CaseResult, type ChangeSample, type CpuUse, type FreshResult, type ListProbe, type LoadFigure, type Meta, type StartupFloor } from './report.js';
import { epochNow, StatusWatcher } from './status-watch.js';
import { failedSyncs, freshPhases, parseLog, syncFor } from './timeline.js';
import { changeApplied, changedEndpoints, countInitialApplied, serviceObject, SERVICES_PATH, sliceName, sliceObject, SLICES_PATH } from './workload.js';

const TAG = '[bench:programming]';
const NODE = 'n1';
const PROBE = join(dirname(fileURLToPath(import.meta.url)), 'list-probe.child.ts');
const METRICS_URL = 'http://127.0.0.1:10249/metrics';
const PROGRAMMING_METRIC = 'kubeproxy_network_programming_duration_seconds';
const CHANGE_WAIT_MS = 60_000;

const say = (s: string) => void process.stderr.write(`${TAG} ${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmt = (n: number) => Math.round(n).toLocaleString('en');
const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

function firstLine(argv: string[]): string {
  try {
    return execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]!.trim();
  } catch {
    return 'unavailable';
  }
}

/** What the run owns, for the SIGINT handler and the end. */
interface Ctx {
  /** Labs made and not yet destroyed, and one being made. */
  readonly labs: Set<Lab>;
  creating: Promise<Lab> | null;
  interrupted: boolean;
  readonly work: string;
  readonly notes: Set<string>;
  readonly iptablesKind: 'nft' | 'legacy';
}

// ---- steps ----

async function load(client: ApiClient, n: number, conc: number): Promise<LoadFigure[]> {
  const out: LoadFigure[] = [];
  const kinds = [
    ['Service', SERVICES_PATH, (i: number) => serviceObject(i + 1)],
    ['EndpointSlice', SLICES_PATH, (i: number) => sliceObject(i + 1, initialEndpoints(i + 1), NODE)],
  ] as const;
  for (const [kind, path, make] of kinds) {
    const r = await closedLoop(n, conc, async (i) => outcomeOf(await client.send('POST', path, make(i))));
    const ok = r.outcomes.filter((o) => o.ok);
    const bad = r.outcomes.filter((o) => !o.ok);
    const f: LoadFigure = { kind, count: n, errors: bad.length, firstError: bad[0]?.error ?? null, wallMs: r.wallMs, perSec: ok.length / (r.wallMs / 1000), latencyMs: summarize(ok.map((o) => o.latencyMs)) };
    say(`  created ${fmt(n)} ${kind}s in ${(r.wallMs / 1000).toFixed(1)} s (${fmt(f.perSec)}/s, p99 ${f.latencyMs.p99.toFixed(1)} ms)${bad.length ? `, ${bad.length} errors: ${f.firstError}` : ''}`);
    out.push(f);
    if (bad.length) throw new Error(`creating ${kind}s: ${bad.length} errors, the first: ${f.firstError}`);
  }
  return out;
}

const rssMiB = (pid: number | undefined): number | null => {
  try {
    return pid === undefined ? null : parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8')).rssKiB / 1024;
  } catch {
    return null;
  }
};

const cpuMsOf = (pid: number): number => {
  try {
    return parseProcStatCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return 0; // gone
  }
};
const machineBusyMs = () => parseProcStatTotals(readFileSync('/proc/stat', 'utf8')).busyMs;
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * CPU over a window: the agent's, the control plane's (every process in the
 * underlay namespace: the server and the lab's relay), this process's, and
 * what the rest of the machine used (other processes, kernel threads), in CPUs.
 */
class CpuWindow {
  private readonly t0 = performance.now();
  private readonly busy0 = machineBusyMs();
  private readonly own0 = ownCpuMs();
  private readonly server0: number;
  private readonly agent0: number;

  private constructor(private readonly serverPids: readonly number[], private readonly agentPid: () => number | undefined, agentFromZero: boolean) {
    this.server0 = serverPids.reduce((a, p) => a + cpuMsOf(p), 0);
    const pid = agentPid();
    this.agent0 = agentFromZero || pid === undefined ? 0 : cpuMsOf(pid);
  }

  /** agentFromZero: the agent starts inside the window, so all its CPU counts. */
  static async open(lab: Lab, agentPid: () => number | undefined, agentFromZero = false): Promise<CpuWindow> {
    const pids = (await runner.run(['ip', 'netns', 'pids', lab.ul], { allowFailure: true })).stdout.split('\n').filter(Boolean).map(Number);
    return new CpuWindow(pids, agentPid, agentFromZero);
  }

  close(): CpuUse {
    const wall = performance.now() - this.t0;
    const pid = this.agentPid();
    const agentMs = (pid === undefined ? 0 : cpuMsOf(pid)) - this.agent0;
    const serverMs = this.serverPids.reduce((a, p) => a + cpuMsOf(p), 0) - this.server0;
    const benchMs = ownCpuMs() - this.own0;
    return { wallMs: wall, agentMs, serverMs, benchMs, otherCpus: Math.max(0, machineBusyMs() - this.busy0 - agentMs - serverMs - benchMs) / wall };
  }
}

const readLog = (file: string) => {
  try {
    return parseLog(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
};

interface Spawned {
  readonly spawnAt: number;
  readonly seenAt: number;
}

async function freshAgent(lab: Lab, node: VNode, watcher: StatusWatcher, services: number, args: BenchArgs): Promise<{ fresh: FreshResult; spawned: Spawned }> {
  const cpu = await CpuWindow.open(lab, () => node.agent?.pid, true);
  const spawnAt = epochNow(); // startAgent spawns at once (it writes the config file first)
  const all = watcher.waitFor((s) => countInitialApplied(s.applied, services) === services, args.timeoutS * 1000, `every one of the ${fmt(services)} Services applied`);
  all.catch(() => undefined); // awaited below; startAgent may fail first
  const ticker = setInterval(() => say(`  waiting for the first full sync: ${((epochNow() - spawnAt) / 1000).toFixed(0)} s`), 15_000);
  let seen;
  try {
    await node.startAgent();
    seen = await all;
  } finally {
    clearInterval(ticker);
  }
  const cpuUse = cpu.close();
  const rss = rssMiB(node.agent?.pid);
  const fresh: FreshResult = {
    services, endpoints: 2 * services, totalMs: seen.at - spawnAt, phases: null, phasesMissing: ['not read yet'],
    ruleCount: seen.status.lastSync?.ruleCount ?? null, statusBytes: seen.bytes, rssMiB: rss, cpu: cpuUse,
  };
  say(`  fresh agent: every Service applied ${(fresh.totalMs / 1000).toFixed(2)} s after spawn; RSS ${rss?.toFixed(0) ?? '?'} MiB; ` +
    `CPU: agent ${fmt(cpuUse.agentMs)} ms, server ${fmt(cpuUse.serverMs)} ms, others ${cpuUse.otherCpus.toFixed(2)} CPUs`);
  return { fresh, spawned: { spawnAt, seenAt: seen.at } };
}

/**
 * The fresh agent's phases, once it stopped: the server writes a WATCH line
 * when the watch ends, and the lists' split needs the watches' start.
 */
function withPhases(lab: Lab, node: VNode, f: FreshResult, sp: Spawned): FreshResult {
  const p = freshPhases({ spawnAt: sp.spawnAt, seenAt: sp.seenAt, agent: readLog(node.logFile), server: readLog(`${lab.runRoot}/control-plane.log`), user: `system:node:${NODE}` });
  if ('missing' in p) {
    say(`  fresh agent phases unknown: ${p.missing.join('; ')}`);
    return { ...f, phasesMissing: p.missing };
  }
  say(`  fresh agent phases (ms): start-up ${fmt(p.startupMs)}, registration ${fmt(p.registrationMs)}, agent start ${fmt(p.agentStartMs)}, ` +
    `lists ${fmt(p.listMs)} (served ${fmt(p.servedMs)}, delivered ${p.deliverMs === null ? '?' : fmt(p.deliverMs)}, watches open ${p.watchOpenMs === null ? '?' : fmt(p.watchOpenMs)}), ` +
    `queue ${fmt(p.queueMs)}, sync ${fmt(p.syncMs)} (backend ${p.backendMs === null ? '?' : fmt(p.backendMs)}), status ${fmt(p.statusMs)}`);
  return { ...f, phases: p, phasesMissing: [], ruleCount: f.ruleCount ?? p.rules };
}

/** What any fresh agent pays to load its code, measured now: Node itself, the bundle's core, client-node's import alone (medians of 5). */
function startupFloor(): StartupFloor {
  const time = (argv: string[]) => {
    const t0 = performance.now();
    const r = spawnSync(argv[0]!, argv.slice(1), { stdio: 'ignore' });
    return r.status === 0 ? performance.now() - t0 : NaN; // NaN: left out of the median's meaning, printed as "–"
  };
  const five = (argv: string[]) => median(Array.from({ length: 5 }, () => time(argv)));
  return {
    nodeMs: five([process.execPath, '-e', '0']),
    bundleMs: five([process.execPath, AGENT_JS, 'help']),
    clientNodeMs: five([process.execPath, '--input-type=module', '-e', "await import('@kubernetes/client-node')"]),
  };
}

async function listProbe(lab: Lab, node: VNode): Promise<ListProbe[]> {
  const kubeconfig = lab.controlPlane!.nodeKubeconfig(NODE);
  const r = await runner.run(['nsenter', `--net=${node.nsPath}`, '--', process.execPath, ...process.execArgv, PROBE, kubeconfig, '3'], { allowFailure: true, timeoutMs: 300_000 });
  if (r.exitCode !== 0) throw new Error(`list probe exited ${r.exitCode}: ${r.stderr.slice(-500)}`);
  const lists = JSON.parse(r.stdout.trim().split('\n').pop() ?? '[]') as ListProbe[];
  for (const l of lists) say(`  list ${l.kind}: ${(l.bytes / 1048576).toFixed(1)} MiB, HTTP ${l.fetchMs.toFixed(0)} ms, JSON.parse ${l.parseMs.toFixed(0)} ms, client-node ${l.clientNodeMs.toFixed(0)} ms`);
  return lists;
}

async function scrape(node: VNode): Promise<string | null> {
  const r = await node.exec(['curl', '-sf', '--max-time', '5', METRICS_URL], true);
  return r.exitCode === 0 ? r.stdout : null;
}

async function changes(lab: Lab, node: VNode, client: ApiClient, watcher: StatusWatcher, services: number, args: BenchArgs, ctx: Ctx) {
  const before = await scrape(node);
  const cpu = await CpuWindow.open(lab, () => node.agent?.pid);
  const raw: { sample: Omit<ChangeSample, 'sync'>; sentAt: number; ackAt: number; seenAt: number }[] = [];
  for (const [i, c] of planChanges(services, args.changes).entries()) {
    const path = `${SLICES_PATH}/${sliceName(c.service)}`;
    const cur = await client.send('GET', path);
    const rv = (JSON.parse(cur.body.toString('utf8')) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (cur.status !== 200 || !rv) throw new Error(`GET ${path}: HTTP ${cur.status}`);
    const body = sliceObject(c.service, changedEndpoints(c), NODE, { resourceVersion: rv, triggerTime: new Date(epochNow()).toISOString() });
    const reply = await client.send('PUT', path, body);
    if (reply.status !== 200) throw new Error(`PUT ${path}: HTTP ${reply.status}: ${reply.body.toString('utf8').slice(0, 300)}`);
    const seen = await watcher.waitFor((s) => changeApplied(s.applied, c), CHANGE_WAIT_MS, `change ${i + 1} (svc-${c.service}) applied`);
    const sentAt = performance.timeOrigin + reply.sentAt;
    const ackAt = performance.timeOrigin + reply.endAt;
    raw.push({ sample: { service: c.service, writeMs: reply.endAt - reply.sentAt, ackToAppliedMs: seen.at - ackAt, sentToAppliedMs: seen.at - sentAt }, sentAt, ackAt, seenAt: seen.at });
    if ((i + 1) % 10 === 0 || i + 1 === args.changes) say(`  change ${i + 1}/${args.changes}: ack → applied ${(seen.at - ackAt).toFixed(1)} ms`);
    await sleep(args.minSyncMs + 50); // the next change never waits for the minimum sync interval
  }
  const cpuUse = cpu.close();
  const after = await scrape(node);
  await sleep(300);
  const agentLog = readLog(node.logFile);
  const samples: ChangeSample[] = raw.map((r) => {
    const s = syncFor(agentLog, r.sentAt, r.seenAt);
    return { ...r.sample, sync: s ? { durationMs: s.durationMs, backendMs: s.backendMs, scope: s.scope, ackToStartMs: s.start - r.ackAt, endToSeenMs: r.seenAt - s.end } : null };
  });
  let metric: HistogramSummary | null = null;
  let note: string | null = null;
  const h0 = before === null ? null : parseHistogram(before, PROGRAMMING_METRIC);
  const h1 = after === null ? null : parseHistogram(after, PROGRAMMING_METRIC);
  if (before === null || after === null) note = `the agent serves no ${METRICS_URL} in its namespace: metric column skipped`;
  else if (!h0 || !h1) note = `the agent's /metrics has no ${PROGRAMMING_METRIC}: metric column skipped`;
  else {
    metric = summarizeHistogram(histogramDiff(h0, h1));
    if (metric.count !== samples.length) note = `${PROGRAMMING_METRIC} counted ${metric.count} observations over ${samples.length} changes`;
  }
  if (note) ctx.notes.add(note);
  return summarizeChanges(samples, metric, note, cpuUse);
}

async function runCase(mode: BenchMode, services: number, args: BenchArgs, ctx: Ctx): Promise<CaseResult> {
  const label = modeLabel({ mode, iptablesBackend: mode === 'nftables' ? null : mode === 'iptables-legacy' ? 'legacy' : ctx.iptablesKind });
  const r: { -readonly [K in keyof CaseResult]: CaseResult[K] } = { mode, label, services, load: [], fresh: null, lists: [], changes: null, error: null };
  say(`${label}, ${fmt(services)} Services: lab and control plane ...`);
  const lab = await openLab(ctx);
  let client: ApiClient | null = null;
  let watcher: StatusWatcher | null = null;
  let node: VNode | null = null;
  let spawned: Spawned | null = null;
  try {
    const cp = await lab.startControlPlane({ nodes: [NODE] });
    client = new ApiClient(parseKubeconfig(readFileSync((await cp.localAccess()).kubeconfig, 'utf8')), { maxSockets: args.loadConcurrency });
    r.load = await load(client, services, args.loadConcurrency);
    const legacyPath = mode === 'iptables-legacy' ? { agentEnv: { PATH: `${join(ctx.work, 'bin')}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` } } : {};
    node = await lab.addNode(NODE, {
      clusterCIDR: CLUSTER_CIDR,
      config: { proxyMode: mode === 'nftables' ? 'nftables' : 'iptables', proxyMinSyncMs: args.minSyncMs, logLevel: 'debug' },
      ...legacyPath,
      ...(args.cpuProf && services === args.services ? { agentNodeArgs: ['--cpu-prof', '--cpu-prof-dir', join(args.cpuProf, mode)] } : {}),
    });
    watcher = new StatusWatcher(node.runDir).start();
    say(`  starting a fresh agent in ${node.ns}`);
    const f = await freshAgent(lab, node, watcher, services, args);
    r.fresh = f.fresh;
    spawned = f.spawned;
    try {
      r.lists = await listProbe(lab, node);
    } catch (e) {
      ctx.notes.add(`list probe (${label}, ${fmt(services)}): ${errText(e)}`);
    }
    r.changes = await changes(lab, node, client, watcher, services, args, ctx);
    const ch = r.changes;
    say(`  ${ch.samples.length} changes: ack → applied p50 ${ch.ackToAppliedMs.p50.toFixed(1)} ms, p99 ${ch.ackToAppliedMs.p99.toFixed(1)} ms, max ${ch.ackToAppliedMs.max.toFixed(1)} ms; ` +
      `agent sync p50 ${ch.syncMs.p50.toFixed(1)} ms${ch.metric ? `; metric count ${ch.metric.count}, mean ${(ch.metric.mean * 1000).toFixed(1)} ms` : ''}`);
  } catch (e) {
    r.error = errText(e);
    say(`  ERROR: ${r.error}`);
  } finally {
    watcher?.stop();
    client?.close();
    if (node && spawned && r.fresh) {
      try {
        await node.stopAgent('SIGTERM'); // its watches end: the server logs them
        await sleep(300);
        r.fresh = withPhases(lab, node, r.fresh, spawned);
      } catch (e) {
        ctx.notes.add(`phases (${label}, ${fmt(services)}): ${errText(e)}`);
      }
    }
    if (r.error && node) {
      // Say why, when the agent knows: a sync that never succeeds shows up as a timeout here.
      const f = failedSyncs(readLog(node.logFile), 0);
      if (f.count) r.error += `; the agent's log: ${f.count} sync attempt${f.count > 1 ? 's' : ''} failed, the first with: ${f.firstError ?? '(no message)'}`;
    }
    if (args.keepLogs) keepLogs(lab, node, join(args.keepLogs, `${mode}-${services}`));
    await lab.destroy();
    ctx.labs.delete(lab);
  }
  return r;
}

/** A new lab, known to the SIGINT handler from the moment it exists. @throws when interrupted */
async function openLab(ctx: Ctx): Promise<Lab> {
  if (ctx.interrupted) throw new Error('interrupted');
  ctx.creating = newLab('pg');
  const lab = await ctx.creating.finally(() => (ctx.creating = null));
  ctx.labs.add(lab);
  if (ctx.interrupted) throw new Error('interrupted'); // the handler destroys it
  return lab;
}

/** Copies the case's logs out of its lab (which destroy() removes). */
function keepLogs(lab: Lab, node: VNode | null, dir: string): void {
  mkdirSync(dir, { recursive: true });
  const files: [string, string][] = [[`${lab.runRoot}/control-plane.log`, 'control-plane.log'], [`${lab.runRoot}/control-plane.stderr`, 'control-plane.stderr']];
  if (node) files.push([node.logFile, 'agent.log'], [`${node.dir}/agent.stderr`, 'agent.stderr']);
  for (const [from, to] of files) {
    try {
      copyFileSync(from, join(dir, to));
    } catch {
      /* not written */
    }
  }
  say(`  logs kept in ${dir}`);
}

// ---- main ----

async function main(): Promise<number> {
  const args = benchArgs(parseBenchArgs);
  if (args === 2) return 2;
  if (!isRoot('bench:programming', 'it builds network namespaces and runs agents in them')) return 2;
  const started = performance.now();
  const work = mkdtempSync('/tmp/nn-bench-programming-');
  mkdirSync(join(work, 'bin'));
  symlinkSync('/usr/sbin/iptables-legacy', join(work, 'bin', 'iptables'));
  const iptables = firstLine(['iptables', '-V']);
  const ctx: Ctx = { labs: new Set(), creating: null, interrupted: false, work, notes: new Set(), iptablesKind: /nf_tables/.test(iptables) ? 'nft' : 'legacy' };
  // `on`, not `once`, and kept until the end: execa's signal-exit re-raises a signal that has no other
  // listener, which would kill this process before the labs are gone.
  const onSignal = (sig: NodeJS.Signals) => {
    if (ctx.interrupted) return;
    ctx.interrupted = true;
    say(`${sig}: removing the lab and ${work}`);
    void (async () => {
      const made = ctx.creating ? await ctx.creating.catch(() => null) : null;
      for (const lab of new Set([...ctx.labs, ...(made ? [made] : [])])) await lab.destroy().catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    })().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const loadavgBefore = loadavg();
    const startup = startupFloor();
    say(`start-up floor: node -e 0 ${fmt(startup.nodeMs)} ms, loading dist/nodenet.js ${fmt(startup.bundleMs)} ms, importing @kubernetes/client-node ${fmt(startup.clientNodeMs)} ms`);
    const cases: CaseResult[] = [];
    try {
      for (const mode of args.modes) {
        for (const n of [...(args.small ? [args.small] : []), args.services]) if (!ctx.interrupted) cases.push(await runCase(mode, n, args, ctx));
      }
    } catch (e) {
      if (!ctx.interrupted) throw e;
    }
    // Interrupted: the handler is removing the labs and exits the process; wait for it here, not in `finally`.
    if (ctx.interrupted) await new Promise<never>(() => undefined);
    const dirty = firstLine(['git', 'status', '--porcelain']) === '' ? '' : ' (with uncommitted changes)';
    const meta: Meta = {
      ...machineMeta(loadavgBefore),
      nft: firstLine(['nft', '--version']), iptables, iptablesLegacy: firstLine(['iptables-legacy', '-V']), commit: `${firstLine(['git', 'rev-parse', '--short', 'HEAD'])}${dirty}`,
    };
    const result: BenchResult = { meta, args, startup, cases, notes: [...ctx.notes], totalWallMs: performance.now() - started };
    const report = formatReport(result);
    console.log(`\n${report}`);
    if (args.out) {
      mkdirSync(dirname(args.out), { recursive: true });
      writeFileSync(args.out, `${JSON.stringify({ ...result, report }, null, 2)}\n`);
      say(`results written to ${args.out}`);
    }
    return cases.some((c) => c.error) ? 1 : 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

process.exitCode = await main();
