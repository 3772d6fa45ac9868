/**
 * pods/kubelet-api.fake: the API server as the kubelet sees it, in memory,
 * for the kubelet's tests without root: the Pods bound to the node (with a
 * watch that delivers every change on a later turn, as an informer does),
 * their status written by merge patch, the final delete, and the Events.
 * It answers as kubelet-api.ts does against a real server: an HttpError
 * with the status code (404 for a missing Pod's status or a missing Event,
 * 409 for an Event name taken), a final delete of a Pod gone or replaced
 * (another uid) is success, and an Event whose involvedObject is in another
 * namespace is refused (422, as the API server's validation).
 * It also serves what the kubelet reads (objects.ts's PodObjects): the
 * ConfigMaps and Secrets, only those a registered Pod refers to (another
 * read is refused, as the Node authorizer refuses it), and the Services;
 * a change is announced on a later turn, as a watch delivers it. Tokens
 * (requestToken) are issued as TokenRequest does with the node's
 * credentials: only for a Pod bound to the node, its uid and its
 * ServiceAccount (403 otherwise), expiring expirationSeconds from `now`.
 * Tests play the other clients (createPod, deleteGracefully, forceDelete,
 * setConfigMap, setSecret, setService), see every call (`calls`), and make
 * any call fail (`failNext`).
 */
import { HttpError } from './kubelet-api.js';
import type { KubeletApi } from './kubelet.js';
import type { ObjectKind, PodObjects } from './objects.js';
import type { IssuedToken, TokenRequestSpec } from './token-manager.js';

import { obj } from '../../../lib/json/loose.js';

type O = Record<string, unknown>;

export type ApiOp = 'patchPodStatus' | 'deletePod' | 'createEvent' | 'patchEvent' | 'requestToken' | 'getObject' | 'services';

/** What the watch delivers to (the Kubelet's handlers). */
export interface PodWatcher {
  onPod(pod: O): void;
  onPodDeleted(pod: O): void;
}

