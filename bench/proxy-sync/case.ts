/**
 * bench/proxy-sync/case: one case of the bench (one mode, one size), run in
 * a process of its own so its RSS is the agent's with that many Services and
 * nothing left over from a bigger case.
 *
 * In a fresh scratch namespace (nn-bps-<pid>-<mode>-<size>; nothing here
 * touches the root namespace) it drives a real Proxier with the real backend
 * and executors, as the agent does:
 *   1. feed N Services and N EndpointSlices (2 endpoints each) through the
 *      handlers, mark both sources synced, syncNow(): the full sync;
 *   2. RSS right after it (the objects stay referenced, as an informer cache
 *      holds them in the agent);
 *   3. `repeat` times: onEndpointSliceUpdate replacing one endpoint IP of one
 *      Service, syncNow(): must be a partial sync of that one Service;
 *      then the kernel is checked to hold the new endpoints, not the old ones;
 *   4. unless skipped: a new backend and Proxier (an agent restart) fed the
 *      same state, over the rules already in the kernel: a second full sync.
 *   then, in iptables modes, the restore floor: a no-op restore and an
 *      unchanged commit against the table the case built (report.ts);
 * The namespace is deleted in `finally` and on SIGINT/SIGTERM.
 *
 * Conntrack: FakeConntrack. Every Service here is TCP and conntrack cleanup
 * only ever runs for UDP, so the real executor would never be called either;
 * the case asserts the fake saw no call.
 */
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpawnRunner } from '../../agent/src/exec/runner.js';
import { createLogger, type Logger } from '../../lib/log/log.js';
import { FakeConntrack } from '../../agent/src/netfilter/conntrack/conntrack.fake.js';
import { createIptables, type ExecIptables } from '../../agent/src/netfilter/iptables/iptables.js';
import { NftExecutor } from '../../agent/src/netfilter/nft/nft.js';
import { removeNetns } from '../../agent/src/netns/scratch-netns.js';
import { realClock } from '../../lib/reconcile/clock.js';
import { IptablesBackend } from '../../agent/src/proxy/iptables/proxier.js';
import { IpvsadmExecutor } from '../../agent/src/netfilter/ipvs/ipvsadm.js';
import { composeIpvsBackend } from '../../agent/src/node/compose.js';
import { NftablesBackend } from '../../agent/src/proxy/nftables/proxier.js';
import { fullGc } from '../../agent/src/node/full-gc.js';
import { Proxier } from '../../agent/src/proxy/proxier.js';
import type { ProxyBackend, ProxyNodeConfig } from '../../agent/src/proxy/types.js';
import { CLUSTER_CIDR, nodeIP, nodeName, type JsonObject } from '../../agent/src/testing/addresses.js';
import type { CaseSpec } from './args.js';
import { BENCH_NFT_SHARDS } from '../lib/proxy-modes.js';
import { shardTableName } from '../../agent/src/proxy/nftables/names.js';
import { CappedRunner } from './capped-runner.js';
import { TimingRunner } from './timing-runner.js';
import type { CaseResult, SyncMeasure } from './report.js';
import { endpointAt, initialEndpoints, nodePortRangeFor, planChanges, service, slice, TARGET_PORT } from '../lib/services.js';

export interface CaseOptions {
  readonly repeat: number;
  readonly capS: number;
  readonly restart: boolean;
}

const NODE_CONFIG: ProxyNodeConfig = { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 };
const NFT_TABLE = 'kube-proxy';
const MiB = 1024 * 1024;

interface Mode {
  readonly backend: ProxyBackend;
  /** IPVS mode: the kernel's virtual servers, listed (ipvsadm). */
  readonly ipvs: IpvsadmExecutor | null;
  readonly ipt: ExecIptables | null;
  readonly nft: NftExecutor | null;
  /** The backend's render/apply split of its last sync (nftables only). */
  split(): { renderMs: number | null; applyMs: number | null; kernelMs: number | null };
  /** Rules (and elements) of the last sync, from the backend. */
  counts(): { rules: number | null; elements: number | null };
}

