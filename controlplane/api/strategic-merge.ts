/**
 * controlplane/api/strategic-merge: the strategic merge patch
 * (`application/strategic-merge-patch+json`, what `kubectl apply` sends),
 * as k8s.io/apimachinery/pkg/util/strategicpatch applies it server-side
 * (`StrategicMergeMapPatch`: MergeParallelList and IgnoreUnmatchedNulls on).
 * Pure.
 *
 * Objects merge key by key, null removes a key. A list is replaced, unless
 * its field carries a patch strategy: `merge` with a merge key merges the
 * items that share the key's value and adds the rest (kubectl adding a
 * Service port must keep the others; a JSON merge patch would drop them),
 * `merge` on a list of scalars unions them. A merged list is ordered as
 * upstream orders it: the patch's items in the patch's order, the server's
 * other items in their own order, interleaved where the server had them
 * before a patch item (a new item comes before them: `kubectl patch` adding
 * a container puts it first). Directives:
 *   `$patch: replace` (the map is the patch; in a list: the list is the
 *   patch's other items), `$patch: delete` (a map becomes {}; a list item
 *   is removed by its merge key);
 *   `$retainKeys: [...]` clears the other keys of the map (strategy
 *   retainKeys; every key the patch sets must be listed);
 *   `$setElementOrder/<list>: [...]` orders the merged list;
 *   `$deleteFromPrimitiveList/<list>: [...]` removes scalars.
 *
 * A value the patch adds where the object had none (or had another JSON
 * type) is taken as it is, less its directives and nulls (upstream's
 * removeDirectives and discardNullValuesFromPatch). Where upstream drops a
 * new map carrying `$patch: replace` (removeDirectives drops every map with
 * a `$patch`), we keep the map without the directive, which is what the
 * directive asks for; the other directive keys are dropped from new values
 * too, rather than left to be reported as unknown fields.
 *
 * The strategies and merge keys are upstream's (the patchStrategy and
 * patchMergeKey tags of the Go types, also in its OpenAPI as
 * x-kubernetes-patch-strategy / -merge-key), for the fields of the served
 * kinds; every other list is atomic, as upstream's are (EndpointSlice's
 * endpoints and ports are `+listType=atomic`, without a patch strategy).
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
  V1ContainerStatus: { volumeMounts: { merge: true, key: 'mountPath' }, allocatedResourcesStatus: { merge: true, key: 'name' } },
  V1PodStatus: {
    conditions: { merge: true, key: 'type' },
    podIPs: { merge: true, key: 'ip' },
    hostIPs: { merge: true, key: 'ip' },
    resourceClaimStatuses: { merge: true, retainKeys: true, key: 'name' },
  },
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
const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
/** Sets an own property (a `__proto__` key from JSON stays data, not a prototype). */
function put(o: Obj, k: string, v: J): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

const PATCH = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER = '$setElementOrder';
const DELETE_FROM = '$deleteFromPrimitiveList';

const show = (v: J): string => JSON.stringify(v);
const noMergeKey = (m: J, key: string) => new StrategicPatchError(`map: ${show(m)} does not contain declared merge key: ${key}`);
const badPatchType = (d: J, m: J) => new StrategicPatchError(`unknown patch type: ${typeof d === 'string' ? d : show(d)} in map: ${show(m)}`);

/** A `$setElementOrder/<f>` or `$deleteFromPrimitiveList/<f>` key: its kind and field, or undefined. */
function listDirective(k: string): { kind: 'order' | 'delete'; field: string } | undefined {
  for (const [prefix, kind, what] of [[SET_ORDER, 'order', 'setElementOrder list'], [DELETE_FROM, 'delete', 'primitive list']] as const) {
    if (!k.startsWith(prefix)) continue;
    if (k[prefix.length] !== '/') throw new StrategicPatchError(`invalid patch format of ${what}: ${show(k)}`);
    return { kind, field: k.slice(prefix.length + 1) };
  }
  return undefined;
}

/** The model a field's values (or list items) are, if it has one. */
function refOf(t: FieldType | undefined): string | undefined {
  while (t && (t.t === 'array' || t.t === 'map')) t = t.t === 'array' ? t.items : t.values;
  return t?.t === 'ref' ? t.ref : undefined;
}

