/**
 * proxy/ipvs/diff: desired state (plan.ts) vs the kernel's (listed virtual
 * services and real servers, set members, device addresses) → the
 * incremental operations that turn one into the other. Pure.
 *
 * Only what differs is touched: a virtual service is added, edited (its
 * scheduler or persistence changed) or deleted; a real server added or its
 * weight edited; a set member added or deleted; an address added or
 * deleted. A virtual service no Service wants any more is deleted with its
 * real servers at once, and its address goes (kube-proxy's
 * cleanLegacyService): nodenet owns the namespace's IPVS table.
 *
 * Graceful termination (kube-proxy's graceful_termination.go): a real
 * server that leaves a service that stays is first DRAINED: weight 0, so
 * the scheduler gives it no new connection while the existing ones go on.
 * It is deleted once its active and inactive connections are both 0; the
 * list of draining servers is re-checked on every sync, against the
 * counters the kernel lists then. UDP and SCTP real servers are deleted at
 * once: nothing ends their "connections", and expire_nodest_conn=1 moves
 * their next packet to another server. A server that comes back while
 * draining gets its weight back.
 *
 * Order of the ops: services added or edited, then real servers added or
 * edited (a service must exist before its real servers), drained, deleted,
 * then services deleted.
 */
import type { IpsetOp, IpsetState } from '../../netfilter/iptables/ipset-parse.js';
import { rsKey, vsKey, type IpvsOp, type RealServer, type RealServerState, type VirtualServer, type VirtualServerState, type VsKey } from '../../netfilter/ipvs/ipvs-types.js';
import type { DesiredService, DesiredSet } from './plan.js';

/** A real server being drained: kept at weight 0 until it has no connections. */
export interface DrainingServer {
  readonly vs: VirtualServer;
  readonly rs: RealServer;
}

/** "TCP/10.96.0.10:80/10.0.0.1:80" */
export function drainKey(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>, rs: Pick<RealServer, 'address' | 'port'>): string {
  return `${vsKey(vs)}/${rsKey(rs)}`;
}

export interface IpvsDiff {
  readonly ops: readonly IpvsOp[];
  /** Draining servers after these ops (the input's, minus those deleted or revived, plus the newly drained). */
  readonly draining: ReadonlyMap<string, DrainingServer>;
  /** Real servers deleted because their connections ended (for the log). */
  readonly drained: readonly string[];
  /** What the kernel holds for the considered keys once the ops are applied (counters as listed). */
  readonly after: ReadonlyMap<VsKey, VirtualServerState>;
}

const sameService = (a: VirtualServer, b: VirtualServer): boolean => a.scheduler === b.scheduler && a.persistentTimeout === b.persistentTimeout;
const needsGrace = (vs: Pick<VirtualServer, 'protocol'>): boolean => vs.protocol === 'TCP';

/**
 * The IPVS ops for the virtual services in `keys` (all of `current` and
 * `desired` when null: a full sync). `current` holds the kernel's listing
 * for at least those keys.
 */
export function diffIpvs(
  desired: ReadonlyMap<VsKey, DesiredService>,
  current: ReadonlyMap<VsKey, VirtualServerState>,
  draining: ReadonlyMap<string, DrainingServer>,
  keys: ReadonlySet<VsKey> | null,
): IpvsDiff {
  const consider = keys ?? new Set([...desired.keys(), ...current.keys()]);
  const addSvc: IpvsOp[] = [];
  const addRs: IpvsOp[] = [];
  const drain: IpvsOp[] = [];
  const delRs: IpvsOp[] = [];
  const delSvc: IpvsOp[] = [];
  const nextDraining = new Map(draining);
  const drained: string[] = [];
  const after = new Map<VsKey, VirtualServerState>();

  for (const k of [...consider].sort()) {
    const d = desired.get(k);
    const c = current.get(k);
    if (!d) {
      if (c) delSvc.push({ op: 'del-service', vs: c });
      for (const dk of [...nextDraining.keys()]) if (dk.startsWith(`${k}/`)) nextDraining.delete(dk);
      continue;
    }
    const state: RealServerState[] = [];
    if (!c) {
      addSvc.push({ op: 'add-service', vs: d.vs });
    } else if (!sameService(c, d.vs)) {
      addSvc.push({ op: 'edit-service', vs: d.vs });
    }
    const cur = new Map((c?.dests ?? []).map((r) => [rsKey(r), r]));
    for (const rs of d.dests) {
      const have = cur.get(rsKey(rs));
      nextDraining.delete(drainKey(d.vs, rs));
      if (!have) addRs.push({ op: 'add-dest', vs: d.vs, rs });
      else if (have.weight !== rs.weight || have.forward !== rs.forward) addRs.push({ op: 'edit-dest', vs: d.vs, rs });
      state.push({ ...rs, activeConns: have?.activeConns ?? 0, inactiveConns: have?.inactiveConns ?? 0 });
    }
    const want = new Set(d.dests.map(rsKey));
    for (const [rk, have] of cur) {
      if (want.has(rk)) continue;
      const dk = drainKey(d.vs, have);
      if (!needsGrace(d.vs) || have.activeConns + have.inactiveConns === 0) {
        delRs.push({ op: 'del-dest', vs: d.vs, rs: have });
        if (nextDraining.delete(dk) || draining.has(dk)) drained.push(dk);
        continue;
      }
      const rs: RealServer = { address: have.address, port: have.port, weight: 0, forward: have.forward };
      if (have.weight !== 0) drain.push({ op: 'edit-dest', vs: d.vs, rs });
      nextDraining.set(dk, { vs: d.vs, rs });
      state.push({ ...have, weight: 0 });
    }
    state.sort((a, b) => (rsKey(a) < rsKey(b) ? -1 : rsKey(a) > rsKey(b) ? 1 : 0));
    after.set(k, { ...d.vs, dests: state });
  }
  return { ops: [...addSvc, ...addRs, ...drain, ...delRs, ...delSvc], draining: nextDraining, drained, after };
}

/** Set changes: create the missing sets, add the missing members, delete the extra ones. A set of the wrong type is destroyed and made again. */
export function diffSets(desired: Iterable<DesiredSet>, current: ReadonlyMap<string, IpsetState>): IpsetOp[] {
  const creates: IpsetOp[] = [];
  const changes: IpsetOp[] = [];
  for (const d of desired) {
    const c = current.get(d.name);
    if (c && c.type !== d.type) {
      changes.push({ op: 'flush', name: d.name }, { op: 'destroy', name: d.name });
    }
    const have = c && c.type === d.type ? c.entries : new Set<string>();
    if (!c || c.type !== d.type) creates.push({ op: 'create', name: d.name, type: d.type });
    for (const e of have) if (!d.entries.has(e)) changes.push({ op: 'del', name: d.name, entry: e });
    for (const e of d.entries) if (!have.has(e)) changes.push({ op: 'add', name: d.name, entry: e });
  }
  // A type change destroys before its create.
  const destroys = changes.filter((o) => o.op === 'flush' || o.op === 'destroy');
  return [...destroys, ...creates, ...changes.filter((o) => o.op !== 'flush' && o.op !== 'destroy')];
}

/** Address changes on the device: "a.b.c.d/32" to add and to delete. */
export function diffAddresses(desired: readonly string[], current: readonly string[]): { add: string[]; del: string[] } {
  const want = new Set(desired);
  const have = new Set(current);
  return { add: desired.filter((a) => !have.has(a)), del: current.filter((a) => !want.has(a)) };
}
