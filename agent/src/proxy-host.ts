/**
 * proxy-host: builds one node's Service proxy from real dependencies and
 * runs it. Called by agent.ts (and by the end-to-end tests, which run it in
 * the test process against a virtual node's namespace).
 *
 * Start order:
 * 1. The node-namespace sysctls Service traffic needs (all per namespace,
 *    set in the node's namespace, never in the root one):
 *    - net.ipv4.ip_forward=1: the node routes pod and Service traffic.
 *    - net.bridge.bridge-nf-call-iptables=1: pod-to-pod Service traffic on
 *      one bridge must pass netfilter, or the reply skips the reverse NAT.
 *    - net.ipv4.conf.all.route_localnet=1: NodePorts on 127.0.0.1.
 *    - net.ipv4.conf.{all,default}.send_redirects=0: a node that routes a
 *      packet back out of the bridge it came from would send ICMP redirects,
 *      which share the per-host ICMP rate limit with REJECT replies and eat
 *      them (measured: a refused ClusterIP then timed out instead).
 * 2. The mode's backend (iptables: backend kind detected, mixing checked;
 *    nftables), the conntrack executor, the Proxier core and its sync loop.
 *    The other mode's rules of the same prefix are removed first, as
 *    kube-proxy does at start: a node switched from iptables to nftables
 *    mode must not keep DNATing through stale iptables chains.
 * 3. The source: a manifest directory when configured (a later source is
 *    the Kubernetes informers). Without a source nothing is ever applied:
 *    the Proxier waits for the initial lists.
 *
 * After every successful sync and every source scan the host writes a
 * status file (`proxy-status.json` in the run dir): the applied Services and
 * endpoints, the last sync's stats, and the rejected objects with their
 * fields. Tests and `nodenet` commands read it; the kernel rules stay the
 * source of truth.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Runner } from './exec/runner.js';
import { F } from './log/fields.js';
import type { Logger } from './log/log.js';
import { parseIPv4, type Cidr, type IPv4 } from './net/ip.js';
import { ConntrackExecutor } from './netfilter/conntrack.js';
import { createIptables, detectBackend, ExecIptables } from './netfilter/iptables.js';
import { NftExecutor } from './netfilter/nft.js';
import { realClock } from './reconcile/clock.js';
import { IptablesBackend } from './proxy/iptables/proxier.js';
import { isOwnedChain } from './proxy/iptables/chains.js';
import { NftablesBackend } from './proxy/nftables/proxier.js';
import { tableName } from './proxy/nftables/names.js';
import { Proxier } from './proxy/proxier.js';
import { endpointString, type ProxyBackend, type ProxyNodeConfig, type ProxySnapshot } from './proxy/types.js';
import { ManifestSource } from './watch/manifest-source.js';

export const NODE_SYSCTLS: readonly (readonly [string, string])[] = [
  ['net.ipv4.ip_forward', '1'],
  ['net.bridge.bridge-nf-call-iptables', '1'],
  ['net.ipv4.conf.all.route_localnet', '1'],
  ['net.ipv4.conf.all.send_redirects', '0'],
  ['net.ipv4.conf.default.send_redirects', '0'],
];

export interface ProxyHostOptions {
  readonly mode: 'iptables' | 'nftables';
  readonly nodeName: string;
  readonly clusterCIDR: Cidr | null;
  /** Chain / table prefix: 'KUBE' gives kube-proxy's names. */
  readonly prefix: string;
  /** The node's addresses; detected from the namespace (global-scope IPv4) when absent. */
  readonly nodeIPs?: readonly IPv4[];
  /** Run every command in this network namespace (a path); the process's own when absent. */
  readonly netns?: string;
  readonly runner: Runner;
  readonly log: Logger;
  /** A directory of Service / EndpointSlice manifests to follow; no source when null. */
  readonly manifestsDir: string | null;
  /** Where to write the status file; none when null. */
  readonly statusFile: string | null;
  readonly minSyncIntervalMs?: number;
  readonly maxSyncIntervalMs?: number;
  /** nftables mode: what a ping to a ClusterIP gets (default reject). */
  readonly clusterIPPing?: 'reject' | 'drop';
}

