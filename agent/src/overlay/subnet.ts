/**
 * overlay/subnet: the subnet manager's job, flannel's kube subnet manager
 * (pkg/subnet/kube): a node's lease lives on its Node object, spec.podCIDR
 * (node IPAM's) plus the annotations the node's own agent publishes:
 *
 *   flannel.alpha.coreos.com/backend-type: vxlan
 *   flannel.alpha.coreos.com/backend-data: {"VNI":1,"VtepMAC":"aa:bb:.."}
 *   flannel.alpha.coreos.com/public-ip: <underlay IP>
 *   flannel.alpha.coreos.com/kube-subnet-manager: "true"
 *
 * backend-type and backend-data are the backend's (backend.ts); the rest is
 * the same for every backend. An admin may set
 * flannel.alpha.coreos.com/public-ip-overwrite on a Node: its agent then
 * publishes that address as its public IP (flannel's behaviour), and its
 * peers send to it.
 *
 * Two parts:
 * - subnetLeaseFromNode (pure): a Node object (unknown, from the watch) and
 *   the backend's reader of backend-data in, a lease or why not out. Every
 *   reason is reported with its field and its class, which decides what the
 *   overlay does with a peer it follows:
 *   - 'pending': a value not written yet (no spec.podCIDR, no backend
 *     annotations, no public-ip): a node joining;
 *   - 'elsewhere': well-formed values that say the node is on another
 *     network: another backend type (`foreign` names it), or the backend's
 *     own say (another VNI);
 *   - 'invalid': a value that is there but malformed (a podCIDR that is no
 *     CIDR or has host bits set, backend-data the backend cannot read, a
 *     public-ip that is no IPv4 address).
 * - SubnetManager: the leases followed, per Node, from the watch's events
 *   (add, update, delete), with the rules of issue 24 (a Node update it
 *   cannot use keeps the last good lease; reconcile/last-good.ts), the Nodes
 *   on another backend (reported: a warning, a Warning Event
 *   OverlayBackendMismatch on the Node, the status and a gauge; never
 *   silently skipped), and this node's own annotations: asserted at start;
 *   afterwards re-published only when the backend's go missing or wrong, so
 *   an admin's change of public-ip holds until the next start
 *   (public-ip-overwrite holds across starts). It does no I/O: the overlay
 *   publishes what it hands out (due()).
 *
 * A Node update the overlay cannot use never takes a peer away (issue 24;
 * flannel's kube subnet manager ignores a Node it cannot turn into a lease
 * the same way): the peer keeps its last good lease, and the rejection is
 * said once. What takes a peer away is what the node itself says:
 * - the Node is deleted;
 * - its annotations say, well-formed, that it is on another network.
 * What keeps the last good lease, as "cannot use this update":
 * - a malformed value: nobody's statement that the node left;
 *   kube-apiserver refuses most of them and makes spec.podCIDR immutable
 *   once set;
 * - a value gone missing (podCIDR or an annotation removed): the API server
 *   forbids unsetting spec.podCIDR, and a node's own agent puts its
 *   annotations back, so this is an edit in progress or a mistake, not a
 *   departure.
 * A Node that never had a lease is as before: missing values mean "not a
 * peer yet" (a joining node, said at debug level); a malformed one is
 * skipped and said once like the rest. A new Node under a kept peer's name
 * (another uid) that the overlay cannot use is not kept.
 */
import { obj } from '../../../lib/json/loose.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import { isIPv4, parseCidr, parseIPv4, type Cidr, type IPv4 } from '../../../lib/net/ip.js';
import { NO_EVENTS, objectReference, type EventRecorder } from '../../../lib/reconcile/event-recorder.js';
import { LastGood, type ObjectRejection, type RejectionCount } from '../../../lib/reconcile/last-good.js';

export const ANNOTATION_PREFIX = 'flannel.alpha.coreos.com';
export const A_BACKEND_TYPE = `${ANNOTATION_PREFIX}/backend-type`;
export const A_BACKEND_DATA = `${ANNOTATION_PREFIX}/backend-data`;
export const A_PUBLIC_IP = `${ANNOTATION_PREFIX}/public-ip`;
export const A_PUBLIC_IP_OVERWRITE = `${ANNOTATION_PREFIX}/public-ip-overwrite`;
export const A_SUBNET_MANAGER = `${ANNOTATION_PREFIX}/kube-subnet-manager`;

/** The Warning Event on a Node announced with a backend this node does not run. */
export const REASON_BACKEND_MISMATCH = 'OverlayBackendMismatch';

/** Why a Node has no lease: see the header. */
export type SkipClass = 'pending' | 'elsewhere' | 'invalid';

