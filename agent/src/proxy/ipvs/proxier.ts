/**
 * proxy/ipvs/proxier: the IPVS mode's ProxyBackend.
 *
 * Each sync plans the whole desired state (plan.ts, pure, O(Services)),
 * then applies only the difference, in this order:
 *   1. ipsets: one `ipset restore -exist` batch with the sets' member
 *      changes (the iptables rules below reference the sets, so they exist
 *      first);
 *   2. iptables: the set-matching rules (render.ts) in one
 *      iptables-restore --noflush, only when their text changed (or on a
 *      full sync, which also checks the jumps from the built-in chains);
 *   3. kube-ipvs0: the new VIPs added as /32;
 *   4. IPVS: one batch of virtual/real server ops (diff.ts), with the
 *      graceful termination of real servers that left (drained at weight 0,
 *      deleted when their connections are gone);
 *   5. kube-ipvs0: the VIPs no Service has any more removed.
 * A full sync diffs against the kernel (sets, addresses and the whole IPVS
 * table listed); a partial one against the record of what this instance
 * applied, for the changed Services' virtual services and those holding
 * draining real servers only, whose real servers are listed again (their
 * connection counters decide). Any failure drops the record, so the next sync is full.
 *
 * On the first sync it sets the mode's sysctls in the node's namespace
 * (plan.ts ipvsSysctls) and makes kube-ipvs0. The periodic canary check
 * also finishes draining: servers whose connections ended meanwhile are
 * deleted then, as kube-proxy's graceful termination manager does on its
 * own timer.
 *
 * Assumes one sync at a time (the bounded runner serialises them).
 */
import { asNodenetError, ErrorCode, LinkNotFoundError, NodenetError } from '../../../../lib/errors/errors.js';
import { F } from '../../../../lib/log/fields.js';
import type { Logger } from '../../../../lib/log/log.js';
import type { Ipset } from '../../netfilter/iptables/ipset.js';
import type { IpsetState } from '../../netfilter/iptables/ipset-parse.js';
import type { Iptables } from '../../netfilter/iptables/iptables-types.js';
import { vsKey, type Ipvs, type IpvsOp, type VirtualServer, type VirtualServerState, type VsKey } from '../../netfilter/ipvs/ipvs-types.js';
import type { NetlinkOps } from '../../netlink/ops.js';
import type { Sysctl } from '../../netns/sysctl.js';
import type { ProxyBackend, ProxyNodeConfig, ProxySnapshot, SyncScope } from '../types.js';
import { diffAddresses, diffIpvs, diffSets, type DrainingServer } from './diff.js';
import { DUMMY_DEVICE, ipvsNames, isOurSet, type IpvsNames } from './names.js';
import type { IPv4 } from '../../../../lib/net/ip.js';
import { ipvsSysctls, planIpvs, planIpvsPartial, type IpvsOptions, type IpvsPlan, type IpvsPlanDelta } from './plan.js';
import { ipvsBuiltinJumps, ipvsOwnedChains, renderIpvsIptables } from './render.js';

export interface IpvsBackendDeps {
  readonly ipvs: Ipvs;
  readonly ipset: Ipset;
  readonly iptables: Iptables;
  readonly netlink: Pick<NetlinkOps, 'ensureDummy' | 'getLink' | 'listAddresses' | 'addAddress' | 'delAddress' | 'deleteLink' | 'close'>;
  /** The node namespace's sysctls. */
  readonly sysctl: Sysctl;
  /** `uname -r`: conn_reuse_mode depends on it. */
  readonly kernelRelease: string;
  readonly nodeConfig: ProxyNodeConfig;
  readonly log: Logger;
  readonly options?: IpvsOptions;
  readonly now?: () => number;
  /**
   * The node's addresses now (kube-proxy's NodeIPs: every local address but kube-ipvs0's, loopback and
   * link-local), read at every sync: the NodePort virtual servers follow addresses that come and go (the pod
   * bridge's appears with the first pod). Absent: nodeConfig.nodeIPs, fixed.
   */
  readonly currentNodeIPs?: () => Promise<readonly IPv4[]>;
}

export interface IpvsSyncStats {
  readonly full: boolean;
  readonly virtualServers: number;
  readonly realServers: number;
  readonly ipvsOps: number;
  readonly setOps: number;
  readonly addressesAdded: number;
  readonly addressesRemoved: number;
  readonly iptablesWritten: boolean;
  readonly draining: number;
  readonly durationMs: number;
}