async function makeMode(spec: CaseSpec, runner: CappedRunner, netnsPath: string, log: Logger): Promise<Mode> {
  if (spec.mode === 'ipvs') {
    // As the agent composes it: genl and ipvsadm, ipset, iptables, kube-ipvs0, the sysctls, all in the namespace.
    const backend = await composeIpvsBackend({ runner, log, prefix: NODE_CONFIG.prefix, netns: netnsPath, ipvs: {} }, NODE_CONFIG);
    return {
      backend,
      ipvs: new IpvsadmExecutor({ runner: new SpawnRunner(), netns: netnsPath }),
      ipt: null,
      nft: null,
      split: () => ({ renderMs: null, applyMs: null, kernelMs: null }),
      counts: () => ({ rules: backend.lastSync ? backend.lastSync.virtualServers + backend.lastSync.realServers : null, elements: null }),
    };
  }
  if (spec.mode === 'nftables' || spec.mode === 'nftables-sharded') {
    const nft = new NftExecutor({ runner, netns: netnsPath });
    const backend = new NftablesBackend({ nft, nodeConfig: NODE_CONFIG, log, options: { shards: spec.mode === 'nftables-sharded' ? BENCH_NFT_SHARDS : 1 } });
    return {
      backend,
      ipvs: null,
      ipt: null,
      nft,
      split: () => ({ renderMs: backend.lastSync?.renderMs ?? null, applyMs: backend.lastSync?.applyMs ?? null, kernelMs: backend.lastSync?.kernelMs ?? null }),
      counts: () => ({ rules: backend.lastSync?.ruleCount ?? null, elements: backend.lastSync?.elementCount ?? null }),
    };
  }
  const ipt = await createIptables({ runner, log, netns: netnsPath, prefix: NODE_CONFIG.prefix, ...(spec.mode === 'iptables-legacy' ? { iptablesCmd: 'iptables-legacy' } : {}) });
  const backend = new IptablesBackend({ iptables: ipt, nodeConfig: NODE_CONFIG, log });
  return {
    backend,
    ipvs: null,
    ipt,
    nft: null,
    split: () => ({ renderMs: null, applyMs: null, kernelMs: null }),
    counts: () => ({ rules: backend.lastSync?.ruleCount ?? null, elements: null }),
  };
}

function makeProxier(backend: ProxyBackend, services: number, log: Logger): Proxier {
  return new Proxier({
    backend,
    nodeConfig: NODE_CONFIG,
    conntrack,
    clock: realClock,
    log,
    minSyncIntervalMs: 1000,
    maxSyncIntervalMs: 3_600_000,
    nodePortRange: nodePortRangeFor(services),
  });
}

const conntrack = new FakeConntrack();

/** Runs one sync and measures it; `before` runs first inside the timed span (the event that triggers it). */
async function timedSync(proxier: Proxier, mode: Mode, timing: TimingRunner, before: () => void = () => {}): Promise<SyncMeasure> {
  timing.take();
  const t0 = performance.now();
  before();
  await proxier.syncNow();
  const wallMs = performance.now() - t0;
  const s = proxier.lastSync;
  const split = mode.split();
  return {
    ok: s?.ok ?? false,
    wallMs,
    durationMs: s?.durationMs ?? null,
    scope: s?.scope ?? null,
    changedServices: s && s.scope === 'partial' ? s.changedServices : null,
    renderMs: s?.ok ? split.renderMs : null,
    applyMs: s?.ok ? split.applyMs : null,
    kernelMs: s?.ok ? split.kernelMs : null,
    commands: timing.take(),
    error: s ? s.error : 'no sync ran',
  };
}

function feed(proxier: Proxier, services: readonly JsonObject[], slices: readonly JsonObject[]): number {
  const t0 = performance.now();
  for (const s of services) proxier.onServiceAdd(s);
  for (const s of slices) proxier.onEndpointSliceAdd(s);
  proxier.onServicesSynced();
  proxier.onEndpointSlicesSynced();
  return performance.now() - t0;
}

