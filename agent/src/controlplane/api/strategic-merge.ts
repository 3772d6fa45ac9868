/**
 * controlplane/api/strategic-merge: the strategic merge patch
 * (`application/strategic-merge-patch+json`, what `kubectl apply` sends),
 * as k8s.io/apimachinery/pkg/util/strategicpatch applies it (pure).
 *
 * Objects merge key by key, null removes a key. A list is replaced, unless
 * its field carries a patch strategy: `merge` with a merge key merges the
 * items that share the key's value and appends the rest (kubectl adding a
 * Service port must keep the others; a JSON merge patch would drop them),
 * `merge` on a list of scalars unions them. Directives:
 *   `$patch: replace | delete` on an object or a list item;
 *   `$retainKeys: [...]` keeps only those keys of an object (strategy retainKeys);
 *   `$setElementOrder/<list>: [...]` orders the merged list;
 *   `$deleteFromPrimitiveList/<list>: [...]` removes scalars.
 *
 * The strategies and merge keys are upstream's (the patchStrategy and
 * patchMergeKey tags of the Go types, also in its OpenAPI as
 * x-kubernetes-patch-strategy / -merge-key), for the fields of the served
 * kinds; every other list is atomic, as upstream's are.
 */
import { fieldAt, type FieldType, type Schemas } from './schema.js';

interface ListStrategy {
  readonly merge?: boolean;
  readonly retainKeys?: boolean;
  readonly key?: string;
}

const container: Record<string, ListStrategy> = {
  ports: { merge: true, key: 'containerPort' },
  env: { merge: true, key: 'name' },
  volumeMounts: { merge: true, key: 'mountPath' },
  volumeDevices: { merge: true, key: 'devicePath' },
};

/** model → field → strategy. */
export const PATCH_STRATEGIES: Readonly<Record<string, Readonly<Record<string, ListStrategy>>>> = {
  V1ObjectMeta: { ownerReferences: { merge: true, key: 'uid' }, finalizers: { merge: true } },
  V1PodSpec: {
    containers: { merge: true, key: 'name' },
    initContainers: { merge: true, key: 'name' },
    ephemeralContainers: { merge: true, key: 'name' },
    volumes: { merge: true, retainKeys: true, key: 'name' },
    imagePullSecrets: { merge: true, key: 'name' },
    hostAliases: { merge: true, key: 'ip' },
    topologySpreadConstraints: { merge: true, key: 'topologyKey' },
    resourceClaims: { merge: true, retainKeys: true, key: 'name' },
    schedulingGates: { merge: true, key: 'name' },
  },
  V1Container: container,
  V1EphemeralContainer: container,
  V1PodStatus: { conditions: { merge: true, key: 'type' }, podIPs: { merge: true, key: 'ip' }, hostIPs: { merge: true, key: 'ip' } },
  V1ServiceSpec: { ports: { merge: true, key: 'port' } },
  V1ServiceStatus: { conditions: { merge: true, key: 'type' } },
  V1NodeSpec: { podCIDRs: { merge: true } },
  V1NodeStatus: { conditions: { merge: true, key: 'type' }, addresses: { merge: true, key: 'type' } },
  V1NamespaceStatus: { conditions: { merge: true, key: 'type' } },
  V1DeploymentSpec: { strategy: { retainKeys: true } },
  V1DeploymentStatus: { conditions: { merge: true, key: 'type' } },
  V1ReplicaSetStatus: { conditions: { merge: true, key: 'type' } },
};

export class StrategicPatchError extends Error {
  override name = 'StrategicPatchError';
}

type J = unknown;
type Obj = Record<string, J>;
const isObj = (v: J): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The model a field's values (or list items) are, if it has one. */
function refOf(t: FieldType | undefined): string | undefined {
  while (t && (t.t === 'array' || t.t === 'map')) t = t.t === 'array' ? t.items : t.values;
  return t?.t === 'ref' ? t.ref : undefined;
}