export interface Skip {
  readonly skip: string;
  readonly class: SkipClass;
  readonly field: string;
  /** Set when the Node runs another backend type: that type. */
  readonly foreign?: string;
}

/** A peer's lease: what every backend has, and the backend's own data (D), read from backend-data. */
export interface SubnetLease<D> {
  readonly node: string;
  readonly podCIDR: Cidr;
  /** Where the peer's traffic goes: its underlay address (public-ip, or public-ip-overwrite). */
  readonly publicIP: IPv4;
  readonly data: D;
}

/** What the subnet manager needs of a backend: its type, and its reader of a peer's backend-data. */
export interface LeaseReader<D> {
  readonly type: string;
  /** What the backend makes from a peer's lease, for the messages ("route, FDB entry and neighbour"). */
  readonly serves: string;
  /** Whether a Node without backend-data is a lease all the same (host-gw has none: flannel writes "null"). */
  readonly dataOptional?: boolean;
  /** backend-data (parsed JSON; null when absent and optional) → the backend's data, or why not, said in full ('invalid': malformed; 'elsewhere': another network of this type). */
  readData(data: unknown): { readonly data: D } | { readonly skip: string; readonly class: 'invalid' | 'elsewhere' };
}

/** The annotations a node publishes on its own Node (what flannel's kube subnet manager writes). */
export function subnetAnnotations(o: { readonly backendType: string; readonly backendData: unknown; readonly publicIP: string }): Record<string, string> {
  return {
    [A_BACKEND_TYPE]: o.backendType,
    [A_BACKEND_DATA]: JSON.stringify(o.backendData),
    [A_PUBLIC_IP]: o.publicIP,
    [A_SUBNET_MANAGER]: 'true',
  };
}

/** Whether `current` (a Node's annotations) already holds every one of `wanted`. */
export function annotationsHold(current: Readonly<Record<string, string>> | undefined, wanted: Readonly<Record<string, string>>): boolean {
  return Object.entries(wanted).every(([k, v]) => current?.[k] === v);
}

/** A Node's name and annotations (strings only), from an unknown object. */
export function nodeMeta(node: unknown): { name: string | null; annotations: Record<string, string> } {
  const meta = obj(obj(node)?.['metadata']);
  const name = typeof meta?.['name'] === 'string' ? meta['name'] : null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj(meta?.['annotations']) ?? {})) if (typeof v === 'string') out[k] = v;
  return { name, annotations: out };
}

/** The field path of an annotation, as the API server's errors name it. */
export const annotationField = (key: string): string => `metadata.annotations[${key}]`;

/** A Node's lease for a backend, or why it has none (no podCIDR yet, not annotated yet, another backend, a malformed value). */
export function subnetLeaseFromNode<D>(node: unknown, backend: LeaseReader<D>): { readonly lease: SubnetLease<D> } | Skip {
  const skip = (c: SkipClass, field: string, why: string, foreign?: string): Skip => ({ skip: why, class: c, field, ...(foreign !== undefined ? { foreign } : {}) });
  const { name, annotations: a } = nodeMeta(node);
  if (!name) return skip('invalid', 'metadata.name', 'no metadata.name');
  const podCIDR = obj(obj(node)?.['spec'])?.['podCIDR'];
  if (podCIDR === undefined || podCIDR === null || podCIDR === '') return skip('pending', 'spec.podCIDR', 'no spec.podCIDR yet');
  let cidr: Cidr;
  try {
    if (typeof podCIDR !== 'string') throw new Error('not a string');
    const p = parseCidr(podCIDR);
    if (p.cidr !== podCIDR) return skip('invalid', 'spec.podCIDR', `spec.podCIDR ${podCIDR} has host bits set`);
    cidr = p.cidr;
  } catch {
    return skip('invalid', 'spec.podCIDR', `spec.podCIDR ${JSON.stringify(podCIDR)} is not an IPv4 CIDR`);
  }
  const type = a[A_BACKEND_TYPE];
  if (type === undefined) return skip('pending', annotationField(A_BACKEND_TYPE), `no ${A_BACKEND_TYPE} annotation yet`);
  if (type !== backend.type) return skip('elsewhere', annotationField(A_BACKEND_TYPE), `backend ${JSON.stringify(type)}, not ${backend.type}`, type);
  const raw = a[A_BACKEND_DATA];
  if (raw === undefined && !backend.dataOptional) return skip('pending', annotationField(A_BACKEND_DATA), `no ${A_BACKEND_DATA} annotation yet`);
  let json: unknown;
  try {
    json = raw === undefined ? null : JSON.parse(raw);
  } catch {
    return skip('invalid', annotationField(A_BACKEND_DATA), `${A_BACKEND_DATA} is not JSON`);
  }
  const d = backend.readData(json);
  if ('skip' in d) return skip(d.class, annotationField(A_BACKEND_DATA), d.skip);
  const ipKey = a[A_PUBLIC_IP_OVERWRITE] !== undefined ? A_PUBLIC_IP_OVERWRITE : A_PUBLIC_IP;
  const ip = a[ipKey];
  if (ip === undefined) return skip('pending', annotationField(A_PUBLIC_IP), `no ${A_PUBLIC_IP} annotation yet`);
  if (!isIPv4(ip)) return skip('invalid', annotationField(ipKey), `${ipKey} ${JSON.stringify(ip)} is not an IPv4 address`);
  return { lease: { node: name, podCIDR: cidr, publicIP: parseIPv4(ip), data: d.data } };
}

