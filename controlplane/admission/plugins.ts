/**
 * controlplane/admission/plugins: the admission plugins nodenet has, each as upstream's (plugin/pkg/admission/...):
 *
 * - NamespaceLifecycle: a namespaced object is created only in a namespace that exists and is not terminating
 *   (Events excepted); the cache first, then the storage (upstream falls back to a live GET). `default`,
 *   `kube-system`, `kube-public` and `kube-node-lease` cannot be deleted.
 * - ServiceAccount: a new Pod without `serviceAccountName` gets `default` and (unless automountServiceAccountToken
 *   is false on it or its ServiceAccount) the `kube-api-access-*` projected volume at
 *   /var/run/secrets/kubernetes.io/serviceaccount in every container; the ServiceAccount it names must exist
 *   (for `default`, which its controller makes right after the namespace, it is looked for again for up to about
 *   2 s, as upstream's ten live lookups). A mirror Pod may not name one.
 * - NodeRestriction: a node may not change its Node's taints, nor labels under kubernetes.io/ and k8s.io/ other than
 *   the kubelet's own (hostname, os, arch, instance type, zone, region, and the kubelet.kubernetes.io/ and
 *   node.kubernetes.io/ prefixes), nor any node-restriction.kubernetes.io/ label; a node may not create a Pod other
 *   than a mirror Pod bound to itself, and may not create or update another node's Node.
 * - Priority (priority.ts): a new Pod's priorityClassName resolved to spec.priority (the global default's when it
 *   names none); one global default PriorityClass at most.
 * - DefaultTolerationSeconds: a new Pod that does not tolerate the not-ready and unreachable NoExecute taints gets
 *   300 s of each.
 * - LimitRanger (limit-ranger.ts): a new Pod's containers get the namespace's LimitRange defaults, and a Pod outside
 *   its min, max or ratio is refused.
 * - ResourceQuota (resource-quota.ts): a create or update that would take a namespace's quota over its hard limit is
 *   refused; one that fits is charged to the quota's status.used first.
 */
import { ErrorCode } from '../../lib/errors/errors.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { ApiError, apiErrors } from '../api/errors.js';
import type { Storage } from '../store/storage.js';
import type { Stored } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { defaultTolerationSeconds } from '../kinds/pod.js';
import { arr, obj, str } from '../../lib/json/loose.js';
import type { AdmissionPlugin, AdmissionRequest, PluginName } from './admission.js';
import { limitRanger } from './limit-ranger.js';
import { priority } from './priority.js';
import { resourceQuota } from './resource-quota.js';
import { realClock, type Clock } from '../../lib/reconcile/clock.js';

type O = Record<string, unknown>;

export interface PluginDeps {
  readonly cache: WatchCache;
  readonly storage: Storage;
  /** How long ServiceAccount admission looks for a missing `default` (default 2 s) and how often (default 150 ms). */
  readonly serviceAccountWait?: { readonly totalMs: number; readonly everyMs: number };
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Whether ServiceAccount admission gives each Pod the `kube-api-access-*` projected volume (token, CA, namespace):
   * only where the root CA publisher writes `kube-root-ca.crt` (a control plane with TLS).
   */
  readonly projectServiceAccountToken?: boolean;
  /** The clock ResourceQuota reads a Pod's deletion grace against (default: the system's). */
  readonly clock?: Clock;
}

export const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const MIRROR = 'kubernetes.io/config.mirror';

const lookup = async (d: PluginDeps, key: string): Promise<Stored | undefined> => d.cache.get(key) ?? (await d.storage.get(key));
const forbidden = (a: AdmissionRequest, why: string) => apiErrors.forbiddenWhy(a.resource, a.name, why);