/** Per-endpoint chain names the kernel holds now (KUBE-SEP-* / nft endpoint-*; IPVS: the ClusterIPs' real servers, "ip/port"). */
async function kernelEndpointChains(mode: Mode): Promise<string[]> {
  if (mode.ipvs) {
    const vss = await mode.ipvs.list();
    return vss.filter((v) => v.address !== nodeIP(1)).flatMap((v) => v.dests.map((d) => `${d.address}/${d.port}`));
  }
  if (mode.ipt) return [...(await mode.ipt.listChains('nat'))].filter((c) => c.startsWith('KUBE-SEP-'));
  const tables = [NFT_TABLE, ...Array.from({ length: BENCH_NFT_SHARDS }, (_, i) => shardTableName(NODE_CONFIG.prefix, i))];
  const names = await mode.nft!.listNamesMany('ip', tables);
  return [...names.values()].flatMap((n) => (n?.chains ?? []).filter((c) => c.startsWith('endpoint-')));
}

/** Whether the kernel's rules send traffic to ip:TARGET_PORT. */
async function kernelHasEndpoint(mode: Mode, ip: string, iptNat: string | null, nftChains: readonly string[]): Promise<boolean> {
  if (mode.ipt) return (iptNat ?? '').includes(`--to-destination ${ip}:${TARGET_PORT}`);
  if (mode.ipvs) return nftChains.includes(`${ip}/${TARGET_PORT}`);
  return nftChains.some((c) => c.endsWith(`__${ip}/${TARGET_PORT}`));
}

/**
 * The kernel's floor for the table this case built (iptables modes): a restore that reads the nat
 * table and commits nothing, and one that commits it unchanged (-F of the empty canary chain), each
 * the best of three. With iptables-legacy no sync can cost less than the second.
 */
async function restoreFloor(ipt: ExecIptables): Promise<{ noopMs: number; replaceMs: number }> {
  const best = async (text: string): Promise<number> => {
    let min = Infinity;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await ipt.restore(text, { noflush: true });
      min = Math.min(min, performance.now() - t0);
    }
    return min;
  };
  return { noopMs: await best('*nat\nCOMMIT\n'), replaceMs: await best(`*nat\n-F ${NODE_CONFIG.prefix}-PROXY-CANARY\nCOMMIT\n`) };
}

function rss(): { rssMiB: number; heapUsedMiB: number } {
  const m = process.memoryUsage();
  return { rssMiB: m.rss / MiB, heapUsedMiB: m.heapUsed / MiB };
}