/** A Node announced with a backend type this node does not run (status, metrics). */
export interface ForeignNode {
  readonly node: string;
  readonly backendType: string;
  /** Whether nodenet has that backend at all (another node runs it) or not (a flannel agent's, say). */
  readonly known: boolean;
}

export interface SubnetManagerDeps<D> {
  readonly nodeName: string;
  readonly podCIDR: Cidr;
  readonly backend: LeaseReader<D>;
  /** Whether nodenet has a backend of this type (for the message on a foreign Node). */
  readonly knownBackend: (type: string) => boolean;
  readonly log: Logger;
  /** Warning Events on the Nodes; none when absent. */
  readonly events?: EventRecorder | undefined;
  /** Called when something changed that the backend must sync. */
  readonly changed: () => void;
}

/** The leases followed and this node's own annotations, from the Node watch: see the header. */
export class SubnetManager<D> {
  /** The peers followed, by node name: each one's lease, or its last good lease while its Node is one the overlay cannot use. */
  private readonly leases = new Map<string, SubnetLease<D>>();
  private readonly skips = new Map<string, string>();
  private readonly foreignNodes = new Map<string, ForeignNode>();
  private readonly lastGood: LastGood<SubnetLease<D>, 'Node'>;
  /** The annotations this node publishes (null until the backend has set up). */
  private own: { readonly backendData: unknown; readonly publicIP: string } | null = null;
  private toPublish: Record<string, string> | null = null;
  private seenOwn = false;
  private readonly events: EventRecorder;

  constructor(private readonly deps: SubnetManagerDeps<D>) {
    this.lastGood = new LastGood<SubnetLease<D>, 'Node'>({ kind: 'Node', log: deps.log, keyField: F.node, serves: deps.backend.serves, events: deps.events });
    this.events = deps.events ?? NO_EVENTS;
  }

  /** This node's backend data and public IP (after the backend's setup): what it publishes. */
  setOwn(own: { readonly backendData: unknown; readonly publicIP: string }): void {
    this.own = own;
  }

  private wanted(publicIP: string): Record<string, string> {
    if (!this.own) throw new Error('subnet manager: own annotations before setOwn()');
    return subnetAnnotations({ backendType: this.deps.backend.type, backendData: this.own.backendData, publicIP });
  }

  /** The peers' leases followed now, by node name (a kept last good lease included). */
  peers(): ReadonlyMap<string, SubnetLease<D>> {
    return this.leases;
  }

  /** The Nodes whose current version the overlay cannot use, and whether their last good lease is still followed. */
  rejected(): ObjectRejection<'Node'>[] {
    return this.lastGood.rejected();
  }

  rejectionCounts(): RejectionCount {
    return this.lastGood.counts();
  }