const DROP = Symbol('drop');

/**
 * A value the patch adds whole: without directives and nulls. A list item carrying `$patch` is dropped;
 * a map with `$patch: delete` (or an unknown one) is dropped, with `$patch: replace` it is the rest.
 */
function clean(v: J, inList = false): J | typeof DROP {
  if (Array.isArray(v)) {
    const out: J[] = [];
    for (const x of v) {
      const c = clean(x, true);
      if (c !== DROP) out.push(c);
    }
    return out;
  }
  if (!isObj(v)) return v;
  if (hasOwn(v, PATCH) && (inList || v[PATCH] !== 'replace')) return DROP;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === null || k === PATCH || k === RETAIN_KEYS || k.startsWith(`${SET_ORDER}/`) || k.startsWith(`${DELETE_FROM}/`)) continue;
    const c = clean(x);
    if (c !== DROP) put(out, k, c);
  }
  return out;
}
const cleanList = (v: J[]): J[] => clean(v) as J[];
/** `clean` of a map without `$patch`. */
const cleanObj = (v: Obj): Obj => clean(v) as Obj;

export interface SmpOptions {
  /** Server-side apply: the same merge of the applied configuration. */
  readonly apply?: boolean;
}

/** Applies `patch` to `original` (an object of model `model`). Returns a new object; neither input is modified. */
export function strategicMergePatch(schemas: Schemas, model: string, original: J, patch: J, _opts: SmpOptions = {}): J {
  if (!isObj(patch)) throw new StrategicPatchError('a strategic merge patch must be a JSON object');
  return mergeObject(schemas, model, isObj(original) ? original : {}, patch);
}

function mergeObject(schemas: Schemas, model: string | undefined, orig: Obj, patch: Obj): Obj {
  if (hasOwn(patch, PATCH)) {
    const directive = patch[PATCH];
    if (directive === 'replace') {
      const { [PATCH]: _, ...rest } = patch;
      return cleanObj(rest);
    }
    if (directive === 'delete') return {};
    throw badPatchType(directive, patch);
  }
  const out: Obj = { ...orig };
  const strategies = model ? (PATCH_STRATEGIES[model] ?? {}) : {};
  const fieldOf = (k: string) => (model ? schemas.get(model)?.fields.get(k) : undefined);

  // $retainKeys: every key the patch sets must be listed; the unlisted keys of the object go.
  if (hasOwn(patch, RETAIN_KEYS)) {
    const keep = patch[RETAIN_KEYS];
    if (!Array.isArray(keep)) throw new StrategicPatchError('invalid patch format of retainKeys: $retainKeys must be a list');
    for (const [k, v] of Object.entries(patch)) {
      if (k === RETAIN_KEYS || v === null || k.startsWith(SET_ORDER) || k.startsWith(DELETE_FROM)) continue;
      if (!keep.includes(k)) throw new StrategicPatchError(`invalid patch format of retainKeys: ${show(k)} is set but not in $retainKeys ${show(keep)}`);
    }
    for (const k of Object.keys(out)) if (!keep.includes(k)) delete out[k];
  }

  // $setElementOrder/<f>: merge f now and order it as listed.
  const ordered = new Set<string>();
  for (const [k, order] of Object.entries(patch)) {
    const d = listDirective(k);
    if (d?.kind !== 'order') continue;
    if (!Array.isArray(order)) throw new StrategicPatchError(`invalid patch format of setElementOrder list: ${k} must be a list`);
    const f = d.field;
    if (patch[f] === null) continue; // the list itself is removed
    const s = strategies[f];
    const origList = listAt(out, f);
    const patchList = listAt(patch, f);
    if (patchList) validateOrder(patchList, order, s?.merge ? s.key : undefined, f);
    ordered.add(f);
    let merged: J[];
    if (origList && patchList) merged = s?.merge ? mergeList(schemas, refOf(fieldOf(f)?.type), origList, patchList, s.key, f) : cleanList(patchList);
    else if (patchList) merged = cleanList(patchList);
    else if (origList) merged = origList;
    else continue;
    const kind = elementKind([...(origList ?? []), ...(patchList ?? [])], f);
    const id = identity(kind, s?.merge ? s.key : undefined);
    const listed = new Set(order.map(id));
    put(out, f, normalizeOrder(merged.filter((x) => listed.has(id(x))), merged.filter((x) => !listed.has(id(x))), order, origList ?? [], id));
  }

  const deletions: Array<[string, J[]]> = [];
  for (const [key, value] of Object.entries(patch)) {
    if (key === RETAIN_KEYS) continue;
    const d = listDirective(key);
    if (d) {
      if (d.kind === 'delete') {
        if (!Array.isArray(value)) throw new StrategicPatchError(`invalid patch format of primitive list: ${key} must be a list`);
        deletions.push([d.field, value]);
      }
      continue;
    }
    if (ordered.has(key)) continue;
    if (value === null) {
      delete out[key];
      continue;
    }
    const cur = hasOwn(out, key) ? out[key] : undefined;
    const field = fieldOf(key);
    if (Array.isArray(value) && Array.isArray(cur)) {
      const s = strategies[key];
      put(out, key, s?.merge ? mergeList(schemas, refOf(field?.type), cur, value, s.key, key) : cleanList(value));
    } else if (isObj(value) && isObj(cur)) {
      put(out, key, mergeObject(schemas, field?.type.t === 'map' ? undefined : refOf(field?.type), cur, value));
    } else {
      // New, or of another JSON type than before: the patch's value.
      const c = clean(value);
      if (c === DROP) delete out[key];
      else put(out, key, c);
    }
  }

  // $deleteFromPrimitiveList/<f>, after the merges: whatever the field's strategy, as upstream.
  for (const [f, del] of deletions) {
    const cur = out[f];
    if (!Array.isArray(cur) || (cur.length === 0 && del.length === 0)) continue;
    if (elementKind([...cur, ...del], f) === 'object') throw new StrategicPatchError(`invalid patch format of primitive list: ${f} is a list of objects`);
    const gone = new Set(del.map(scalarId));
    put(out, f, cur.filter((x) => !gone.has(scalarId(x))));
  }
  return out;
}