function namespaceLifecycle(d: PluginDeps): AdmissionPlugin {
  return {
    name: 'NamespaceLifecycle',
    async validate(a) {
      if (a.operation === 'DELETE' && a.resource.resource === 'namespaces' && !a.resource.group && IMMORTAL_NAMESPACES.includes(a.name)) {
        throw forbidden(a, 'this namespace may not be deleted');
      }
      if (a.operation !== 'CREATE' || !a.resource.namespaced || a.subresource) return;
      const ns = await lookup(d, `namespaces//${a.namespace}`);
      if (!ns) throw apiErrors.notFound({ resource: 'namespaces', group: '', kind: 'Namespace' }, a.namespace);
      const terminating = ns.object.metadata?.['deletionTimestamp'] || obj(ns.object['status'])?.['phase'] === 'Terminating';
      if (terminating && a.resource.resource !== 'events') {
        const gr = a.resource.group ? `${a.resource.resource}.${a.resource.group}` : a.resource.resource;
        throw new ApiError(ErrorCode.Forbidden, `${gr}${a.name ? ` ${JSON.stringify(a.name)}` : ''} is forbidden: unable to create new content in namespace ${a.namespace} because it is being terminated`, {
          name: a.name, group: a.resource.group, kind: a.resource.resource,
          causes: [{ reason: 'NamespaceTerminating', message: `namespace ${a.namespace} is being terminated`, field: 'metadata.namespace' }],
        });
      }
    },
  };
}

const isPod = (a: AdmissionRequest) => a.resource.resource === 'pods' && !a.resource.group && !a.subresource;

function serviceAccount(d: PluginDeps): AdmissionPlugin {
  const wait = d.serviceAccountWait ?? { totalMs: 2000, everyMs: 150 };
  const sleep = d.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return {
    name: 'ServiceAccount',
    async admit(a, o) {
      if (a.operation !== 'CREATE' || !isPod(a)) return;
      const spec = obj(o['spec']);
      if (!spec || str(obj(obj(o['metadata'])?.['annotations'])?.[MIRROR])) return;
      if (!str(spec['serviceAccountName'])) spec['serviceAccountName'] = str(spec['serviceAccount']) || 'default';
      if (!d.projectServiceAccountToken || spec['automountServiceAccountToken'] === false) return;
      const sa = await lookup(d, `serviceaccounts/${a.namespace}/${String(spec['serviceAccountName'])}`);
      if (sa?.object['automountServiceAccountToken'] === false) return;
      mountServiceAccountToken(spec);
    },
    async validate(a, o) {
      if (a.operation !== 'CREATE' || !isPod(a) || !o) return;
      const spec = obj(o['spec']) ?? {};
      const mirror = str(obj(obj(o['metadata'])?.['annotations'])?.[MIRROR]);
      const name = str(spec['serviceAccountName']) ?? '';
      if (mirror) {
        if (name) throw forbidden(a, 'a mirror pod may not reference service accounts');
        return;
      }
      const key = `serviceaccounts/${a.namespace}/${name}`;
      if (await lookup(d, key)) return;
      // The default ServiceAccount is made by its controller right after its namespace: look again for a while.
      if (name === 'default') {
        for (let waited = 0; waited < wait.totalMs; waited += wait.everyMs) {
          await sleep(wait.everyMs);
          if (await lookup(d, key)) return;
        }
      }
      throw forbidden(a, `error looking up service account ${a.namespace}/${name}: serviceaccount "${name}" not found`);
    },
  };
}

export const SA_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const API_ACCESS = 'kube-api-access-';
const RAND_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * Upstream's mountServiceAccountToken: a `kube-api-access-<5>` projected volume (a bound token of 3607 s, the
 * cluster CA from kube-root-ca.crt, the namespace), mounted read-only at SA_MOUNT_PATH in every container and init
 * container that does not mount something there already.
 */
export function mountServiceAccountToken(spec: O, random: () => number = Math.random): void {
  const volumes = arr(spec['volumes']).map((v) => obj(v) ?? {});
  let name = volumes.map((v) => str(v['name']) ?? '').find((n) => n.startsWith(API_ACCESS));
  const containers = [...arr(spec['initContainers']), ...arr(spec['containers'])].map((c) => obj(c)).filter((c): c is O => !!c);
  const need = containers.filter((c) => !arr(c['volumeMounts']).some((m) => obj(m)?.['mountPath'] === SA_MOUNT_PATH));
  if (!need.length) return;
  if (!name) {
    name = API_ACCESS + Array.from({ length: 5 }, () => RAND_CHARS[Math.floor(random() * RAND_CHARS.length)]).join('');
    spec['volumes'] = [...volumes, {
      name,
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    }];
  }
  for (const c of need) c['volumeMounts'] = [...arr(c['volumeMounts']), { name, readOnly: true, mountPath: SA_MOUNT_PATH }];
}