/** RFC 7386 JSON merge patch: null deletes, objects merge, the rest replaces. Pure. */
function mergePatch(target: unknown, patch: unknown): unknown {
  const p = obj(patch);
  if (!p) return structuredClone(patch);
  const out: O = { ...(obj(target) ?? {}) };
  for (const [k, v] of Object.entries(p)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export class FakeKubeletApi implements KubeletApi, PodObjects {
  /** Every call the kubelet made: `patchPodStatus ns/name`, `deletePod ns/name`, `createEvent ns/name`, `patchEvent ns/name`. */
  readonly calls: string[] = [];
  private readonly pods = new Map<string, O>();
  private readonly evs = new Map<string, O>();
  private readonly failures: { op: ApiOp; error: unknown }[] = [];
  private watcher: PodWatcher | null = null;
  private rv = 1;
  private uids = 1;
  private readonly objects = new Map<string, O>();
  private readonly svcs = new Map<string, O>();
  /** What each Pod registered: `configMap ns/name` and `secret ns/name`. */
  private readonly registered = new Map<string, Set<string>>();
  private readonly listeners: ((kind: ObjectKind | 'service', namespace: string, name: string) => void)[] = [];
  private tokenCount = 0;
  /** The time tokens are issued at (ms); tests point it at their clock. */
  now: () => number = () => 0;
  /** The ServiceAccounts that exist (in every namespace). */
  readonly serviceAccounts = new Set(['default']);
  /** Every token issued: the request and the token. */
  readonly tokens: { req: TokenRequestSpec; token: string }[] = [];

  /** Delivers every Pod change from now on (on a later microtask). */
  watch(w: PodWatcher): void {
    this.watcher = w;
  }

  /** The next call of `op` throws `error` (default: a 500). */
  failNext(op: ApiOp, error: unknown = new HttpError(500, `${op}: 500 injected failure`)): void {
    this.failures.push({ op, error });
  }

  // --- the other clients -----------------------------------------------------------------------------------

  /** A Pod bound to the node, as the scheduler leaves it. */
  createPod(pod: O): O {
    const m = obj(pod['metadata']) ?? {};
    const ns = String(m['namespace'] ?? 'default');
    const made: O = { apiVersion: 'v1', kind: 'Pod', ...structuredClone(pod), metadata: { ...m, namespace: ns, uid: m['uid'] ?? `uid-${this.uids++}`, resourceVersion: String(this.rv++), creationTimestamp: '2030-01-01T00:00:00Z' }, status: { phase: 'Pending' } };
    this.pods.set(`${ns}/${String(m['name'])}`, made);
    this.deliver('add', made);
    return structuredClone(made);
  }

  /** kubectl delete: the deletionTimestamp and the grace period (default the Pod's terminationGracePeriodSeconds, or 30). */
  deleteGracefully(namespace: string, name: string, graceSeconds?: number): void {
    const p = this.must(namespace, name);
    const spec = obj(p['spec']) ?? {};
    const grace = graceSeconds ?? (typeof spec['terminationGracePeriodSeconds'] === 'number' ? spec['terminationGracePeriodSeconds'] : 30);
    p['metadata'] = { ...obj(p['metadata']), deletionTimestamp: '2030-01-01T00:00:00Z', deletionGracePeriodSeconds: grace, resourceVersion: String(this.rv++) };
    this.deliver('update', p);
  }

  /** kubectl delete --force --grace-period=0: gone from the API at once. */
  forceDelete(namespace: string, name: string): void {
    const p = this.must(namespace, name);
    this.pods.delete(`${namespace}/${name}`);
    this.deliver('delete', p);
  }

  pod(namespace: string, name: string): O | undefined {
    const p = this.pods.get(`${namespace}/${name}`);
    return p && structuredClone(p);
  }

  /** The Events about an object (by involvedObject.name), in the order made. */
  events(involvedName?: string): O[] {
    return [...this.evs.values()].filter((e) => involvedName === undefined || obj(e['involvedObject'])?.['name'] === involvedName).map((e) => structuredClone(e));
  }

  /** Creates, replaces (null: deletes) a ConfigMap; a watcher of it hears of it. */
  setConfigMap(namespace: string, name: string, o: O | null): void {
    this.setObject('configMap', namespace, name, o);
  }

  setSecret(namespace: string, name: string, o: O | null): void {
    this.setObject('secret', namespace, name, o);
  }

  setService(namespace: string, name: string, spec: O | null): void {
    const key = `${namespace}/${name}`;
    if (spec) this.svcs.set(key, { metadata: { namespace, name }, spec: structuredClone(spec) });
    else this.svcs.delete(key);
    this.announce('service', namespace, name);
  }

  /** What the Pods registered, sorted: `configMap ns/name`, `secret ns/name`. */
  watched(): string[] {
    return [...new Set([...this.registered.values()].flatMap((x) => [...x]))].sort();
  }

  // --- PodObjects ------------------------------------------------------------------------------------------

  register(uid: string, namespace: string, refs: { readonly configMaps: Iterable<string>; readonly secrets: Iterable<string> }): void {
    this.registered.set(uid, new Set([...[...refs.configMaps].map((n) => `configMap ${namespace}/${n}`), ...[...refs.secrets].map((n) => `secret ${namespace}/${n}`)]));
  }

  unregister(uid: string): void {
    this.registered.delete(uid);
  }

  async get(kind: ObjectKind, namespace: string, name: string): Promise<O | null> {
    this.enter('getObject', `${kind} ${namespace}/${name}`);
    if (!this.watched().includes(`${kind} ${namespace}/${name}`)) throw new HttpError(403, `${kind === 'configMap' ? 'configmaps' : 'secrets'} "${name}" is forbidden: no relationship found between node 'n1' and this object`);
    const o = this.objects.get(`${kind} ${namespace}/${name}`);
    return o ? structuredClone(o) : null;
  }

  async services(): Promise<O[]> {
    this.enter('services', '');
    return [...this.svcs.values()].map((x) => structuredClone(x));
  }

  onChange(fn: (kind: ObjectKind | 'service', namespace: string, name: string) => void): void {
    this.listeners.push(fn);
  }

  // --- KubeletApi ------------------------------------------------------------------------------------------

  async requestToken(req: TokenRequestSpec): Promise<IssuedToken> {
    this.enter('requestToken', `${req.namespace}/${req.serviceAccount}`);
    const p = [...this.pods.values()].find((x) => obj(x['metadata'])?.['uid'] === req.pod.uid);
    const spec = obj(p?.['spec']) ?? {};
    if (!p || obj(p['metadata'])?.['name'] !== req.pod.name || obj(p['metadata'])?.['namespace'] !== req.namespace || (spec['serviceAccountName'] ?? 'default') !== req.serviceAccount) {
      throw new HttpError(403, `serviceaccounts "${req.serviceAccount}" is forbidden: User "system:node:n1" cannot create resource "serviceaccounts/token" in API group "" in the namespace "${req.namespace}": no relationship found between node 'n1' and this object`);
    }
    if (!this.serviceAccounts.has(req.serviceAccount)) throw new HttpError(404, `POST serviceaccounts/${req.serviceAccount}/token: 404 serviceaccounts "${req.serviceAccount}" not found`);
    const token = `tok-${++this.tokenCount}`;
    this.tokens.push({ req: structuredClone(req), token });
    return { token, expiresAt: this.now() + req.expirationSeconds * 1000, expirationSeconds: req.expirationSeconds };
  }

  async patchPodStatus(namespace: string, name: string, status: O): Promise<void> {
    this.enter('patchPodStatus', `${namespace}/${name}`);
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new HttpError(404, `PATCH pods/${name}/status: 404 pods "${name}" not found`);
    const next = mergePatch(p, { status, metadata: { resourceVersion: String(this.rv++) } }) as O;
    this.pods.set(`${namespace}/${name}`, next);
    this.deliver('update', next);
  }

  async deletePod(namespace: string, name: string, uid: string): Promise<void> {
    this.enter('deletePod', `${namespace}/${name}`);
    const p = this.pods.get(`${namespace}/${name}`);
    // Gone already, or another Pod of that name (409 on the precondition): kubelet-api.ts counts both as done.
    if (!p || obj(p['metadata'])?.['uid'] !== uid) return;
    this.pods.delete(`${namespace}/${name}`);
    this.deliver('delete', p);
  }

  async createEvent(namespace: string, event: O): Promise<void> {
    const m = obj(event['metadata']) ?? {};
    const name = String(m['name'] ?? '');
    this.enter('createEvent', `${namespace}/${name}`);
    if (!name || m['namespace'] !== namespace) throw new HttpError(400, `POST events: 400 the namespace of the object (${String(m['namespace'])}) does not match the namespace on the request (${namespace})`);
    const io = obj(event['involvedObject']) ?? {};
    if (io['namespace'] !== undefined && io['namespace'] !== namespace) throw new HttpError(422, `POST events: 422 involvedObject.namespace: Invalid value: "${String(io['namespace'])}": does not match event.namespace`);
    if (this.evs.has(`${namespace}/${name}`)) throw new HttpError(409, `POST events: 409 events "${name}" already exists`);
    this.evs.set(`${namespace}/${name}`, structuredClone(event));
  }

  async patchEvent(namespace: string, name: string, patch: O): Promise<void> {
    this.enter('patchEvent', `${namespace}/${name}`);
    const e = this.evs.get(`${namespace}/${name}`);
    if (!e) throw new HttpError(404, `PATCH events/${name}: 404 events "${name}" not found`);
    this.evs.set(`${namespace}/${name}`, mergePatch(e, patch) as O);
  }

  // --- inside ----------------------------------------------------------------------------------------------

  private enter(op: ApiOp, key: string): void {
    this.calls.push(`${op} ${key}`);
    const i = this.failures.findIndex((f) => f.op === op);
    if (i >= 0) throw this.failures.splice(i, 1)[0]!.error;
  }

  private setObject(kind: ObjectKind, namespace: string, name: string, o: O | null): void {
    const key = `${kind} ${namespace}/${name}`;
    if (o) this.objects.set(key, { ...structuredClone(o), metadata: { namespace, name, resourceVersion: String(this.rv++) } });
    else this.objects.delete(key);
    if (this.watched().includes(key)) this.announce(kind, namespace, name);
  }

  private announce(kind: ObjectKind | 'service', namespace: string, name: string): void {
    for (const fn of this.listeners) queueMicrotask(() => fn(kind, namespace, name));
  }

  private must(namespace: string, name: string): O {
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new Error(`FakeKubeletApi: no pod ${namespace}/${name}`);
    return p;
  }

  private deliver(type: 'add' | 'update' | 'delete', pod: O): void {
    const w = this.watcher;
    if (!w) return;
    const copy = structuredClone(pod);
    queueMicrotask(() => (type === 'delete' ? w.onPodDeleted(copy) : w.onPod(copy)));
  }
}