function listAt(o: Obj, f: string): J[] | undefined {
  if (!hasOwn(o, f) || o[f] === null || o[f] === undefined) return undefined;
  if (!Array.isArray(o[f])) throw new StrategicPatchError(`${f}: expected a list, got ${show(o[f])}`);
  return o[f] as J[];
}

/** The JSON type shared by every item ('object', 'string', ...), as upstream's sliceElementType. */
function elementKind(items: J[], field: string): string | undefined {
  let kind: string | undefined;
  for (const x of items) {
    if (Array.isArray(x)) throw new StrategicPatchError(`${field}: lists of lists are not supported`);
    const k = x === null ? 'null' : typeof x;
    if (kind !== undefined && k !== kind) throw new StrategicPatchError(`${field}: list element types are not identical: ${show(items)}`);
    kind = k;
  }
  return kind;
}

/** Equality of scalars as Go's == on decoded JSON: same type and value. */
const scalarId = (x: J): string => `${x === null ? 'null' : typeof x}:${typeof x === 'object' && x !== null ? show(x) : String(x)}`;

/** The identity of a list item: its merge key's value for keyed lists of objects, else the value. */
function identity(kind: string | undefined, key: string | undefined): (x: J) => string {
  if (kind !== 'object') return scalarId;
  if (!key) return (x) => show(canon(x));
  return (x) => {
    if (!isObj(x) || !hasOwn(x, key)) throw noMergeKey(x, key);
    return scalarId(x[key]);
  };
}

