/**
 * controlplane/leaderelection/rest-lock: the LeaseLock of the control
 * plane's own components, a `coordination.k8s.io/v1` Lease in `kube-system`
 * read and written through the REST layer like any client's (so
 * `kubectl get lease -n kube-system` shows its holder, as on a real
 * cluster). Updates carry the resourceVersion read: a compare-and-swap.
 */
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { LeaderRecord, LeaseLock } from './leader-election.js';

const LEASE = RESOURCES.find((r) => r.resource === 'leases')!;

export class RestLeaseLock implements LeaseLock {
  readonly describe: string;

  constructor(
    private readonly rest: RestClient,
    private readonly name: string,
    private readonly namespace = 'kube-system',
  ) {
    this.describe = `${namespace}/${name}`;
  }

  async get(): Promise<{ record: LeaderRecord; resourceVersion: string } | null> {
    const s = await this.rest.get(LEASE, this.namespace, this.name).catch((e: unknown) => {
      if ((e as { code?: string }).code === 'NN_ERR_NOT_FOUND') return null;
      throw e;
    });
    if (!s) return null;
    const spec = (s.object['spec'] ?? {}) as Record<string, unknown>;
    const str = (k: string) => (typeof spec[k] === 'string' ? (spec[k] as string) : '');
    const num = (k: string) => (typeof spec[k] === 'number' ? (spec[k] as number) : 0);
    return {
      record: { holderIdentity: str('holderIdentity'), leaseDurationSeconds: num('leaseDurationSeconds'), acquireTime: str('acquireTime'), renewTime: str('renewTime'), leaseTransitions: num('leaseTransitions') },
      resourceVersion: String(s.rev),
    };
  }

  private body(r: LeaderRecord, resourceVersion?: string) {
    return {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease',
      metadata: { name: this.name, namespace: this.namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: { ...(r.holderIdentity ? { holderIdentity: r.holderIdentity } : {}), leaseDurationSeconds: r.leaseDurationSeconds, acquireTime: r.acquireTime, renewTime: r.renewTime, leaseTransitions: r.leaseTransitions },
    };
  }

  async create(r: LeaderRecord): Promise<void> {
    await this.rest.create(LEASE, this.namespace, this.body(r), { fieldManager: 'leader-election' });
  }

  async update(r: LeaderRecord, resourceVersion: string): Promise<void> {
    await this.rest.update(LEASE, this.namespace, this.name, this.body(r, resourceVersion), { fieldManager: 'leader-election' });
  }
}