export interface ProxyStatus {
  readonly mode: string;
  readonly syncs: number;
  readonly ready: boolean;
  readonly lastSync: Proxier['lastSync'];
  /** spnString → endpoints ("ip:port", with "(not ready)" / "(terminating)" marks) as last applied. */
  readonly applied: Record<string, string[]>;
  readonly rejected: ReturnType<Proxier['rejected']>;
  readonly ignored: ReturnType<Proxier['ignored']>;
  readonly manifestErrors: Record<string, string>;
}

/** Where the agent writes the status in its run dir. */
export function proxyStatusFile(runDir: string): string {
  return `${runDir}/proxy-status.json`;
}

/** The status file's content, or null when it is missing or unreadable (the agent replaces it atomically). */
export function readProxyStatus(file: string): ProxyStatus | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ProxyStatus;
  } catch {
    return null;
  }
}

export interface ProxyHost {
  readonly proxier: Proxier;
  readonly backend: ProxyBackend;
  /** Stops the source and the sync loop; rules stay in place (as kube-proxy leaves them on exit). */
  stop(): Promise<void>;
  /** Removes this mode's rules (kube-proxy --cleanup). */
  cleanup(): Promise<void>;
}

async function setSysctls(runner: Runner, netns: string | undefined): Promise<void> {
  const argv = ['sysctl', '-q', '-w', ...NODE_SYSCTLS.map(([k, v]) => `${k}=${v}`)];
  await runner.run(argv, netns ? { netns } : {});
}

async function detectNodeIPs(runner: Runner, netns: string | undefined): Promise<IPv4[]> {
  const r = await runner.run(['ip', '-4', '-o', 'addr', 'show', 'scope', 'global'], netns ? { netns } : {});
  const ips: IPv4[] = [];
  for (const m of r.stdout.matchAll(/\sinet (\d+\.\d+\.\d+\.\d+)\//g)) ips.push(parseIPv4(m[1]!));
  return ips;
}

/**
 * Removes one mode's rules of `prefix` from a namespace (kube-proxy --cleanup):
 * iptables mode's chains and jumps in the backend `iptables` uses, or
 * nftables mode's table. Returns whether there was anything to remove.
 * Idempotent.
 */
export async function removeProxyRules(
  o: { readonly runner: Runner; readonly log: Logger; readonly netns?: string; readonly prefix: string },
  mode: 'iptables' | 'nftables',
): Promise<boolean> {
  const ns = o.netns ? { netns: o.netns } : {};
  const nodeConfig: ProxyNodeConfig = { nodeName: '', nodeIPs: [], clusterCIDR: null, prefix: o.prefix, masqueradeBit: 14 };
  if (mode === 'iptables') {
    // No mixing check here: stale chains are what we came to remove.
    const deps = { runner: o.runner, log: o.log, ...ns };
    const iptables = new ExecIptables(deps, await detectBackend(deps));
    const nat = await iptables.listChains('nat');
    if (![...nat].some((c) => isOwnedChain(o.prefix, c))) return false;
    await new IptablesBackend({ iptables, nodeConfig, log: o.log }).cleanup();
    return true;
  }
  const nft = new NftExecutor({ runner: o.runner, ...ns });
  if (!(await nft.tableExists('ip', tableName(o.prefix)))) return false;
  await new NftablesBackend({ nft, nodeConfig, log: o.log }).cleanup();
  return true;
}

/** Removes the rules the other mode left (a previous run in that mode). Failures are logged: they must not stop the proxy. */
async function cleanupOtherMode(o: ProxyHostOptions, log: Logger): Promise<void> {
  const other = o.mode === 'iptables' ? 'nftables' : 'iptables';
  try {
    if (await removeProxyRules({ runner: o.runner, log, prefix: o.prefix, ...(o.netns ? { netns: o.netns } : {}) }, other)) {
      log.info(`removed the ${other}-mode rules a previous run left`);
    }
  } catch (err) {
    log.warn({ [F.err]: err }, `could not remove the ${other}-mode rules a previous run left`);
  }
}

function describeApplied(s: ProxySnapshot | null): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!s) return out;
  for (const name of [...s.services.keys()].sort()) {
    out[name] = (s.endpoints.get(name) ?? []).map((e) => `${endpointString(e)}${e.terminating ? ' (terminating)' : e.ready ? '' : ' (not ready)'}`).sort();
  }
  return out;
}