/** The labels a kubelet may set on its own Node (upstream's kubeletapis.IsKubeletLabel). */
export function isKubeletLabel(key: string): boolean {
  const allowed = new Set([
    'kubernetes.io/hostname', 'kubernetes.io/os', 'kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'beta.kubernetes.io/instance-type',
    'node.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/zone', 'topology.kubernetes.io/region', 'topology.kubernetes.io/zone',
  ]);
  if (allowed.has(key)) return true;
  const slash = key.indexOf('/');
  const ns = slash < 0 ? '' : key.slice(0, slash);
  return ns === 'kubelet.kubernetes.io' || ns.endsWith('.kubelet.kubernetes.io') || ns === 'node.kubernetes.io' || ns.endsWith('.node.kubernetes.io');
}

/** Whether a label key is one NodeRestriction keeps from nodes: kubernetes.io/ or k8s.io/ and not the kubelet's. */
function restrictedLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const ns = key.slice(0, slash);
  if (ns === 'node-restriction.kubernetes.io' || ns.endsWith('.node-restriction.kubernetes.io')) return true;
  const managed = ns === 'kubernetes.io' || ns.endsWith('.kubernetes.io') || ns === 'k8s.io' || ns.endsWith('.k8s.io');
  return managed && !isKubeletLabel(key);
}

function nodeRestriction(): AdmissionPlugin {
  return {
    name: 'NodeRestriction',
    validate(a, o, old) {
      const node = a.user.node;
      if (!node) return;
      const r = a.resource;
      if (r.resource === 'pods' && !r.group && a.operation === 'CREATE' && !a.subresource) {
        const mirror = str(obj(obj(o?.['metadata'])?.['annotations'])?.[MIRROR]);
        if (!mirror) throw forbidden(a, `pod does not have "${MIRROR}" annotation, node "${node}" can only create mirror pods`);
        if (str(obj(o?.['spec'])?.['nodeName']) !== node) throw forbidden(a, `node "${node}" can only create pods with spec.nodeName set to itself`);
        return;
      }
      if (r.resource !== 'nodes' || r.group || a.operation === 'DELETE') return;
      if (a.name !== node && (a.operation === 'UPDATE' || a.operation === 'CREATE')) throw forbidden(a, `node "${node}" is not allowed to modify node "${a.name}"`);
      const labels = (x: Readonly<O> | null) => (obj(obj(x?.['metadata'])?.['labels']) ?? {}) as Record<string, unknown>;
      const now = labels(o);
      const before = labels(old);
      const changed = [...new Set([...Object.keys(now), ...Object.keys(before)])].filter((k) => now[k] !== before[k]).filter(restrictedLabel).sort();
      if (changed.length) {
        throw forbidden(a, `is not allowed to modify labels: ${changed.join(', ')}`);
      }
      if (a.operation === 'UPDATE' && !deepEqual(arr(obj(o?.['spec'])?.['taints']), arr(obj(old?.['spec'])?.['taints']))) {
        throw forbidden(a, `node "${node}" is not allowed to modify taints`);
      }
    },
  };
}

function defaultTolerations(): AdmissionPlugin {
  return {
    name: 'DefaultTolerationSeconds',
    admit(a, o) {
      if (a.operation !== 'CREATE' || !isPod(a)) return;
      const spec = obj(o['spec']);
      if (spec) defaultTolerationSeconds(spec);
    },
  };
}

/** The plugins by name, for the chain. */
export function makePlugins(d: PluginDeps): Record<PluginName, AdmissionPlugin> {
  return {
    NamespaceLifecycle: namespaceLifecycle(d),
    LimitRanger: limitRanger(d.cache),
    ServiceAccount: serviceAccount(d),
    NodeRestriction: nodeRestriction(),
    Priority: priority(d.cache),
    DefaultTolerationSeconds: defaultTolerations(),
    ResourceQuota: resourceQuota({ cache: d.cache, storage: d.storage, clock: d.clock ?? realClock }),
  };
}