/** Removes every directive key from a value a patch adds whole. */
function strip(v: J): J {
  if (Array.isArray(v)) return v.filter((x) => !(isObj(x) && x['$patch'] === 'delete')).map(strip);
  if (!isObj(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = strip(x);
  return out;
}

export interface SmpOptions {
  /** Server-side apply: the same merge of the applied configuration. */
  readonly apply?: boolean;
}

/** Applies `patch` to `original` (an object of model `model`). Returns a new object. */
export function strategicMergePatch(schemas: Schemas, model: string, original: J, patch: J, _opts: SmpOptions = {}): J {
  if (!isObj(patch)) throw new StrategicPatchError('a strategic merge patch must be a JSON object');
  const out = mergeObject(schemas, model, isObj(original) ? original : {}, patch);
  return out === DELETE ? {} : out;
}

const DELETE = Symbol('delete');

function mergeObject(schemas: Schemas, model: string | undefined, orig: Obj, patch: Obj): Obj | typeof DELETE {
  const directive = patch['$patch'];
  if (directive === 'delete') return DELETE;
  if (directive === 'replace') return strip(patch) as Obj;
  if (directive !== undefined) throw new StrategicPatchError(`unknown patch type: ${JSON.stringify(directive)} in map`);
  const out: Obj = { ...orig };
  const strategies = model ? (PATCH_STRATEGIES[model] ?? {}) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) {
      delete out[key];
      continue;
    }
    const field = model ? schemas.get(model)?.fields.get(key) : undefined;
    const childModel = refOf(field?.type);
    if (Array.isArray(value)) {
      const s = strategies[key];
      const cur = Array.isArray(out[key]) ? (out[key] as J[]) : [];
      if (s?.merge && s.key) out[key] = mergeListByKey(schemas, childModel, cur, value, s.key, key);
      else if (s?.merge) out[key] = mergeScalars(cur, value);
      else out[key] = strip(value);
      continue;
    }
    if (isObj(value)) {
      const child = field?.type.t === 'map' ? undefined : childModel;
      const merged = mergeObject(schemas, child, isObj(out[key]) ? (out[key] as Obj) : {}, value);
      if (merged === DELETE) delete out[key];
      else out[key] = merged;
      continue;
    }
    out[key] = value;
  }
  // Directives about lists of this object.
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const f = key.slice('$deleteFromPrimitiveList/'.length);
      if (!Array.isArray(value)) throw new StrategicPatchError(`${key} must be a list`);
      if (Array.isArray(out[f])) out[f] = (out[f] as J[]).filter((x) => !value.some((d) => JSON.stringify(d) === JSON.stringify(x)));
    } else if (key.startsWith('$setElementOrder/')) {
      const f = key.slice('$setElementOrder/'.length);
      if (!Array.isArray(value)) throw new StrategicPatchError(`${key} must be a list`);
      if (Array.isArray(out[f])) out[f] = reorder(out[f] as J[], value, strategies[f]?.key, Array.isArray(orig[f]) ? (orig[f] as J[]) : []);
    }
  }
  if ('$retainKeys' in patch) {
    const keep = patch['$retainKeys'];
    if (!Array.isArray(keep)) throw new StrategicPatchError('$retainKeys must be a list');
    for (const k of Object.keys(out)) if (!keep.includes(k)) delete out[k];
  }
  return out;
}

function keyOf(item: J, key: string): string | undefined {
  return isObj(item) && item[key] !== undefined ? JSON.stringify(item[key]) : undefined;
}

function mergeListByKey(schemas: Schemas, itemModel: string | undefined, cur: J[], patch: J[], key: string, field: string): J[] {
  if (patch.some((p) => isObj(p) && p['$patch'] === 'replace')) return strip(patch.filter((p) => !(isObj(p) && p['$patch'] === 'replace'))) as J[];
  const out = cur.map((x) => x);
  for (const p of patch) {
    if (!isObj(p)) throw new StrategicPatchError(`${field}: the items of a list merged by "${key}" must be objects`);
    const k = keyOf(p, key);
    if (k === undefined) throw new StrategicPatchError(`map: ${JSON.stringify(strip(p))} does not contain declared merge key: ${key}`);
    const i = out.findIndex((x) => keyOf(x, key) === k);
    if (p['$patch'] === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i >= 0) {
      const merged = mergeObject(schemas, itemModel, out[i] as Obj, p);
      if (merged === DELETE) out.splice(i, 1);
      else out[i] = merged;
    } else out.push(strip(p));
  }
  return out;
}

function mergeScalars(cur: J[], patch: J[]): J[] {
  if (patch.some((p) => isObj(p) && p['$patch'] === 'replace')) return patch.filter((p) => !isObj(p));
  const out = [...cur];
  for (const p of patch) if (!out.some((x) => JSON.stringify(x) === JSON.stringify(p))) out.push(p);
  return out;
}

/**
 * `$setElementOrder`: the listed items first, in that order; items not listed (another client's) keep
 * their place after the item that preceded them in the server's list.
 */
function reorder(list: J[], order: J[], key: string | undefined, server: J[]): J[] {
  const id = (x: J) => (key ? keyOf(x, key) : JSON.stringify(x));
  const wanted = order.map(id);
  const byId = new Map(list.map((x) => [id(x), x] as const));
  const out: J[] = [];
  for (const w of wanted) if (w !== undefined && byId.has(w)) out.push(byId.get(w)!);
  const placed = new Set(out.map(id));
  const serverIds = server.map(id);
  for (const x of list) {
    const xi = id(x);
    if (placed.has(xi)) continue;
    const at = serverIds.indexOf(xi);
    let insertAfter = -1;
    for (let j = at - 1; j >= 0; j--) {
      const idx = out.findIndex((o) => id(o) === serverIds[j]);
      if (idx >= 0) {
        insertAfter = idx;
        break;
      }
    }
    out.splice(insertAfter + 1, 0, x);
    placed.add(xi);
  }
  return out;
}

/** The schema of a path, exported for the tests. */
export { fieldAt };