/** Runs the case; never throws (errors go into the result). The namespace is always removed. */
export async function runCase(spec: CaseSpec, opts: CaseOptions): Promise<CaseResult> {
  const rssBaselineMiB = rss().rssMiB;
  const log = createLogger({ level: 'warn', name: `bench-${spec.mode}-${spec.services}` });
  const cleanup = (): void => removeNetns(spec.netns);
  const onSignal = (sig: NodeJS.Signals): void => {
    cleanup();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const timing = new TimingRunner(new SpawnRunner());
  const runner = new CappedRunner(timing, Date.now() + opts.capS * 1000);
  let r: {
    -readonly [K in keyof CaseResult]: CaseResult[K];
  } = {
    mode: spec.mode,
    services: spec.services,
    netns: spec.netns,
    iptablesBackend: null,
    feedMs: 0,
    full: null,
    rules: null,
    elements: null,
    kernelEndpointChains: null,
    rssBaselineMiB,
    rssMiB: null,
    rssAfterGcMiB: null,
    heapUsedMiB: null,
    changes: [],
    restoreFloor: null,
    restart: null,
    restartSkipped: null,
    capped: false,
    error: null,
  };
  const fail = (msg: string): CaseResult => {
    const capped = r.capped || runner.expired;
    return { ...r, capped, error: capped ? `stopped at the ${opts.capS} s cap (--cap-s): ${msg}` : msg };
  };
  try {
    execFileSync('ip', ['netns', 'add', spec.netns]);
    execFileSync('ip', ['-n', spec.netns, 'link', 'set', 'lo', 'up']);
    // IPVS mode serves NodePorts on the node's addresses as it reads them (kube-proxy's): give it one.
    if (spec.mode === 'ipvs') execFileSync('ip', ['-n', spec.netns, 'addr', 'add', `${nodeIP(1)}/32`, 'dev', 'lo']);
    const netnsPath = `/run/netns/${spec.netns}`;

    const n = spec.services;
    const services = Array.from({ length: n }, (_, i) => service(i + 1));
    const endpoints = Array.from({ length: n }, (_, i) => initialEndpoints(i + 1));
    const slices = endpoints.map((e, i) => slice(i + 1, e));
    const changes = planChanges(n, opts.repeat);

    let mode = await makeMode(spec, runner, netnsPath, log);
    r.iptablesBackend = mode.ipt?.backend ?? null;
    let proxier: Proxier | null = makeProxier(mode.backend, n, log);

    // 1. full sync
    r.feedMs = feed(proxier, services, slices);
    r.full = await timedSync(proxier, mode, timing);
    if (!r.full.ok) return fail(`full sync failed: ${r.full.error}`);
    if (r.full.scope !== 'full') return fail(`expected a full sync, got ${r.full.scope}`);
    Object.assign(r, rss(), mode.counts());
    // The agent collects after a large full sync (proxy-host afterLargeFullSync); V8 frees large backing stores a moment later.
    fullGc();
    await sleep(1000);
    r.rssAfterGcMiB = rss().rssMiB;
    const chains = await kernelEndpointChains(mode);
    r.kernelEndpointChains = chains.length;
    if (chains.length !== 2 * n) return fail(`the kernel holds ${chains.length} endpoint chains after the full sync, expected ${2 * n}`);

    // 2. one-endpoint changes
    const measures: SyncMeasure[] = [];
    for (const c of changes) {
      const i = c.service - 1;
      const prev = slices[i]!;
      const eps = [...endpoints[i]!];
      eps[c.slot] = c.newEndpoint;
      const cur = slice(c.service, eps);
      const m = await timedSync(proxier, mode, timing, () => proxier!.onEndpointSliceUpdate(prev, cur));
      const partialOk = m.scope === 'partial' && m.changedServices === 1;
      measures.push(m.ok && !partialOk ? { ...m, ok: false, error: `expected a partial sync of 1 Service, got ${m.scope} (${m.changedServices ?? '-'} Services)` } : m);
      r.changes = [...measures];
      if (!measures.at(-1)!.ok) return fail(`one-endpoint change ${measures.length} failed: ${measures.at(-1)!.error}`);
      slices[i] = cur;
      endpoints[i] = eps;
    }
    // The kernel must now send traffic to every new endpoint and to none of the replaced ones.
    const nat = mode.ipt ? await mode.ipt.save('nat') : null;
    const after = await kernelEndpointChains(mode);
    if (after.length !== 2 * n) return fail(`the kernel holds ${after.length} endpoint chains after the changes, expected ${2 * n}`);
    for (const c of changes) {
      const added = endpointAt(c.newEndpoint).ip;
      const removed = endpointAt(initialEndpoints(c.service)[c.slot]!).ip;
      if (!(await kernelHasEndpoint(mode, added, nat, after))) return fail(`after the changes the kernel has no rule to the new endpoint ${added}`);
      if (await kernelHasEndpoint(mode, removed, nat, after)) return fail(`after the changes the kernel still sends to the replaced endpoint ${removed}`);
    }
    if (conntrack.calls.length) return fail(`conntrack was called ${conntrack.calls.length} times for TCP-only Services`);
    if (mode.ipt) r.restoreFloor = await restoreFloor(mode.ipt);

    // 3. restart: a new backend and Proxier over the rules in the kernel
    const left = runner.deadline - Date.now();
    const needed = r.full.wallMs * 1.5 + 5000;
    if (!opts.restart) r.restartSkipped = '--no-restart';
    else if (left < needed) r.restartSkipped = `${Math.round(left / 1000)} s left of the cap, the first full sync took ${Math.round(r.full.wallMs / 1000)} s`;
    else {
      proxier.stop();
      proxier = null;
      mode = await makeMode(spec, runner, netnsPath, log);
      const again = makeProxier(mode.backend, n, log);
      feed(again, services, slices);
      r.restart = await timedSync(again, mode, timing);
      if (!r.restart.ok) return fail(`restart full sync failed: ${r.restart.error}`);
      const c2 = await kernelEndpointChains(mode);
      if (c2.length !== 2 * n) return fail(`the kernel holds ${c2.length} endpoint chains after the restart sync, expected ${2 * n}`);
    }
    r = { ...r, capped: runner.expired };
    return r;
  } catch (e) {
    return fail(e instanceof Error ? e.message : String(e));
  } finally {
    cleanup();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