function canon(v: J): J {
  if (Array.isArray(v)) return v.map(canon);
  if (isObj(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}

/** Merges two lists of a field with strategy `merge` (upstream's mergeSlice). */
function mergeList(schemas: Schemas, itemModel: string | undefined, cur: J[], patch: J[], key: string | undefined, field: string): J[] {
  if (cur.length === 0 && patch.length === 0) return [];
  const kind = elementKind([...cur, ...patch], field);
  if (kind !== 'object') {
    const seen = new Set<string>();
    const merged: J[] = [];
    for (const x of [...cur, ...patch]) {
      if (seen.has(scalarId(x))) continue;
      seen.add(scalarId(x));
      merged.push(x);
    }
    const inPatch = new Set(patch.map(scalarId));
    return normalizeOrder(merged.filter((x) => inPatch.has(scalarId(x))), merged.filter((x) => !inPatch.has(scalarId(x))), patch, cur, scalarId);
  }
  if (!key) throw new StrategicPatchError(`cannot merge lists without merge key for ${field}`);
  // The special elements first: deletions (of every item with that key) and replace.
  let server = cur as Obj[];
  let replace = false;
  const plain: Obj[] = [];
  for (const p of patch as Obj[]) {
    if (!hasOwn(p, PATCH)) {
      plain.push(p);
      continue;
    }
    const d = p[PATCH];
    if (d === 'delete') {
      if (!hasOwn(p, key)) throw noMergeKey(p, key);
      const gone = scalarId(p[key]);
      server = server.filter((x) => !(hasOwn(x, key) && scalarId(x[key]) === gone));
    } else if (d === 'replace') replace = true;
    else if (d === 'merge') throw new StrategicPatchError('merging lists cannot yet be specified in the patch');
    else throw badPatchType(d, p);
  }
  let items = plain;
  if (replace) {
    server = plain.map(cleanObj);
    items = [];
  }
  const merged: Obj[] = [...server];
  for (const p of items) {
    if (!hasOwn(p, key)) throw noMergeKey(p, key);
    const want = scalarId(p[key]);
    const i = merged.findIndex((x) => hasOwn(x, key) && scalarId(x[key]) === want);
    if (i >= 0) merged[i] = mergeObject(schemas, itemModel, merged[i]!, p);
    else merged.push(cleanObj(p));
  }
  const id = identity('object', key);
  const inPatch = new Set(items.map(id));
  return normalizeOrder(merged.filter((x) => inPatch.has(id(x))), merged.filter((x) => !inPatch.has(id(x))), items, server, id);
}

/**
 * `$setElementOrder` must agree with the patch list: the patch's items (deletions aside) in the same
 * relative order, and none missing from it (upstream's validatePatchWithSetOrderList).
 */
function validateOrder(patchList: J[], order: J[], key: string | undefined, field: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  let items = patchList;
  if (key) {
    for (const p of patchList) if (!isObj(p)) throw new StrategicPatchError(`${field}: the items of a list merged by "${key}" must be objects`);
    items = patchList.filter((p) => (p as Obj)[PATCH] !== 'delete');
  }
  const id = key ? identity('object', key) : (x: J) => (isObj(x) ? show(canon(x)) : scalarId(x));
  let pi = 0;
  for (let oi = 0; pi < items.length && oi < order.length; ) {
    const p = items[pi];
    if (isObj(p) && hasOwn(p, PATCH)) {
      pi++;
      continue;
    }
    if (id(p) === id(order[oi])) pi++;
    oi++;
  }
  if (pi < items.length) throw new StrategicPatchError(`The order in patch list: ${show(patchList)} doesn't match $setElementOrder list: ${show(order)}`);
}

/**
 * Upstream's normalizeElementOrder: the patch's items sorted by `patchOrder`, the server-only items by
 * `serverOrder`, then interleaved: a server-only item goes before the next patch item only if the server
 * had it before that item (a patch item the server did not have comes first).
 */
function normalizeOrder(patchItems: J[], serverOnly: J[], patchOrder: J[], serverOrder: J[], id: (x: J) => string): J[] {
  const positions = (list: J[]) => {
    const m = new Map<string, number>();
    list.forEach((x, i) => {
      const k = id(x);
      if (!m.has(k)) m.set(k, i);
    });
    return m;
  };
  const sortBy = (items: J[], order: J[]) => {
    const m = positions(order);
    const at = (x: J) => m.get(id(x)) ?? Number.MAX_SAFE_INTEGER;
    return items.map((x, i) => ({ x, i, at: at(x) })).sort((a, b) => a.at - b.at || a.i - b.i).map((e) => e.x);
  };
  const left = sortBy(serverOnly, serverOrder);
  const right = sortBy(patchItems, patchOrder);
  const server = positions(serverOrder);
  const out: J[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (j >= right.length) out.push(left[i++]);
    else if (i >= left.length) out.push(right[j++]);
    else {
      const li = server.get(id(left[i]));
      const ri = server.get(id(right[j]));
      if (li !== undefined && ri !== undefined && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

/** The schema of a path, exported for the tests. */
export { fieldAt };