/**
 * What the last successful sync left: its plan (the virtual servers, set members and addresses it wrote, which
 * a partial sync updates with planIpvsPartial) and the rules' text. Not the kernel's virtual servers with their
 * counters: a partial sync lists the considered ones' real servers anyway (the counters decide draining), and
 * keeping all 33,000 at 30,000 Services cost 8 MiB for nothing.
 */
interface Applied {
  plan: IpvsPlan;
  iptablesText: string;
}

/** The sets of a plan as the kernel holds them once it is applied. */
function setStates(plan: IpvsPlan): Map<string, IpsetState> {
  return new Map([...plan.sets.values()].map((s) => [s.name, { name: s.name, type: s.type, entries: s.entries }]));
}

export class IpvsBackend implements ProxyBackend {
  readonly mode = 'ipvs' as const;
  readonly names: IpvsNames;
  private readonly log: Logger;
  private readonly now: () => number;
  private applied: Applied | null = null;
  private draining = new Map<string, DrainingServer>();
  private setUp = false;
  private last: IpvsSyncStats | null = null;
  private lastConflicts = '';
  private lastNodeIPs: string | null = null;

  constructor(private readonly deps: IpvsBackendDeps) {
    this.names = ipvsNames(deps.nodeConfig.prefix); // validates the prefix now
    this.log = deps.log.child({ [F.subsys]: 'proxy/ipvs' });
    this.now = deps.now ?? Date.now;
  }

  get lastSync(): IpvsSyncStats | null {
    return this.last;
  }

  /** Real servers being drained (weight 0, waiting for their connections to end), "TCP/vip:port/ip:port". */
  get drainingServers(): readonly string[] {
    return [...this.draining.keys()].sort();
  }

  /** Closes the IPVS and netlink sockets (the agent stopping); the kernel's tables stay. */
  close(): void {
    this.deps.ipvs.close();
    this.deps.netlink.close();
  }

  lastSyncRuleCount(): number | null {
    return this.last ? this.last.virtualServers + this.last.realServers : null;
  }

  private async setup(plan: IpvsPlan): Promise<void> {
    for (const [k, v] of ipvsSysctls(this.deps.kernelRelease, plan.options.strictARP)) await this.deps.sysctl.set(k, v);
    await this.deps.netlink.ensureDummy(plan.device);
    this.setUp = true;
  }