  /** The Nodes announced with another backend type, by name. */
  foreign(): ForeignNode[] {
    return [...this.foreignNodes.values()].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  /** The first list is in: if this node's Node was not in it (registration makes it first, so rarely), publish anyway. */
  synced(): void {
    if (!this.seenOwn && this.own) this.toPublish ??= this.wanted(this.own.publicIP);
  }

  /** The annotations due on this node's Node, or null; done(a) once they are written. */
  due(): Record<string, string> | null {
    return this.toPublish;
  }

  published(a: Record<string, string>): void {
    if (this.toPublish === a) this.toPublish = null;
  }

  /** A Node added (prev null) or updated: follow its lease, keep the last good one, or leave it (see the header). */
  onNode(prev: unknown, o: unknown): void {
    const { name, annotations } = nodeMeta(o);
    if (!name) return;
    if (name === this.deps.nodeName) return void this.onOwn(annotations);
    const had = this.leases.get(name);
    let r = subnetLeaseFromNode(o, this.deps.backend);
    if ('lease' in r && r.lease.podCIDR === this.deps.podCIDR) r = { skip: `its spec.podCIDR ${r.lease.podCIDR} is this node's`, class: 'invalid', field: 'spec.podCIDR' };
    this.noteForeign(name, o, 'skip' in r ? r.foreign : undefined);
    if ('lease' in r) {
      this.lastGood.accept(name);
      this.leases.set(name, r.lease);
      this.skips.delete(name);
      if (!had || had.publicIP !== r.lease.publicIP || JSON.stringify(had.data) !== JSON.stringify(r.lease.data) || had.podCIDR !== r.lease.podCIDR) {
        this.deps.log.info({ [F.node]: name, podCIDR: r.lease.podCIDR, [F.ip]: r.lease.publicIP, data: r.lease.data }, had ? 'peer lease changed' : 'peer lease');
      }
    } else if (r.class === 'elsewhere' || (r.class === 'pending' && !had)) {
      // The node says it is on another network, or it is not a peer yet: nothing to follow.
      this.lastGood.accept(name);
      this.leases.delete(name);
      if (had) this.deps.log.info({ [F.node]: name, [F.reason]: r.skip }, 'peer left this network');
      else if (this.skips.get(name) !== r.skip && r.foreign === undefined) this.deps.log.debug({ [F.node]: name, [F.reason]: r.skip }, 'node is not a peer (yet)');
      this.skips.set(name, r.skip);
    } else {
      // An update the overlay cannot use: the last good lease stays followed (a peer's), or the Node is skipped.
      const serving = this.lastGood.get(name) ?? (had ? { value: had, uid: metaString(prev, 'uid'), resourceVersion: metaString(prev, 'resourceVersion') } : null);
      const keep = this.lastGood.reject(name, objectReference(o, 'Node', 'v1'), r.field, r.skip, serving);
      if (keep) {
        this.leases.set(name, keep);
        this.skips.delete(name);
      } else {
        this.leases.delete(name);
        this.skips.set(name, r.skip);
      }
    }
    this.deps.changed();
  }

  onNodeGone(o: unknown): void {
    const { name } = nodeMeta(o);
    if (!name || name === this.deps.nodeName) return;
    const had = this.leases.get(name);
    this.leases.delete(name);
    this.skips.delete(name);
    this.foreignNodes.delete(name);
    this.lastGood.forget(name);
    if (had) this.deps.log.info({ [F.node]: name }, 'peer node gone');
    this.deps.changed();
  }

  /**
   * A Node on another backend type: said once per type it announces (a warning and a Warning Event on
   * the Node, whose count the recorder folds), kept for the status and the gauge until it changes.
   */
  private noteForeign(name: string, o: unknown, type: string | undefined): void {
    if (type === undefined) {
      this.foreignNodes.delete(name);
      return;
    }
    if (this.foreignNodes.get(name)?.backendType === type) return;
    const known = this.deps.knownBackend(type);
    this.foreignNodes.set(name, { node: name, backendType: type, known });
    const mine = this.deps.backend.type;
    const message = known
      ? `Node ${name} runs the ${type} overlay backend and this node (${this.deps.nodeName}) runs ${mine}: no route to its pods is made from here; run one backend on every node`
      : `Node ${name} announces the overlay backend ${JSON.stringify(type)}, which nodenet does not have (this node runs ${mine}): no route to its pods is made from here`;
    this.deps.log.warn({ [F.node]: name, backend: type, [F.reason]: REASON_BACKEND_MISMATCH }, message);
    const ref = objectReference(o, 'Node', 'v1');
    if (ref) this.events.event(ref, 'Warning', REASON_BACKEND_MISMATCH, message);
  }

  private onOwn(annotations: Record<string, string>): void {
    const first = !this.seenOwn;
    this.seenOwn = true;
    if (!this.own) return;
    const wanted = this.wanted(annotations[A_PUBLIC_IP_OVERWRITE] ?? this.own.publicIP);
    // At start every annotation is asserted; later only the backend ones (and a missing public-ip), so that
    // an admin's public-ip change is followed by the peers and not undone here.
    const check = first ? wanted : { [A_BACKEND_TYPE]: wanted[A_BACKEND_TYPE]!, [A_BACKEND_DATA]: wanted[A_BACKEND_DATA]!, [A_SUBNET_MANAGER]: wanted[A_SUBNET_MANAGER]! };
    const missingIP = !first && annotations[A_PUBLIC_IP] === undefined;
    if (annotationsHold(annotations, check) && !missingIP) return;
    this.toPublish = first || missingIP ? wanted : check;
    this.deps.changed();
  }
}

/** A string in an object's metadata (uid, resourceVersion), from an unknown watch object. */
function metaString(o: unknown, k: string): string | undefined {
  const m = obj(obj(o)?.['metadata']);
  const v = m?.[k];
  return typeof v === 'string' && v !== '' ? v : undefined;
}
