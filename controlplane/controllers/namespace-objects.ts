/**
 * controlplane/controllers/namespace-objects: an object every namespace holds, kept there by a controller, as two of
 * kube-controller-manager's do:
 * - the ServiceAccounts controller (pkg/controller/serviceaccount): a `default` ServiceAccount in every namespace,
 *   made again when deleted;
 * - the root CA publisher (pkg/controller/certificates/rootcacertpublisher): the ConfigMap `kube-root-ca.crt` with
 *   the cluster CA (`ca.crt`), which a Pod's projected ServiceAccount volume mounts; rewritten when its data drifts.
 *
 * Watch → compare → act: namespaces and the kind's objects from the watch cache; a namespace being deleted is left
 * alone (its objects are on their way out). Writes through the REST layer with the controller's field manager.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { RestClient } from '../api/rest.js';
import type { Resource } from '../api/resources.js';
import { RESOURCES } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject } from '../store/types.js';
import { WorkQueue } from './work-queue.js';
import { obj, str } from '../../lib/json/loose.js';

export interface NamespaceObjectSpec {
  /** The controller's name (its field manager and logs). */
  readonly controller: string;
  readonly resource: Resource;
  readonly name: string;
  /** The object a namespace should hold. */
  want(namespace: string): KObject;
  /** Whether the object there is as it should be (fields the controller owns); false: it is rewritten. */
  current(have: Readonly<KObject>, want: Readonly<KObject>): boolean;
}

export interface NamespaceObjectOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly retryMs?: number;
}

const grOf = (r: Resource) => (r.group ? `${r.resource}.${r.group}` : r.resource);

export class NamespaceObjectController {
  private watches: { stop(): void }[] = [];
  private readonly work: WorkQueue;

  constructor(private readonly spec: NamespaceObjectSpec, private readonly o: NamespaceObjectOptions) {
    this.work = new WorkQueue({ name: spec.controller, clock: o.clock, log: o.log, process: (ns) => this.process(ns), retryMs: o.retryMs ?? 1000 });
  }

  start(): void {
    const nss = this.o.cache.list('namespaces');
    for (const s of nss.items) this.work.add(str(s.object.metadata?.['name']) ?? '');
    this.watches.push(this.o.cache.watch({ gr: 'namespaces', afterRev: nss.rev, onEvent: (ev) => this.work.add(str(ev.cur.object.metadata?.['name']) ?? '') }));
    this.watches.push(this.o.cache.watch({
      gr: grOf(this.spec.resource), afterRev: nss.rev,
      onEvent: (ev) => {
        const m = ev.cur.object.metadata;
        if (m?.['name'] === this.spec.name) this.work.add(str(m['namespace']) ?? '');
      },
    }));
  }

  stop(): void {
    for (const w of this.watches) w.stop();
    this.watches = [];
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  private async process(namespace: string): Promise<void> {
    const ns = this.o.cache.get(`namespaces//${namespace}`);
    if (!ns || ns.object.metadata?.['deletionTimestamp'] || obj(ns.object['status'])?.['phase'] === 'Terminating') return;
    const want = this.spec.want(namespace);
    const have = this.o.cache.get(`${grOf(this.spec.resource)}/${namespace}/${this.spec.name}`);
    try {
      if (!have) {
        await this.o.rest.create(this.spec.resource, namespace, want, { fieldManager: this.spec.controller });
        this.o.log.info({ [F.namespace]: namespace, [F.name]: this.spec.name }, `${this.spec.resource.kind} created`);
      } else if (!have.object.metadata?.['deletionTimestamp'] && !this.spec.current(have.object, want)) {
        await this.o.rest.update(this.spec.resource, namespace, this.spec.name, { ...have.object, ...want, metadata: { ...have.object.metadata, ...want.metadata } }, { fieldManager: this.spec.controller });
      }
    } catch (e) {
      // Made by another writer, or the namespace began terminating: nothing to do; a conflict is retried.
      if (isNodenetError(e) && (e.code === ErrorCode.AlreadyExists || e.code === ErrorCode.NotFound)) return;
      if (isNodenetError(e) && e.code === ErrorCode.Forbidden && /being terminated/.test(e.message)) return;
      throw e;
    }
  }
}

const SERVICE_ACCOUNTS = RESOURCES.find((r) => r.resource === 'serviceaccounts')!;
const CONFIG_MAPS = RESOURCES.find((r) => r.resource === 'configmaps')!;

/** The ServiceAccounts controller's part: `default` in every namespace. */
export const defaultServiceAccount: NamespaceObjectSpec = {
  controller: 'service-account-controller',
  resource: SERVICE_ACCOUNTS,
  name: 'default',
  want: (namespace) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace } }),
  current: () => true,
};

export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';

/** The root CA publisher: `kube-root-ca.crt` with the cluster CA in every namespace. */
export function rootCAConfigMap(caPem: string): NamespaceObjectSpec {
  return {
    controller: 'root-ca-cert-publisher',
    resource: CONFIG_MAPS,
    name: ROOT_CA_CONFIGMAP,
    want: (namespace) => ({
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: ROOT_CA_CONFIGMAP, namespace, annotations: { 'kubernetes.io/description': 'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.' } },
      data: { 'ca.crt': caPem },
    }),
    current: (have, want) => deepEqual(have['data'], want['data']),
  };
}