  async sync(snapshot: ProxySnapshot, scope: SyncScope): Promise<void> {
    const start = this.now();
    const nodeIPs = this.deps.currentNodeIPs ? [...new Set(await this.deps.currentNodeIPs())].sort() : null;
    const nodeConfig = nodeIPs ? { ...this.deps.nodeConfig, nodeIPs } : this.deps.nodeConfig;
    // Other node addresses change every NodePort: a full sync.
    const ipsChanged = nodeIPs !== null && this.lastNodeIPs !== null && nodeIPs.join(',') !== this.lastNodeIPs;
    if (ipsChanged) this.log.info({ [F.ip]: nodeIPs.join(',') }, `node addresses changed (were ${this.lastNodeIPs}): a full sync`);
    const full = scope.full || this.applied === null || ipsChanged;
    if (!scope.full && !ipsChanged && full) this.log.info('partial sync requested but no applied state is known; doing a full sync');
    const prev = this.applied;
    this.applied = null; // until this sync succeeds (a partial plan updates prev.plan in place)
    try {
      // A partial sync redoes the changed Services' share of the last plan, when the change stays inside them.
      const part = !full && prev && !scope.full ? planIpvsPartial(prev.plan, snapshot, nodeConfig, this.deps.options ?? {}, scope.changed) : null;
      const plan = part?.plan ?? planIpvs(snapshot, nodeConfig, this.deps.options ?? {});
      const delta: IpvsPlanDelta | null = part?.delta ?? null;
      const conflicts = plan.conflicts.join('\n');
      if (conflicts && conflicts !== this.lastConflicts) this.log.warn({ [F.count]: plan.conflicts.length }, `virtual services claimed twice (the first Service keeps each):\n${conflicts}`);
      this.lastConflicts = conflicts;
      if (!this.setUp) await this.setup(plan);

      // 1. sets
      const setOps = delta
        ? [...delta.setDels.map(([name, entry]) => ({ op: 'del' as const, name, entry })), ...delta.setAdds.map(([name, entry]) => ({ op: 'add' as const, name, entry }))]
        : diffSets(plan.sets.values(), full || !prev ? await this.deps.ipset.list((n) => isOurSet(this.names, n)) : setStates(prev.plan));
      await this.deps.ipset.apply(setOps);

      // 2. iptables
      const rules = renderIpvsIptables(plan, nodeConfig);
      const writeRules = full || !prev || prev.iptablesText !== rules.text;
      if (writeRules) await this.deps.iptables.restore(rules.text, { noflush: true });
      if (full) await this.deps.iptables.ensureJumps(ipvsBuiltinJumps(this.names));

      // 3. addresses added
      const addrs = delta
        ? { add: delta.addressAdds, del: delta.addressDels }
        : diffAddresses(plan.addresses, full || !prev ? (await this.deps.netlink.listAddresses(plan.device)).map((a) => a.address) : prev.plan.addresses);
      for (const a of addrs.add) await this.deps.netlink.addAddress(plan.device, a);

      // 4. IPVS
      let current: Map<VsKey, VirtualServerState>;
      let keys: Set<VsKey> | null;
      if (full || !prev) {
        current = new Map((await this.deps.ipvs.list()).map((v) => [vsKey(v), v]));
        keys = null;
      } else {
        keys = new Set<VsKey>(delta?.keys ?? []);
        if (!delta && !scope.full) {
          for (const svc of scope.changed) {
            for (const m of [prev.plan.byService, plan.byService]) for (const [spn, ks] of m) if (spn === svc || spn.startsWith(`${svc}:`)) for (const k of ks) keys.add(k);
          }
        }
        const drainingVs = new Map<VsKey, VirtualServer>();
        for (const d of this.draining.values()) {
          keys.add(vsKey(d.vs));
          drainingVs.set(vsKey(d.vs), d.vs);
        }
        // What the kernel holds for them: the last sync wrote the last plan's virtual servers (a delta's `before`,
        // or the unchanged last plan when this plan was made whole). The connection counters decide whether a
        // leaving real server drains or goes: list the considered services' real servers (one dump each; only the
        // changed Services' and the draining ones).
        current = new Map();
        for (const k of keys) {
          const vs = (delta ? delta.before.get(k) : prev.plan.services.get(k)?.vs) ?? drainingVs.get(k);
          if (!vs) continue; // new: not in the kernel
          const dests = await this.deps.ipvs.listDests(vs);
          if (dests) current.set(k, { ...vs, dests });
        }
      }
      const d = diffIpvs(plan.services, current, this.draining, keys);
      await this.deps.ipvs.apply(d.ops);
      this.draining = new Map(d.draining);
      for (const k of d.drained) this.log.debug({ [F.endpoint]: k }, 'drained real server deleted (no connections left)');

      // 5. addresses removed
      for (const a of addrs.del) await this.deps.netlink.delAddress(plan.device, a);

      this.applied = { plan, iptablesText: rules.text };
      if (nodeIPs) this.lastNodeIPs = nodeIPs.join(',');
      let realServers = 0;
      for (const s of plan.services.values()) realServers += s.dests.length;
      this.last = {
        full, virtualServers: plan.services.size, realServers, ipvsOps: d.ops.length, setOps: setOps.length,
        addressesAdded: addrs.add.length, addressesRemoved: addrs.del.length, iptablesWritten: writeRules, draining: this.draining.size,
        durationMs: this.now() - start,
      };
      this.log.debug(
        { [F.durationMs]: this.last.durationMs },
        `ipvs ${full ? 'full' : 'partial'} sync: ${plan.services.size} virtual servers, ${d.ops.length} IPVS ops, ${setOps.length} set ops, ` +
          `+${addrs.add.length}/-${addrs.del.length} addresses, iptables ${writeRules ? 'written' : 'unchanged'}, ${this.draining.size} draining`,
      );
    } catch (e) {
      const err = asNodenetError(e);
      if (err.code === ErrorCode.NotAvailable) throw err;
      throw err.code === ErrorCode.RuleApply ? err : new NodenetError(ErrorCode.RuleApply, `ipvs ${full ? 'full' : 'partial'} sync failed: ${err.message}`, { cause: e });
    }
  }

