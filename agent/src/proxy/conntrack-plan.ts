/**
 * proxy/conntrack-plan: which UDP conntrack entries a sync made stale. Pure.
 *
 * After the rules changed, three kinds of UDP flows would keep doing the
 * wrong thing until their entries time out (kube-proxy's reasons, per
 * ServicePort and per frontend — ClusterIP:port, each externalIP:port and
 * load-balancer VIP:port, and *:nodePort):
 * 1. flows DNATed to an endpoint that stopped serving or went away keep
 *    going to it → delete that frontend's entries replying from that
 *    endpoint (an `endpoint` action);
 * 2. flows sent while a frontend led nowhere (no serving endpoint, or the
 *    frontend did not exist yet) hold an entry that keeps blackholing them
 *    → delete all entries of every frontend that now leads to a serving
 *    endpoint and did not before (a `service` action);
 * 3. flows to a frontend that no longer exists (Service deleted, port or
 *    NodePort changed) still reach the old endpoints → delete all of that
 *    frontend's entries (a `service` action).
 * Traffic policies do not matter here, as in kube-proxy. The result is
 * deduplicated and sorted; an endpoint action is dropped when a service
 * action already clears its frontend.
 */
import type { ConntrackTarget } from '../netfilter/conntrack/conntrack.js';
import type { IPv4 } from '../../../lib/net/ip.js';
import { servingCount, type UpdateEndpointsMapResult } from './endpoints-map.js';
import type { UpdateServiceMapResult } from './service-map.js';
import type { EndpointInfo, ServicePortInfo, SpnKey } from './types.js';

export type ConntrackAction =
  | { readonly op: 'endpoint'; readonly target: ConntrackTarget; readonly endpointIP: IPv4 }
  | { readonly op: 'service'; readonly target: ConntrackTarget };

function targetId(t: ConntrackTarget): string {
  return t.kind === 'serviceIP' ? `${t.ip}:${t.port}` : `*:${t.port}`;
}

export function describeAction(a: ConntrackAction): string {
  return a.op === 'endpoint' ? `endpoint ${targetId(a.target)} -> ${a.endpointIP}` : `service ${targetId(a.target)}`;
}

/** Every frontend of a UDP ServicePort (none for other protocols). */
export function udpFrontends(info: ServicePortInfo | null | undefined): ConntrackTarget[] {
  if (!info || info.protocol !== 'UDP') return [];
  const out: ConntrackTarget[] = [{ kind: 'serviceIP', ip: info.clusterIP, port: info.port }];
  for (const ip of [...info.externalIPs, ...info.loadBalancerVIPs]) out.push({ kind: 'serviceIP', ip, port: info.port });
  if (info.nodePort > 0) out.push({ kind: 'nodePort', port: info.nodePort });
  return out;
}

function minus(a: ConntrackTarget[], b: ConntrackTarget[]): ConntrackTarget[] {
  const ids = new Set(b.map(targetId));
  return a.filter((t) => !ids.has(targetId(t)));
}

const isUDPKey = (k: SpnKey): boolean => k.endsWith('/UDP');

/**
 * The conntrack work after applying `svc` and `eps` (results of the same
 * sync); `services`/`endpoints` are the applied state after them.
 */
export function planConntrackCleanup(
  svc: UpdateServiceMapResult,
  eps: UpdateEndpointsMapResult,
  services: ReadonlyMap<SpnKey, ServicePortInfo>,
  endpoints: ReadonlyMap<SpnKey, readonly EndpointInfo[]>,
): ConntrackAction[] {
  // Only UDP ports have conntrack work, and an spnKey names its protocol: a full sync at 30,000 TCP
  // Services skips them all here instead of mapping every change.
  const svcPrev = new Map<SpnKey, ServicePortInfo | null>();
  for (const c of svc.portChanges) if (isUDPKey(c.key)) svcPrev.set(c.key, c.prev);
  const epPrev = new Map<SpnKey, readonly EndpointInfo[]>();
  for (const c of eps.portChanges) if (isUDPKey(c.key)) epPrev.set(c.key, c.prev);
  const prevInfo = (k: SpnKey): ServicePortInfo | null => (svcPrev.has(k) ? svcPrev.get(k)! : services.get(k) ?? null);
  const prevEps = (k: SpnKey): readonly EndpointInfo[] => (epPrev.has(k) ? epPrev.get(k)! : endpoints.get(k) ?? []);

  const actions = new Map<string, ConntrackAction>();
  const add = (a: ConntrackAction): void => void actions.set(describeAction(a), a);

  for (const k of new Set([...svcPrev.keys(), ...epPrev.keys()])) {
    const before = prevInfo(k);
    const after = services.get(k) ?? null;
    const fBefore = udpFrontends(before);
    const fAfter = udpFrontends(after);
    if (fBefore.length === 0 && fAfter.length === 0) continue;
    // 3. frontends that are gone
    for (const target of minus(fBefore, fAfter)) add({ op: 'service', target });
    // 2. frontends that lead to a serving endpoint now and did not before
    const servedBefore = servingCount(prevEps(k)) > 0 ? fBefore : [];
    const servedAfter = servingCount(endpoints.get(k) ?? []) > 0 ? fAfter : [];
    for (const target of minus(servedAfter, servedBefore)) add({ op: 'service', target });
  }

  // 1. endpoints that stopped serving, on every frontend they were reachable through
  const cleared = new Set([...actions.values()].map((a) => targetId(a.target)));
  for (const s of eps.staleUDPEndpoints) {
    const frontends = [...udpFrontends(prevInfo(s.key)), ...udpFrontends(services.get(s.key))];
    for (const target of frontends) {
      if (cleared.has(targetId(target))) continue;
      add({ op: 'endpoint', target, endpointIP: s.endpoint.ip });
    }
  }
  return [...actions.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, a]) => a);
}