export async function startProxyHost(o: ProxyHostOptions): Promise<ProxyHost> {
  const log = o.log.child({ [F.subsys]: 'proxy-host', [F.mode]: o.mode });
  const ns = o.netns;
  await setSysctls(o.runner, ns);
  const nodeIPs = o.nodeIPs ?? (await detectNodeIPs(o.runner, ns));
  const nodeConfig: ProxyNodeConfig = { nodeName: o.nodeName, nodeIPs, clusterCIDR: o.clusterCIDR, prefix: o.prefix, masqueradeBit: 14 };
  await cleanupOtherMode(o, log);
  const backend: ProxyBackend =
    o.mode === 'iptables'
      ? new IptablesBackend({ iptables: await createIptables({ runner: o.runner, log, prefix: o.prefix, ...(ns ? { netns: ns } : {}) }), nodeConfig, log })
      : new NftablesBackend({
          nft: new NftExecutor({ runner: o.runner, ...(ns ? { netns: ns } : {}) }),
          nodeConfig,
          log,
          ...(o.clusterIPPing ? { options: { clusterIPPing: o.clusterIPPing } } : {}),
        });

  let source: ManifestSource | null = null;
  let applied: ProxySnapshot | null = null;
  const writeStatus = (): void => {
    if (!o.statusFile) return;
    const status: ProxyStatus = {
      mode: o.mode,
      syncs: proxier.syncCount,
      ready: proxier.ready,
      lastSync: proxier.lastSync,
      applied: describeApplied(applied),
      rejected: proxier.rejected(),
      ignored: proxier.ignored(),
      manifestErrors: Object.fromEntries(source?.errors() ?? []),
    };
    try {
      mkdirSync(dirname(o.statusFile), { recursive: true });
      writeFileSync(`${o.statusFile}.tmp`, `${JSON.stringify(status, null, 2)}\n`);
      renameSync(`${o.statusFile}.tmp`, o.statusFile);
    } catch (err) {
      log.warn({ [F.err]: err }, 'cannot write the proxy status file');
    }
  };
  const proxier = new Proxier({
    backend,
    nodeConfig,
    conntrack: new ConntrackExecutor({ runner: o.runner, ...(ns ? { netns: ns } : {}) }),
    clock: realClock,
    log: o.log,
    minSyncIntervalMs: o.minSyncIntervalMs ?? 1000,
    maxSyncIntervalMs: o.maxSyncIntervalMs ?? 30_000,
    onSyncDone: (snap) => {
      if (snap) applied = snap;
      writeStatus();
    },
  });
  proxier.start();
  if (o.manifestsDir) {
    // Each scan may reject or admit objects: refresh the status once the scan's handlers ran.
    source = new ManifestSource({ dir: o.manifestsDir, services: proxier, slices: proxier, log: o.log, onScan: writeStatus });
    await source.start();
  } else {
    log.warn('proxy mode set but no Service source configured (manifestsDir): no rules will be applied');
  }
  writeStatus();
  log.info({ [F.count]: nodeIPs.length }, `proxy started in ${o.mode} mode, node IPs ${nodeIPs.join(', ') || '(none)'}`);
  return {
    proxier,
    backend,
    async stop() {
      source?.stop();
      proxier.stop();
      await proxier.whenIdle();
    },
    cleanup: () => backend.cleanup(),
  };
}