  /**
   * True when the canary chain (nat or filter) or kube-ipvs0 is gone: the next
   * sync is full. Also deletes the draining real servers whose connections ended.
   */
  async canaryMissing(): Promise<boolean> {
    const [nat, filter, dev] = await Promise.all([
      this.deps.iptables.chainExists('nat', this.names.canary),
      this.deps.iptables.chainExists('filter', this.names.canary),
      this.deps.netlink.getLink(DUMMY_DEVICE),
    ]);
    const missing = !nat || !filter || !dev;
    if (missing) {
      this.log.warn({ [F.chain]: this.names.canary }, `${dev ? 'canary chain' : 'kube-ipvs0'} missing: our rules were removed; forcing a full sync`);
      this.applied = null;
      if (!dev) this.setUp = false;
      return true;
    }
    // The IPVS table has no canary of its own: one virtual server this instance wrote stands for it (one genl
    // dump), so a table cleared by hand (`ipvsadm -C`) is rewritten at the next check, not at the next full sync.
    const sentinel = this.applied?.plan.services.values().next().value?.vs;
    if (sentinel && (await this.deps.ipvs.listDests(sentinel)) === null) {
      this.log.warn({ [F.endpoint]: vsKey(sentinel) }, `virtual server ${vsKey(sentinel)} missing: the IPVS table was cleared; forcing a full sync`);
      this.applied = null;
      return true;
    }
    await this.reapDrained();
    return false;
  }

  /** Deletes draining real servers that have no connections left. Errors are logged: the next sync retries. */
  private async reapDrained(): Promise<void> {
    if (this.draining.size === 0) return;
    const ops: IpvsOp[] = [];
    const gone: string[] = [];
    const byVs = new Map<VsKey, DrainingServer[]>();
    for (const d of this.draining.values()) byVs.set(vsKey(d.vs), [...(byVs.get(vsKey(d.vs)) ?? []), d]);
    try {
      for (const [k, list] of byVs) {
        const dests = await this.deps.ipvs.listDests(list[0]!.vs);
        for (const d of list) {
          const dk = `${k}/${d.rs.address}:${d.rs.port}`;
          const now = dests?.find((r) => r.address === d.rs.address && r.port === d.rs.port);
          if (!now) gone.push(dk);
          else if (now.activeConns + now.inactiveConns === 0) {
            ops.push({ op: 'del-dest', vs: d.vs, rs: d.rs });
            gone.push(dk);
          }
        }
      }
      await this.deps.ipvs.apply(ops);
    } catch (e) {
      this.log.warn({ [F.err]: e }, 'could not finish draining real servers; the next sync retries');
      this.applied = null;
      return;
    }
    for (const dk of gone) this.draining.delete(dk);
    if (ops.length) this.log.debug({ [F.count]: ops.length }, 'drained real servers deleted (no connections left)');
  }

  /**
   * Removes everything IPVS mode installed: every virtual service of the
   * namespace (kube-proxy flushes the table too), our jumps and chains, our
   * sets (after the rules that reference them), kube-ipvs0. Idempotent.
   */
  async cleanup(): Promise<void> {
    this.applied = null;
    this.draining.clear();
    this.setUp = false;
    try {
      await this.deps.ipvs.flush().catch((e: unknown) => {
        if (asNodenetError(e).code !== ErrorCode.NotAvailable) throw e;
      });
      await this.deps.iptables.deleteJumps(ipvsBuiltinJumps(this.names));
      const owned = ipvsOwnedChains(this.names);
      let text = '';
      for (const t of ['filter', 'nat'] as const) {
        const have = await this.deps.iptables.listChains(t);
        const ours = owned[t].filter((c) => have.has(c));
        if (ours.length) text += [`*${t}`, ...ours.map((c) => `:${c} - [0:0]`), ...ours.map((c) => `-X ${c}`), 'COMMIT', ''].join('\n');
      }
      if (text) await this.deps.iptables.restore(text, { noflush: true });
      const sets = await this.deps.ipset.list((n) => isOurSet(this.names, n));
      await this.deps.ipset.apply([...sets.keys()].sort().map((name) => ({ op: 'destroy' as const, name })));
      try {
        await this.deps.netlink.deleteLink(DUMMY_DEVICE);
      } catch (e) {
        if (!(e instanceof LinkNotFoundError)) throw e;
      }
      this.log.info('ipvs mode removed: virtual services, chains, sets, kube-ipvs0');
    } catch (e) {
      throw new NodenetError(ErrorCode.RuleApply, `ipvs cleanup failed: ${asNodenetError(e).message}`, { cause: e });
    }
  }
}
