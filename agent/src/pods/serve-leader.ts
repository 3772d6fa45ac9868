/**
 * pods/serve-leader: application-level leader election for `nodenet serve --leader-elect NAME`, the seeds' pattern
 * of several replicas of one app of which one acts: each replica runs client-go's leader election (the control
 * plane's LeaderElector, the same 15/10/2 s) on a `coordination.k8s.io/v1` Lease named NAME in its own namespace,
 * through the API as an in-cluster client: `@kubernetes/client-node`'s `KubeConfig.loadFromCluster()` unchanged
 * (KUBERNETES_SERVICE_HOST/PORT and the projected ServiceAccount token, CA and namespace under
 * /var/run/secrets/kubernetes.io/serviceaccount), or a kubeconfig outside a Pod. Its RBAC needs get, create and update
 * on that Lease.
 *
 * The server then answers /leader with `leader <me>` or `follower <leader>`. Deleting the leader's Pod ends its
 * process, which releases the Lease on SIGTERM (a clean stop), so another replica takes it at its next retry; a
 * replica killed without a stop leaves the Lease to expire (15 s).
 */
import { readFileSync } from 'node:fs';
import { CoordinationV1Api, KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { LeaderElector, type LeaderRecord, type LeaseLock } from '../../../controlplane/leaderelection/leader-election.js';
import type { Logger } from '../../../lib/log/log.js';
import { realClock, type Clock } from '../../../lib/reconcile/clock.js';

export const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The namespace an in-cluster client is in: POD_NAMESPACE, else the projected namespace file, else `default`. */
export function inClusterNamespace(env: Readonly<Record<string, string | undefined>>, read: (f: string) => string = (f) => readFileSync(f, 'utf8')): string {
  if (env['POD_NAMESPACE']) return env['POD_NAMESPACE'];
  try {
    return read(SA_NAMESPACE_FILE).trim() || 'default';
  } catch {
    return 'default';
  }
}

const code = (e: unknown): number | undefined => (e as { code?: unknown }).code as number | undefined;

/** A LeaseLock over the API through client-node: updates carry the resourceVersion read (a compare-and-swap). */
export class ClientLeaseLock implements LeaseLock {
  readonly describe: string;

  constructor(private readonly api: CoordinationV1Api, private readonly name: string, private readonly namespace: string) {
    this.describe = `${namespace}/${name}`;
  }

  async get(): Promise<{ record: LeaderRecord; resourceVersion: string } | null> {
    let l: V1Lease;
    try {
      l = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (e) {
      if (code(e) === 404) return null;
      throw e;
    }
    const s = l.spec ?? {};
    const time = (t: unknown) => (t instanceof Date ? t.toISOString() : typeof t === 'string' ? t : '');
    return {
      record: {
        holderIdentity: s.holderIdentity ?? '', leaseDurationSeconds: s.leaseDurationSeconds ?? 0,
        acquireTime: time(s.acquireTime), renewTime: time(s.renewTime), leaseTransitions: s.leaseTransitions ?? 0,
      },
      resourceVersion: l.metadata?.resourceVersion ?? '',
    };
  }

  private body(r: LeaderRecord, resourceVersion?: string): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease',
      metadata: { name: this.name, namespace: this.namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: {
        ...(r.holderIdentity ? { holderIdentity: r.holderIdentity } : {}), leaseDurationSeconds: r.leaseDurationSeconds,
        // client-node serialises MicroTime fields from Date objects.
        ...(r.acquireTime ? { acquireTime: new Date(r.acquireTime) } : {}), ...(r.renewTime ? { renewTime: new Date(r.renewTime) } : {}),
        leaseTransitions: r.leaseTransitions,
      } as NonNullable<V1Lease['spec']>,
    };
  }

  async create(r: LeaderRecord): Promise<void> {
    await this.api.createNamespacedLease({ namespace: this.namespace, body: this.body(r) });
  }

  async update(r: LeaderRecord, resourceVersion: string): Promise<void> {
    await this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body: this.body(r, resourceVersion) });
  }
}

export interface AppLeaderOptions {
  readonly lease: string;
  readonly namespace: string;
  readonly identity: string;
  readonly kubeconfig?: string | undefined;
  readonly log: Logger;
  readonly clock?: Clock;
  readonly timings?: { readonly leaseDurationMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number };
}

export interface AppLeader {
  /** `leader <me>` or `follower <leader>` (`follower ` with no leader seen yet). */
  answer(): string;
  readonly isLeader: boolean;
  /** Releases the Lease if held (a clean stop). */
  stop(): Promise<void>;
}

export function startAppLeader(o: AppLeaderOptions): AppLeader {
  const kc = new KubeConfig();
  if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
  else kc.loadFromCluster();
  const lock = new ClientLeaseLock(kc.makeApiClient(CoordinationV1Api), o.lease, o.namespace);
  let leading = false;
  let seen = '';
  const e = new LeaderElector({
    lock, identity: o.identity, clock: o.clock ?? realClock, log: o.log,
    ...(o.timings ?? {}),
    onStartedLeading: () => {
      leading = true;
      o.log.info({ lease: lock.describe, identity: o.identity }, 'leading');
    },
    onStoppedLeading: () => {
      leading = false;
      o.log.info({ lease: lock.describe, identity: o.identity }, 'no longer leading');
    },
    onNewLeader: (id) => { seen = id; },
  });
  void e.start();
  return {
    answer: () => (leading ? `leader ${o.identity}` : `follower ${seen === o.identity ? '' : seen}`.trimEnd()),
    get isLeader() { return leading; },
    stop: () => e.stop(),
  };
}
