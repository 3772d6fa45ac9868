/**
 * bench/lookup/case: one (mode, N) case of the rule-lookup benchmark, on a
 * lab of one virtual node (lab/lab.ts: a network namespace with its own
 * agent process, pods wired to its cbr0 by the real CNI shim).
 *
 *   1. N Services (2 endpoints each: the two server pods, at the addresses
 *      the IPAM will give them) are written as manifests; a fresh agent
 *      starts and programs them all: its full sync time (the proxier's own
 *      figure) and then its RSS;
 *   2. the client pod and two server pods (nodenet-bench-tcp serve 8080) are
 *      made through CNI (if their addresses are not the ones foreseen, the
 *      manifests are rewritten and the agent follows);
 *   3. one-endpoint changes, each to one Service in the middle of the list:
 *      the partial sync's time;
 *   4. the data path, from the client pod: new connections to the Service
 *      the kernel matches first and to the one it matches last (iptables: the
 *      first and last KUBE-SERVICES jump as iptables-save lists them; in the
 *      hashed modes the lowest and highest ClusterIP), then one established
 *      connection's round trip through the last one.
 * Conntrack: nf_conntrack_max is global on these kernels (read-only inside a
 * namespace), so instead the node namespace's timeout for closed TCP
 * connections (the client ends each with an RST) is shortened to 1 s, and
 * the count is bounded: the table never fills. Nothing here touches the root
 * namespace; the lab is destroyed in `finally`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Runner } from '../../agent/src/exec/runner.js';
import { Lab, uniqueTag, type VNode } from '../../agent/src/lab/lab.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../../agent/src/node/proxy-status.js';
import { distDir } from '../../agent/src/config/paths.js';
import { clusterIP } from '../../agent/src/testing/addresses.js';
import { timeScale } from '../../agent/src/testing/wait.js';
import type { LookupMode } from './modes.js';
import { kubeServicesOrder, parseClientOutput, type ClientRun } from './parse.js';
import { changeTargets, chunk, fileName, fileOf, manifestFiles, SERVICE_PORT, type Endpoints } from './workload.js';


export interface ClientLimits {
  readonly count: number;
  readonly seconds: number;
  readonly warmup: number;
  readonly rtt: number;
  readonly connectTimeoutMs: number;
}

export interface CaseOptions extends ClientLimits {
  readonly changes: number;
  /** Where `iptables` is iptables-legacy, for the iptables-legacy mode (a PATH directory). */
  readonly legacyBin: string | null;
  readonly runner: Runner;
  readonly progress: (step: string) => void;
}

export interface TargetRun {
  /** 'first' or 'last' in the kernel's lookup order. */
  readonly position: 'first' | 'last';
  readonly clusterIP: string;
  /** 1-based index of the Service in that order (N for the last). */
  readonly rank: number;
  readonly run: ClientRun;
}

export interface CaseResult {
  readonly mode: LookupMode;
  readonly services: number;
  readonly fullSyncMs: number | null;
  /** From the agent's start to its first full sync done (reading the manifests included). */
  readonly agentReadyMs: number | null;
  readonly rules: number | null;
  readonly changeSyncMs: readonly number[];
  /** The agent's RSS as its status reports the full sync (before the collection it runs after a large one). */
  readonly rssMiB: number | null;
  /** Its RSS at the end of the case, after the changes and the data path: what it holds (absent in older results). */
  readonly rssHeldMiB?: number | null;
  /** How the first and last Services were found. */
  readonly order: string | null;
  readonly targets: readonly TargetRun[];
  readonly conntrackMax: number | null;
  readonly error: string | null;
}

const MiB = 1024 * 1024;
export const benchTcpPath = (): string => `${distDir()}nodenet-bench-tcp`;

function proxyMode(m: LookupMode): string {
  return m === 'iptables-legacy' ? 'iptables' : m;
}

function rssOf(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? (Number(m[1]) * 1024) / MiB : null;
  } catch {
    return null;
  }
}

