/**
 * watch/node-registration: what a kubelet does for its Node, for the agent.
 * - Registers the Node when it does not exist: addresses (InternalIP),
 *   capacity, the standard labels, and a Ready condition; patches its
 *   status (Ready, addresses, heartbeat) when it does.
 * - Renews its Lease in `kube-node-lease` every `leaseMs` (default 10 s,
 *   as the kubelet's; the Lease lasts 40 s), which is how the control plane
 *   knows the node is alive.
 * - Watches its own Node (watch/cluster-watch.ts): `podCIDR()` waits for
 *   the `spec.podCIDR` node IPAM assigns, and when the node lifecycle
 *   controller marked the Node's Ready condition Unknown (a missed Lease,
 *   a partition that healed), the agent posts Ready again, as a kubelet's
 *   next status update does.
 * With the node's own token, the Node authorizer allows exactly these writes.
 */
import { CoordinationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Lease, type V1Node } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import { ClusterWatch, ownNode } from './cluster-watch.js';

export interface NodeRegistrationOptions {
  readonly kubeconfig: KubeConfig;
  readonly nodeName: string;
  readonly addresses: readonly string[];
  /** status.capacity; allocatable defaults to it (config/capacity.ts computes both as the kubelet does). */
  readonly capacity?: Readonly<Record<string, string>>;
  readonly allocatable?: Readonly<Record<string, string>>;
  readonly clock: Clock;
  readonly log: Logger;
  /** How often the Lease is renewed (ms); default 10 s. */
  readonly leaseMs?: number;
  /** The Lease's duration (s); default 40. */
  readonly leaseSeconds?: number;
  /** Where this node's kubelet serves (status.daemonEndpoints.kubeletEndpoint.Port): set when the agent runs Pods. */
  readonly kubeletPort?: number;
}

const LEASE_NS = 'kube-node-lease';

/** MicroTime, as a Lease's renewTime is written: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const code = (e: unknown): number | undefined => (e as { code?: number }).code;

export class NodeRegistration {
  private readonly core: CoreV1Api;
  private readonly leases: CoordinationV1Api;
  private timer: unknown = null;
  private stopped = false;
  private watch: ClusterWatch | null = null;
  private node: V1Node | null = null;
  private readonly nodeWaiters: (() => void)[] = [];
  private reposting = false;
  /** Renewals done (status and tests). */
  renewals = 0;
  /** Ready posted again after the control plane marked it otherwise (status and tests). */
  readyReposts = 0;

  constructor(private readonly o: NodeRegistrationOptions) {
    this.core = o.kubeconfig.makeApiClient(CoreV1Api);
    this.leases = o.kubeconfig.makeApiClient(CoordinationV1Api);
  }

  private statusNow(): NonNullable<V1Node['status']> {
    const now = new Date(this.o.clock.now());
    return {
      addresses: [...this.o.addresses.map((a) => ({ type: 'InternalIP', address: a })), { type: 'Hostname', address: this.o.nodeName }],
      ...(this.o.capacity ? { capacity: { ...this.o.capacity }, allocatable: { ...(this.o.allocatable ?? this.o.capacity) } } : {}),
      ...(this.o.kubeletPort ? { daemonEndpoints: { kubeletEndpoint: { Port: this.o.kubeletPort } } } : {}),
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'nodenet agent is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }],
      nodeInfo: { architecture: process.arch === 'x64' ? 'amd64' : process.arch, operatingSystem: 'linux', kernelVersion: '', osImage: '', containerRuntimeVersion: 'nodenet', kubeletVersion: 'nodenet', kubeProxyVersion: 'nodenet', bootID: '', machineID: '', systemUUID: '' },
    };
  }

  /** Patches the Node's status (addresses, capacity, Ready now) with a strategic merge. */
  private postStatus(): Promise<unknown> {
    return this.core.patchNodeStatus({ name: this.o.nodeName, body: { status: this.statusNow() } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
  }

  /** Registers (or updates) the Node and starts renewing the Lease. */
  async start(): Promise<void> {
    const name = this.o.nodeName;
    try {
      await this.core.readNode({ name });
      await this.postStatus();
    } catch (e) {
      if (code(e) !== 404) throw e;
      await this.core.createNode({ body: { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch } }, status: this.statusNow() } });
      this.o.log.info({ [F.subsys]: 'watch', [F.node]: name }, 'node registered');
    }
    await this.renew();
    this.arm();
    this.watch = new ClusterWatch({
      kubeconfig: this.o.kubeconfig,
      log: this.o.log,
      clock: this.o.clock,
      sources: [ownNode(name, { add: (n) => this.onNode(n), update: (_p, n) => this.onNode(n), delete: () => (this.node = null) })],
    });
    await this.watch.start();
  }

  private onNode(n: KubernetesObject): void {
    this.node = n as V1Node;
    for (const w of this.nodeWaiters.splice(0)) w();
    const ready = this.node.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'True' || this.reposting || this.stopped) return;
    // The node lifecycle controller judged this node lost (Ready Unknown): it is here, so say so again.
    this.reposting = true;
    this.o.log.info({ [F.subsys]: 'watch', [F.node]: this.o.nodeName, was: ready?.status ?? 'none', reason: ready?.reason }, 'Node not Ready on the API server; posting Ready');
    void this.postStatus()
      .then(() => this.readyReposts++)
      .catch((e: unknown) => this.o.log.warn({ [F.subsys]: 'watch', [F.node]: this.o.nodeName, [F.err]: e instanceof Error ? e.message : String(e) }, 'posting node status failed; retrying at the next change'))
      .finally(() => (this.reposting = false));
  }

  stop(): void {
    this.stopped = true;
    this.watch?.stop();
    this.watch = null;
    for (const w of this.nodeWaiters.splice(0)) w();
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.renew().catch((e: unknown) => this.o.log.warn({ [F.subsys]: 'watch', [F.node]: this.o.nodeName, [F.err]: e instanceof Error ? e.message : String(e) }, 'lease renewal failed; retrying at the next period')).finally(() => this.arm());
    }, this.o.leaseMs ?? 10_000);
  }

  /** Creates or renews the node's Lease. */
  async renew(): Promise<void> {
    const name = this.o.nodeName;
    const now = microTime(this.o.clock.now());
    let lease: V1Lease | undefined;
    try {
      lease = await this.leases.readNamespacedLease({ namespace: LEASE_NS, name });
    } catch (e) {
      if (code(e) !== 404) throw e;
    }
    const spec = { holderIdentity: name, leaseDurationSeconds: this.o.leaseSeconds ?? 40, renewTime: now as unknown as Date };
    if (!lease) await this.leases.createNamespacedLease({ namespace: LEASE_NS, body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: LEASE_NS }, spec } });
    else await this.leases.replaceNamespacedLease({ namespace: LEASE_NS, name, body: { ...lease, spec: { ...lease.spec, ...spec } } });
    this.renewals++;
  }

  /** The Node's spec.podCIDR, waiting (on the watch) for node IPAM up to `timeoutMs`; null if none came. */
  async podCIDR(timeoutMs = 30_000): Promise<string | null> {
    const deadline = this.o.clock.now() + timeoutMs;
    for (;;) {
      const cidr = this.node?.spec?.podCIDR;
      if (cidr) return cidr;
      const left = deadline - this.o.clock.now();
      if (left <= 0 || this.stopped) return null;
      await new Promise<void>((resolve) => {
        const t = this.o.clock.setTimeout(() => resolve(), left);
        this.nodeWaiters.push(() => {
          this.o.clock.clearTimeout(t);
          resolve();
        });
      });
    }
  }
}
