/**
 * controlplane/auth/node-graph: what the Node authorizer asks about Pods, read from the watch cache (upstream keeps a
 * graph of Pods, Secrets, ConfigMaps and their nodes; here the few lookups are made when a node asks).
 * A Pod refers to a Secret or ConfigMap through its volumes (secret, configMap, projected sources), its containers'
 * env and envFrom, and (Secrets) its imagePullSecrets.
 */
import type { WatchCache } from '../store/watch-cache.js';
import type { NodeGraph } from './authz.js';
import { arr, obj, str } from '../../lib/json/loose.js';
import { POD_NODE_NAME, podNodeName } from '../controllers/indexes.js';

type O = Record<string, unknown>;

const add0 = (set: Set<string>, v: unknown) => {
  const n = str(v);
  if (n) set.add(n);
};

/** The names of the Secrets and ConfigMaps a Pod spec refers to, and its ServiceAccount. */
export function podReferences(spec: O): { secrets: Set<string>; configmaps: Set<string>; serviceaccounts: Set<string> } {
  const secrets = new Set<string>();
  const configmaps = new Set<string>();
  const serviceaccounts = new Set<string>();
  add0(serviceaccounts, spec['serviceAccountName']);
  const add = (set: Set<string>, v: unknown) => {
    const n = str(v);
    if (n) set.add(n);
  };
  for (const s of arr(spec['imagePullSecrets'])) add(secrets, obj(s)?.['name']);
  for (const v of arr(spec['volumes'])) {
    const vol = obj(v) ?? {};
    add(secrets, obj(vol['secret'])?.['secretName']);
    add(configmaps, obj(vol['configMap'])?.['name']);
    for (const src of arr(obj(vol['projected'])?.['sources'])) {
      add(secrets, obj(obj(src)?.['secret'])?.['name']);
      add(configmaps, obj(obj(src)?.['configMap'])?.['name']);
    }
  }
  for (const list of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of arr(spec[list])) {
      const co = obj(c) ?? {};
      for (const e of arr(co['env'])) {
        const from = obj(obj(e)?.['valueFrom']) ?? {};
        add(secrets, obj(from['secretKeyRef'])?.['name']);
        add(configmaps, obj(from['configMapKeyRef'])?.['name']);
      }
      for (const e of arr(co['envFrom'])) {
        add(secrets, obj(obj(e)?.['secretRef'])?.['name']);
        add(configmaps, obj(obj(e)?.['configMapRef'])?.['name']);
      }
    }
  }
  return { secrets, configmaps, serviceaccounts };
}

export function cacheNodeGraph(cache: WatchCache): NodeGraph {
  cache.addIndex('pods', POD_NODE_NAME, podNodeName);
  return {
    boundNode: (namespace, name) => str(obj(cache.get(`pods/${namespace}/${name}`)?.object['spec'])?.['nodeName']),
    referenced: (node, gr, namespace, name) =>
      cache.byIndex('pods', POD_NODE_NAME, node).some((p) => p.object.metadata?.['namespace'] === namespace && podReferences(obj(p.object['spec']) ?? {})[gr].has(name)),
  };
}