async function waitStatus(node: VNode, what: string, cond: (s: ProxyStatus) => boolean, timeoutMs: number): Promise<ProxyStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!node.agent) throw new Error(`the agent exited while waiting for ${what}: ${node.agentStderr()}`);
    let s: ProxyStatus | null = null;
    try { s = readProxyStatus(proxyStatusFile(node.runDir)); } catch { /* being rewritten */ }
    if (s && cond(s)) return s;
    if (s?.lastSync && !s.lastSync.ok) throw new Error(`a sync failed while waiting for ${what}: ${s.lastSync.error}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(100);
  }
}

function writeAtomic(dir: string, name: string, text: string): void {
  writeFileSync(`${dir}/.${name}.tmp`, text);
  renameSync(`${dir}/.${name}.tmp`, `${dir}/${name}`);
}

/** Runs the case; never throws (an error goes into the result). The lab is always destroyed. */
export async function runCase(mode: LookupMode, services: number, o: CaseOptions): Promise<CaseResult> {
  const r: { -readonly [K in keyof CaseResult]: CaseResult[K] } = {
    mode, services, fullSyncMs: null, agentReadyMs: null, rules: null, changeSyncMs: [], rssMiB: null, rssHeldMiB: null, order: null, targets: [], conntrackMax: null, error: null,
  };
  const scale = timeScale();
  const syncLimitMs = (120_000 + services * 20) * scale;
  let lab: Lab | null = null;
  const servers: ChildProcess[] = [];
  try {
    o.progress('lab');
    lab = await Lab.create(uniqueTag('lk'), { runner: o.runner });
    const manifests = `${lab.runRoot}/manifests`;
    mkdirSync(manifests, { recursive: true });
    const node = await lab.addNode('n1', {
      podCIDR: '10.244.1.0/24',
      clusterCIDR: '10.244.0.0/16',
      config: { proxyMode: proxyMode(mode), manifestsDir: manifests, proxyMinSyncMs: 100, proxySyncPeriodMs: 3_600_000, serviceCIDR: '10.96.0.0/12', logLevel: 'info' },
      ...(mode === 'iptables-legacy' && o.legacyBin ? { agentEnv: { PATH: `${o.legacyBin}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` } } : {}),
    });
    // The pods' addresses as the IPAM will give them (the first free ones after the gateway, in order), so the
    // manifests exist before the agent's first start and its first sync is the fresh full sync measured (one agent
    // start per case: under qemu TCG each costs half a minute). Checked once the pods exist; rewritten if not so.
    let eps: Endpoints = { a: '10.244.1.3', b: '10.244.1.4' };
    await node.exec(['sysctl', '-q', '-w', 'net.netfilter.nf_conntrack_tcp_timeout_close=1'], true);
    o.progress('full sync');
    for (const [name, text] of manifestFiles(services, eps)) writeAtomic(manifests, name, text);
    const t0 = performance.now();
    await node.startAgent();
    const full = await waitStatus(node, `the full sync of ${services} Services`, (s) => s.lastSync?.scope === 'full' && s.lastSync.ok && Object.keys(s.applied).length >= services, syncLimitMs);
    r.agentReadyMs = performance.now() - t0;
    r.fullSyncMs = full.lastSync!.durationMs;
    r.rules = full.lastSync!.ruleCount;
    r.rssMiB = node.agentPid ? rssOf(node.agentPid) : null;

    o.progress('pods');
    const pods: { ns: string; ip: string }[] = [];
    for (const name of ['client', 'srv-a', 'srv-b']) {
      const ns = await lab.addNetns(name);
      // As a runtime does: the shim's deadline stretched with the rest under emulation, and an ADD answered with
      // code 11 (try again later) retried; the agent's ADD is idempotent for the same container and interface.
      const conf = node.cniConfig({ agentTimeoutMs: Math.round(30_000 * scale) });
      let res = await node.cni('ADD', { containerId: `lk-${name}`, netns: ns.path, ifName: 'eth0' }, conf);
      for (let attempt = 1; attempt < 3 && res.exitCode !== 0 && (res.json as { code?: number } | null)?.code === 11; attempt++) {
        o.progress(`pods (CNI ADD ${name} again: ${(res.json as { msg?: string }).msg})`);
        res = await node.cni('ADD', { containerId: `lk-${name}`, netns: ns.path, ifName: 'eth0' }, conf);
      }
      if (res.exitCode !== 0) throw new Error(`CNI ADD ${name}: ${res.stdout}${res.stderr}`);
      pods.push({ ns: ns.name, ip: (res.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! });
    }
    const [client, a, b] = pods as [{ ns: string; ip: string }, { ns: string; ip: string }, { ns: string; ip: string }];
    for (const p of [a, b]) servers.push(spawn('ip', ['netns', 'exec', p.ns, benchTcpPath(), 'serve', '8080'], { stdio: 'ignore' }));
    let syncs = (await waitStatus(node, 'the status', () => true, 10_000 * scale)).syncs;
    if (a.ip !== eps.a || b.ip !== eps.b) {
      eps = { a: a.ip, b: b.ip };
      for (const [name, text] of manifestFiles(services, eps)) writeAtomic(manifests, name, text);
      const s = await waitStatus(node, 'the sync of the pods\' real addresses', (x) => x.syncs > syncs && x.lastSync?.ok === true && (x.applied[`lookup/lk-${services}`]?.[0] ?? '').startsWith(`${eps.a}:`), syncLimitMs);
      syncs = s.syncs;
    }
    const max = await node.exec(['sysctl', '-n', 'net.netfilter.nf_conntrack_max'], true);
    r.conntrackMax = max.exitCode === 0 ? Number(max.stdout.trim()) : null;

    o.progress('one-endpoint changes');
    const override = new Map<number, readonly string[]>();
    let k = 0;
    for (const n of changeTargets(services, o.changes)) {
      override.set(n, [eps.a, `10.244.1.${200 + (k++ % 50)}`]);
      writeAtomic(manifests, fileName(fileOf(n)), chunk(fileOf(n), services, eps, override));
      const s = await waitStatus(node, `the sync of a one-endpoint change to Service ${n}`, (x) => x.syncs > syncs && x.lastSync?.ok === true, 60_000 * scale);
      syncs = s.syncs;
      if (s.lastSync!.scope !== 'partial') throw new Error(`a one-endpoint change gave a ${s.lastSync!.scope} sync, expected a partial one`);
      r.changeSyncMs = [...r.changeSyncMs, s.lastSync!.durationMs];
    }

    o.progress('data path');
    let first: { ip: string; rank: number } = { ip: clusterIP(1), rank: 1 };
    let last: { ip: string; rank: number } = { ip: clusterIP(services), rank: services };
    r.order = 'ClusterIP order (a hashed lookup: position does not matter)';
    if (mode === 'iptables' || mode === 'iptables-legacy') {
      const save = await node.exec([mode === 'iptables-legacy' ? 'iptables-legacy-save' : 'iptables-save', '-t', 'nat']);
      const order = kubeServicesOrder(save.stdout);
      if (order.length < services) throw new Error(`KUBE-SERVICES holds ${order.length} Service jumps, expected ${services}`);
      first = { ip: order[0]!, rank: 1 };
      last = { ip: order.at(-1)!, rank: order.length };
      r.order = `KUBE-SERVICES rule order (${order.length} jumps)`;
    }
    for (const [position, t] of [['first', first], ['last', last]] as const) {
      const out = await o.runner.run(['ip', 'netns', 'exec', client.ns, benchTcpPath(), 'connect', t.ip, String(SERVICE_PORT), String(o.count), String(o.seconds),
        String(o.warmup), String(position === 'last' ? o.rtt : 0), String(o.connectTimeoutMs)], { allowFailure: true });
      if (out.exitCode !== 0) throw new Error(`the client to ${t.ip} exited ${out.exitCode}: ${out.stderr.slice(-300)}`);
      const run = parseClientOutput(out.stdout);
      if (run.connect.count === 0) throw new Error(`no connection to ${position} Service ${t.ip}:${SERVICE_PORT} succeeded (errno ${run.firstErrno})`);
      r.targets = [...r.targets, { position, clusterIP: t.ip, rank: t.rank, run }];
    }
    r.rssHeldMiB = node.agentPid ? rssOf(node.agentPid) : null;
    return r;
  } catch (e) {
    return { ...r, error: e instanceof Error ? e.message : String(e) };
  } finally {
    for (const s of servers) s.kill('SIGKILL');
    await lab?.destroy().catch(() => undefined);
  }
}
