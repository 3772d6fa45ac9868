/**
 * controlplane/api/rest: the verbs on objects, kube-apiserver's generic
 * registry (k8s.io/apiserver/pkg/registry/generic/registry/store.go) over
 * the storage interface (writes) and the watch cache (reads). HTTP-free: the server (server.ts) parses requests into these
 * calls and writes what they return.
 *
 * Create: decode as the kind's schema (wrong JSON types are 400, unknown
 * fields dropped and reported per fieldValidation), the object's
 * apiVersion/kind/namespace checked against the request, metadata set
 * (uid, creationTimestamp, generation 1, a generateName suffix), defaults,
 * the status a new object starts with, validation (422 naming each field),
 * then the store. Nothing is stored unless everything passed.
 * Update: the same, with the stored object's resourceVersion (and uid) as
 * the precondition when the body carries one, the server-owned metadata
 * kept, the status kept (main resource) or only the status taken
 * (`/status`), the kind's PrepareForUpdate (a Service keeps its allocated
 * IPs), the generation moved on as the kind counts it (kinds without one,
 * such as Services, have none), and no write at all when nothing changed.
 * Events and Leases are created by an update when missing.
 * Binding (`pods/<name>/binding`, the scheduler's): spec.nodeName set once,
 * with the PodScheduled condition, on the stored Pod as it is.
 * Delete: preconditions, finalizers (the object only gets a
 * deletionTimestamp until they are gone), propagation policy (Foreground
 * and Orphan are finalizers the garbage collector acts on; Background
 * leaves the dependents to it), dryRun; always 200, with the object or,
 * for kinds that do not return it, a Status. A Namespace with
 * spec.finalizers turns Terminating; `finalizeNamespace` (the namespace
 * controller's /finalize) lets it go.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { STRATEGIES, nameProblems, validateMeta, type Strategy } from '../kinds/kinds.js';
import { ConflictError, guaranteedUpdate, StaleRead, TxnFailed, type Storage, type TxnOp, type UpdateDecision } from '../store/storage.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, Stored } from '../store/types.js';
import { ApiError, apiErrors, fieldErr, successStatus, type FieldError, type Status } from './errors.js';
import { applyJsonPatch, applyMergePatch } from './patch.js';
import { apiVersionOf, grOf, type Resource } from './resources.js';
import { decode, DecodeError, type Schemas } from './schema.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, SelectorError, type FieldRequirement, type LabelRequirement } from './selectors.js';
import { strategicMergePatch, StrategicPatchError } from './strategic-merge.js';
import type { Allocation, ServiceAllocator } from '../alloc/service-allocator.js';
import { obj, arr } from '../../lib/json/loose.js';
import type { Admission, AdmissionRequest, Operation } from '../admission/admission.js';
import type { User } from '../auth/authz.js';

/** Who writes when a call names no user: the API server itself (upstream's loopback identity). */
export const APISERVER_USER: User = { name: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] };

type O = Record<string, unknown>;

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';
/** The subresources an update goes through. */
export type Sub = 'status' | 'scale' | 'finalize' | 'binding';
export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export interface WriteOptions {
  readonly dryRun?: boolean;
  readonly fieldValidation?: FieldValidation;
  readonly fieldManager?: string;
  /**
   * Validating admission for this request (the server's chain: RBAC's escalation check, ...): called with the object
   * as it would be stored, after defaults and validation, with the stored one on an update (null on a create).
   * It throws to refuse; nothing is written then.
   */
  readonly admit?: (o: Readonly<Record<string, unknown>>, old: Readonly<Record<string, unknown>> | null) => void;
  /** Who asks: the admission chain's user (the API server itself when absent). */
  readonly user?: User;
}

export interface WriteResult {
  readonly object: KObject;
  /** HTTP status: 201 for a create, 200 otherwise. */
  readonly code: number;
  readonly warnings: readonly string[];
}

export interface ListQuery {
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  readonly limit?: number | undefined;
  readonly continue?: string | undefined;
  readonly resourceVersion?: string | undefined;
  readonly resourceVersionMatch?: string | undefined;
}

export interface DeleteOptions {
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground' | undefined;
  readonly gracePeriodSeconds?: number | undefined;
  readonly preconditions?: { uid?: string; resourceVersion?: string } | undefined;
  readonly dryRun?: boolean | undefined;
  /** Who asks: the admission chain's user (the API server itself when absent). */
  readonly user?: User | undefined;
}

export interface Selectors {
  readonly labels: readonly LabelRequirement[];
  readonly fields: readonly FieldRequirement[];
}

const GENERATE_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/** The kinds whose DELETE answers with the deleted object (ReturnDeletedObject); the others answer with a Status. */
const RETURNS_DELETED_OBJECT = new Set(['pods', 'services', 'namespaces']);

/** Finalizers the garbage collector owns. */
export const FOREGROUND = 'foregroundDeletion';
export const ORPHAN = 'orphan';

/** RFC 3339 with seconds, as metav1.Time marshals. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export interface RestDeps {
  /** Where writes go (compare-and-swap on the revision read). */
  readonly storage: Storage;
  /** Where reads come from; a read that must see every acknowledged write waits for it (cache.fresh()). */
  readonly cache: WatchCache;
  readonly schemas: Schemas;
  readonly clock: Clock;
  readonly uid?: () => string;
  /** ClusterIPs and NodePorts for Services, in the create and update path; absent: Services keep what they are given. */
  readonly services?: ServiceAllocator;
  /**
   * The admission chain every create, update and delete goes through (mutating after defaults, validating after the
   * kind's validation). Absent: none, as a fake client's store (the controllers' unit tests).
   */
  readonly admission?: Admission;
}

/** The verbs a component inside the control plane uses: Rest itself, or a LoopbackRest acting as one user. */
export type RestClient = Pick<Rest, 'create' | 'update' | 'patch' | 'delete' | 'get' | 'list' | 'readModifyWrite' | 'key' | 'clock'>;

export class Rest {
  private readonly uid: () => string;

  constructor(private readonly deps: RestDeps) {
    this.uid = deps.uid ?? randomUUID;
  }

  /** The clock the registry's timestamps come from. */
  get clock(): Clock {
    return this.deps.clock;
  }

  key(r: Resource, namespace: string, name: string): string {
    return `${grOf(r)}/${r.namespaced ? namespace : ''}/${name}`;
  }

  strategy(r: Resource): Strategy {
    return STRATEGIES[grOf(r)]!;
  }

  /** A GET: consistent (it sees every acknowledged write), as kube-apiserver's GET without resourceVersion. */
  async get(r: Resource, namespace: string, name: string): Promise<Stored> {
    await this.deps.cache.fresh();
    const s = this.deps.cache.get(this.key(r, namespace, name));
    if (!s) throw apiErrors.notFound(r, name);
    return s;
  }

  parseSelectors(r: Resource, q: { labelSelector?: string | undefined; fieldSelector?: string | undefined }): Selectors {
    try {
      return {
        labels: q.labelSelector ? parseLabelSelector(q.labelSelector) : [],
        fields: q.fieldSelector ? parseFieldSelector(q.fieldSelector, r.fieldSelectors) : [],
      };
    } catch (e) {
      if (e instanceof SelectorError) throw apiErrors.badRequest(e.message);
      throw e;
    }
  }

  matches(r: Resource, sel: Selectors, o: KObject): boolean {
    if (sel.labels.length && !matchesLabels(sel.labels, obj(o.metadata?.['labels']) as Record<string, string> | undefined)) return false;
    if (sel.fields.length && !matchesFields(sel.fields, r.fields(o))) return false;
    return true;
  }

  /** A list: items (possibly one page), the revision it is consistent at, and a continue token. */
  async list(r: Resource, namespace: string | undefined, q: ListQuery): Promise<{ items: readonly Stored[]; rev: number; continue?: string; remaining?: number }> {
    const sel = this.parseSelectors(r, q);
    const gr = grOf(r);
    const cache = this.deps.cache;
    // No resourceVersion: a consistent list (every acknowledged write); "0": whatever the cache holds.
    if (!q.continue && !q.resourceVersion) await cache.fresh();
    let rev = cache.rev;
    let after = '';
    if (q.continue) {
      const c = decodeContinue(q.continue);
      rev = c.rev;
      after = c.after;
    } else if (q.resourceVersion && q.resourceVersion !== '0') {
      const want = parseRV(q.resourceVersion);
      if (q.resourceVersionMatch === 'Exact') rev = want;
      else if (q.resourceVersionMatch && q.resourceVersionMatch !== 'NotOlderThan') throw apiErrors.badRequest(`resourceVersionMatch: Unsupported value: ${JSON.stringify(q.resourceVersionMatch)}: supported values: "Exact", "NotOlderThan"`);
      else if (want > cache.rev) throw new NodenetError(ErrorCode.Timeout, `Too large resource version: ${want}, current: ${cache.rev}`);
    } else if (q.resourceVersionMatch) {
      if (!q.resourceVersion) throw apiErrors.badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
    }
    let all: readonly Stored[];
    try {
      // At the current revision the cache hands out just the namespace's run of keys; at an older one it rebuilds the
      // lot from its ring, or the storage does when the ring no longer reaches back (a continue from long ago).
      all = rev === cache.rev ? cache.list(gr, r.namespaced ? namespace : undefined).items : await this.listAt(gr, rev);
    } catch (e) {
      if (e instanceof NodenetError && e.code === ErrorCode.Expired && q.continue) {
        throw apiErrors.expired('The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
      }
      throw e;
    }
    const prefix = r.namespaced && namespace !== undefined ? `${gr}/${namespace}/` : '';
    const items: Stored[] = [];
    const limit = q.limit && q.limit > 0 ? q.limit : Infinity;
    // `all` is sorted by key: start at the first key past the continue point (and in the namespace), stop past the namespace.
    const from = after && after >= prefix ? after : prefix;
    let lo = 0;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const k = all[mid]!.key;
      if (k < from || (k === from && from === after)) lo = mid + 1;
      else hi = mid;
    }
    let i = lo;
    let end = all.length;
    if (prefix) {
      let a = lo;
      let b = all.length;
      while (a < b) {
        const mid = (a + b) >>> 1;
        if (all[mid]!.key.startsWith(prefix) || all[mid]!.key < prefix) a = mid + 1;
        else b = mid;
      }
      end = a;
    }
    for (; i < end; i++) {
      const s = all[i]!;
      if (!this.matches(r, sel, s.object)) continue;
      if (items.length === limit) break;
      items.push(s);
    }
    const out: { items: readonly Stored[]; rev: number; continue?: string; remaining?: number } = { items, rev };
    if (i < end && items.length === limit) {
      out.continue = encodeContinue(rev, items[items.length - 1]!.key);
      if (!sel.labels.length && !sel.fields.length) out.remaining = end - i;
    }
    return out;
  }

  /**
   * Decodes a request body as the kind, checking apiVersion and kind. `patch`: the body is a patched
   * object, whose strict-decoding errors kube-apiserver reports without the "cannot be handled" prefix.
   */
  decodeBody(r: Resource, body: unknown, fv: FieldValidation, warnings: string[], from: 'body' | 'patch' = 'body'): O {
    const o = obj(body);
    if (!o) throw apiErrors.badRequest(`the body of the request must be a JSON object (a ${r.kind})`);
    const av = o['apiVersion'];
    const kind = o['kind'];
    if (av !== undefined && av !== apiVersionOf(r)) {
      throw apiErrors.badRequest(`the API version in the data (${String(av)}) does not match the expected API version (${apiVersionOf(r)})`);
    }
    if (kind !== undefined && kind !== r.kind) throw apiErrors.badRequest(`the kind in the data (${String(kind)}) does not match the expected kind (${r.kind})`);
    const problems = { unknown: [] as string[] };
    let decoded: O;
    try {
      decoded = decode(this.deps.schemas, r.model, o, problems) as O;
    } catch (e) {
      if (e instanceof DecodeError) throw apiErrors.badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${e.message}`);
      throw e;
    }
    if (problems.unknown.length) {
      if (fv === 'Strict') {
        const msg = `strict decoding error: ${problems.unknown.map((f) => `unknown field "${f}"`).join(', ')}`;
        // transformDecodeError, as for a wrong JSON type.
        throw apiErrors.badRequest(from === 'body' ? `${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${msg}` : msg);
      }
      if (fv === 'Warn') for (const f of problems.unknown) warnings.push(`unknown field "${f}"`);
    }
    decoded['apiVersion'] = apiVersionOf(r);
    decoded['kind'] = r.kind;
    decoded['metadata'] = obj(decoded['metadata']) ?? {};
    return decoded;
  }

  private async listAt(gr: string, rev: number): Promise<readonly Stored[]> {
    try {
      return this.deps.cache.listAt(gr, rev);
    } catch (e) {
      if (e instanceof NodenetError && e.code === ErrorCode.Expired) return this.deps.cache.listFromStorage(gr, rev);
      throw e;
    }
  }

  /** The object under key: the cache's, or the storage's when the cache has not seen it (yet). */
  private async lookup(key: string): Promise<Stored | undefined> {
    return this.deps.cache.get(key) ?? (await this.deps.storage.get(key));
  }

  private validate(r: Resource, o: O, old: O | null): void {
    const s = this.strategy(r);
    const meta = obj(o['metadata'])!;
    const name = String(meta['name'] ?? '');
    const errs: FieldError[] = [];
    if (!old) for (const np of nameProblems(s.nameRule, name)) errs.push(fieldErr.invalid('metadata.name', name, np));
    errs.push(...validateMeta(meta), ...s.validate(o, old));
    if (errs.length) throw apiErrors.invalid(r, name, errs);
  }

  private request(operation: Operation, r: Resource, namespace: string, name: string, sub: string, opts: { dryRun?: boolean | undefined; user?: User | undefined }): AdmissionRequest {
    return { operation, resource: r, subresource: sub, namespace: r.namespaced ? namespace : '', name, user: opts.user ?? APISERVER_USER, dryRun: opts.dryRun === true };
  }

  /** @param operation the managedFields operation: `Apply` when server-side apply creates the object */
  async create(r: Resource, namespace: string, body: unknown, opts: WriteOptions = {}, operation: 'Update' | 'Apply' = 'Update'): Promise<WriteResult> {
    const warnings: string[] = [];
    const o = this.decodeBody(r, body, opts.fieldValidation ?? 'Warn', warnings);
    const meta = obj(o['metadata'])!;
    if (r.namespaced) {
      if (meta['namespace'] !== undefined && meta['namespace'] !== '' && meta['namespace'] !== namespace) {
        throw apiErrors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      meta['namespace'] = namespace;
    } else delete meta['namespace'];
    if (meta['resourceVersion'] !== undefined && meta['resourceVersion'] !== '') throw apiErrors.badRequest('resourceVersion should not be set on objects to be created');
    const generate = typeof meta['generateName'] === 'string' && meta['generateName'] !== '' && !meta['name'];
    if (!meta['name'] && !generate) throw apiErrors.invalid(r, '', [fieldErr.required('metadata.name', 'name or generateName is required')]);
    const s = this.strategy(r);
    const now = this.deps.clock.now();
    for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink', 'managedFields']) delete meta[k];
    meta['uid'] = this.uid();
    meta['creationTimestamp'] = rfc3339(now);
    // Only the kinds that track one have a generation (a Service or a Namespace has none).
    if (s.bumpsGeneration) meta['generation'] = 1;
    else delete meta['generation'];
    meta['managedFields'] = [managedEntry(opts.fieldManager ?? 'unknown', operation, apiVersionOf(r), now)];
    s.defaults(o);
    s.prepareForCreate?.(o);
    if (r.subresources.includes('status') || s.initialStatus) {
      const st = s.initialStatus?.(o);
      if (st === undefined) delete o['status'];
      else o['status'] = st;
    }
    const admission = this.deps.admission;
    const req = () => this.request('CREATE', r, namespace, String(meta['name'] ?? meta['generateName'] ?? ''), '', opts);
    await admission?.admit(req(), o, null);
    for (let attempt = 0; ; attempt++) {
      if (generate) {
        let suffix = '';
        for (let i = 0; i < 5; i++) suffix += GENERATE_CHARS[Math.floor(Math.random() * GENERATE_CHARS.length)];
        meta['name'] = `${String(meta['generateName'])}${suffix}`;
      }
      this.validate(r, o, null);
      opts.admit?.(o, null);
      const key = this.key(r, namespace, String(meta['name']));
      // Before the validating admission (upstream's store finds it after): a create of a name that is taken charges
      // no quota.
      if (this.deps.cache.get(key) && !generate) throw apiErrors.alreadyExists(r, String(meta['name']));
      await admission?.validate(req(), o, null);
      // Each attempt allocates afresh (a generated name that was taken gives back what it was given).
      const a = r.resource === 'services' ? structuredClone(o) : o;
      const alloc = this.allocate(r, key, a, null);
      const reservation = alloc?.reservation;
      if (opts.dryRun) {
        reservation?.done();
        if (await this.lookup(key)) throw apiErrors.alreadyExists(r, String(meta['name']));
        return { object: a as KObject, code: 201, warnings };
      }
      try {
        // A Service and the objects of the values it takes: one transaction.
        const stored = alloc?.ops.length ? (await this.deps.storage.txn([{ op: 'create', key, obj: a as KObject }, ...alloc.ops]))[0]! : await this.deps.storage.create(key, a as KObject);
        return { object: stored.object as KObject, code: 201, warnings };
      } catch (e) {
        // Another writer took one of the values first: choose again (a value the client asked for is then refused).
        if (this.allocationTaken(e) && attempt < 8) continue;
        const err = e instanceof TxnFailed ? e.cause : e;
        if (err instanceof NodenetError && err.code === ErrorCode.AlreadyExists) {
          if (generate && attempt < 8) continue;
          throw apiErrors.alreadyExists(r, String(meta['name']));
        }
        throw err;
      } finally {
        reservation?.done();
      }
    }
  }

  /**
   * PUT. `sub` is 'status' or undefined. The body's resourceVersion, when set, is the precondition.
   */
  async update(r: Resource, namespace: string, name: string, body: unknown, opts: WriteOptions & { sub?: 'status' | undefined } = {}): Promise<WriteResult> {
    const warnings: string[] = [];
    const o = this.decodeBody(r, body, opts.fieldValidation ?? 'Warn', warnings);
    const meta = obj(o['metadata'])!;
    if (meta['name'] !== undefined && meta['name'] !== name) throw apiErrors.badRequest(`the name of the object (${String(meta['name'])}) does not match the name on the URL (${name})`);
    if (r.namespaced && meta['namespace'] !== undefined && meta['namespace'] !== '' && meta['namespace'] !== namespace) {
      throw apiErrors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const rv = meta['resourceVersion'];
    const expect = rv === undefined || rv === '' ? undefined : parseRV(String(rv));
    if (!opts.sub && this.strategy(r).allowCreateOnUpdate && !(await this.lookup(this.key(r, namespace, name)))) {
      // AllowCreateOnUpdate: the PUT creates the object (its resourceVersion is not a precondition then).
      const m: O = { ...(obj((body as O)['metadata']) ?? {}), name };
      delete m['resourceVersion'];
      return this.create(r, namespace, { ...(body as O), metadata: m }, opts);
    }
    const uid = meta['uid'];
    return this.readModifyWrite(
      r,
      namespace,
      name,
      (cur) => {
        // A uid in the body is a precondition (defaultUpdatedObjectInfo.Preconditions).
        const have = cur.object.metadata?.['uid'];
        if (typeof uid === 'string' && uid !== '' && uid !== have) throw apiErrors.conflict(r, name, `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${String(have)}`);
        return o;
      },
      expect,
      opts,
      warnings,
    );
  }

  /**
   * A read-modify-write (the storage's guaranteedUpdate): `next` makes the object from the current one; on a lost race
   * it runs again on the version that won, unless the client gave a resourceVersion (then the race is a 409). The
   * update path (prepare, validate, allocate, managedFields, no-op) for every verb; the kinds' own verbs
   * (registry/) build on it.
   */
  async readModifyWrite(
    r: Resource,
    namespace: string,
    name: string,
    next: (cur: Stored) => O,
    expect: number | undefined,
    opts: WriteOptions & { sub?: Sub | undefined; operation?: 'Update' | 'Apply' },
    warnings: string[],
  ): Promise<WriteResult> {
    const key = this.key(r, namespace, name);
    for (let round = 0; ; round++) {
      let alloc: Allocation | undefined;
      let answer: WriteResult | null = null;
      try {
        const out = await this.guarded(r, name, key, async (cur) => {
          // Each attempt allocates afresh: the last attempt's reservation is over.
          alloc?.reservation.done();
          alloc = undefined;
          answer = null;
          if (expect !== undefined && cur.rev !== expect) throw apiErrors.conflict(r, name);
          const old = cur.object as O;
          const o = next(cur);
          const merged = this.prepareUpdate(r, o, old, opts.sub);
          // A binding is a create of pods/binding, as upstream's admission sees it.
          const req = this.request(opts.sub === 'binding' ? 'CREATE' : 'UPDATE', r, namespace, name, opts.sub ?? '', opts);
          await this.deps.admission?.admit(req, merged, old);
          this.validate(r, merged, old);
          opts.admit?.(merged, old);
          await this.deps.admission?.validate(req, merged, old);
          alloc = this.allocate(r, key, merged, old as KObject);
          const d = this.decideUpdate(r, key, merged, old, opts, warnings, alloc?.ops ?? [], cur.stale === true);
          if ('keep' in d) answer = d.answer ?? null;
          return d;
        });
        if (out.outcome === 'kept') return answer!;
        return { object: out.stored.object as KObject, code: 200, warnings };
      } catch (e) {
        // Another writer took a value this update allocated: choose again.
        if (this.allocationTaken(e) && round < 8) continue;
        throw e instanceof TxnFailed ? e.cause : e;
      } finally {
        alloc?.reservation.done();
      }
    }
  }

  /** A transaction failed on an allocation object another writer holds: the allocator counts it taken. */
  private allocationTaken(e: unknown): boolean {
    return e instanceof TxnFailed && e.index > 0 && e.code === ErrorCode.AlreadyExists && this.deps.services !== undefined && this.deps.services.taken(e.op.key);
  }

  /**
   * guaranteedUpdate with the cache's version as the first guess, and the API's errors: a precondition that fails on
   * the cached version is checked again on the storage's (the cache may lag it), a missing object is a 404, and a race
   * lost 16 times, or lost against a client's precondition, a 409.
   */
  private async guarded(r: Resource, name: string, key: string, decide: (cur: Stored) => UpdateDecision | Promise<UpdateDecision>): Promise<{ outcome: 'written' | 'deleted' | 'kept'; stored: Stored }> {
    try {
      return await guaranteedUpdate(
        this.deps.storage,
        key,
        async (cur, fresh) => {
          try {
            return await decide(cur);
          } catch (e) {
            if (!fresh && e instanceof NodenetError && e.code === ErrorCode.Conflict) throw new StaleRead(e);
            throw e;
          }
        },
        { cached: this.deps.cache.get(key), attempts: 17 },
      );
    } catch (e) {
      if (e instanceof ConflictError) throw apiErrors.conflict(r, name);
      if (e instanceof NodenetError && e.code === ErrorCode.NotFound && !(e instanceof ApiError)) throw apiErrors.notFound(r, name);
      throw e;
    }
  }

  /** Fills in a Service's ClusterIP and NodePorts (create: old null). @throws Invalid naming the field */
  private allocate(r: Resource, key: string, o: O, old: KObject | null): Allocation | undefined {
    if (r.resource !== 'services' || !this.deps.services) return undefined;
    const a = this.deps.services.allocate(key, o, old);
    if (a.errors.length) throw apiErrors.invalid(r, String(obj(o['metadata'])?.['name'] ?? ''), a.errors);
    return a;
  }

  /** The operations a deletion of the object under key adds: a Service's allocation objects go with it. */
  private releases(r: Resource, key: string, old: Readonly<KObject>): TxnOp[] {
    return r.resource === 'services' && this.deps.services ? this.deps.services.release(key, old) : [];
  }

  /** What an update writes: nothing (a no-op, a dry run: `answer` is the reply), the merged object, or a deletion. */
  private decideUpdate(
    r: Resource,
    key: string,
    merged: O,
    old: O,
    opts: WriteOptions & { sub?: Sub | undefined; operation?: 'Update' | 'Apply' },
    warnings: string[],
    also: readonly TxnOp[],
    stale = false,
  ): UpdateDecision & { answer?: WriteResult } {
    const oldMeta = obj(old['metadata'])!;
    const m = obj(merged['metadata'])!;
    const keep = (object: O) => ({ keep: true as const, answer: { object: object as KObject, code: 200, warnings } });
    // Nothing changed: no write, no new resourceVersion (kube-apiserver skips the etcd write too), unless the stored
    // value is stale (encrypted with an older key, or not yet): then it is written again, with the current key.
    if (deepEqual(stripVolatile(merged), stripVolatile(old)) && !(stale && !opts.dryRun)) return keep(old);
    // The last finalizer of an object being deleted went: the object goes.
    if (oldMeta['deletionTimestamp'] && finalized(r, merged)) return opts.dryRun ? keep(merged) : { delete: true, also: this.releases(r, key, old as KObject) };
    // A binding writes the storage directly upstream (no field manager): managedFields stay as they were.
    if (opts.sub === 'binding') return opts.dryRun ? keep(merged) : { write: merged as KObject, also };
    // One entry per manager, operation and subresource, as upstream lists them (without field ownership: fieldsV1 stays empty).
    const entry = managedEntry(opts.fieldManager ?? 'unknown', opts.operation ?? 'Update', apiVersionOf(r), this.deps.clock.now());
    if (opts.sub === 'status') entry['subresource'] = 'status';
    const same = (e: O) => e['manager'] === entry['manager'] && e['operation'] === entry['operation'] && (e['subresource'] ?? '') === (entry['subresource'] ?? '');
    m['managedFields'] = [...arr(oldMeta['managedFields']).map(obj).filter((e): e is O => !!e && !same(e)), entry];
    return opts.dryRun ? keep(merged) : { write: merged as KObject, also };
  }

  /** The object an update stores, from what the client sent (o) and what is stored (old). */
  private prepareUpdate(r: Resource, o: O, old: O, sub: Sub | undefined): O {
    const oldMeta = obj(old['metadata'])!;
    // A binding is made on the stored object as it is (spec.nodeName and a condition): no strategy, no generation.
    if (sub === 'binding') return o;
    let merged: O;
    if (sub === 'status') {
      // Only the status is taken: spec and metadata stay as stored.
      merged = { ...structuredClone(old), status: o['status'] };
    } else {
      merged = o;
      if (r.subresources.includes('status')) {
        if (old['status'] === undefined) delete merged['status'];
        else merged['status'] = structuredClone(old['status']);
      }
      this.strategy(r).defaults(merged);
      // `finalize` writes what the main resource keeps (a Namespace's spec.finalizers).
      if (sub !== 'finalize') this.strategy(r).prepareForUpdate?.(merged, old);
    }
    const m = (merged['metadata'] = { ...(obj(merged['metadata']) ?? {}) });
    // Server-owned metadata is kept from the stored object.
    for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'namespace', 'name', 'resourceVersion']) {
      if (oldMeta[k] === undefined) delete m[k];
      else m[k] = oldMeta[k];
    }
    if (oldMeta['deletionTimestamp']) {
      // Finalizers may only be removed once deletion started.
      const before = new Set(Array.isArray(oldMeta['finalizers']) ? (oldMeta['finalizers'] as string[]) : []);
      const now = Array.isArray(m['finalizers']) ? (m['finalizers'] as string[]) : [];
      const added = now.filter((f) => !before.has(f));
      if (added.length) {
        // Go's %#v of the sorted []string.
        const list = `[]string{${[...new Set(added)].sort().map((f) => JSON.stringify(f)).join(', ')}}`;
        throw apiErrors.invalid(r, String(oldMeta['name']), [fieldErr.forbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers ${list}`)]);
      }
    }
    // The generation counts what the kind says it counts (its spec, mostly); status and labels never.
    const bump = this.strategy(r).bumpsGeneration;
    if (bump?.(merged, old)) m['generation'] = (Number(oldMeta['generation']) || 1) + 1;
    return merged;
  }

  async patch(
    r: Resource,
    namespace: string,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: WriteOptions & { sub?: 'status' | 'scale' | undefined; force?: boolean } = {},
  ): Promise<WriteResult> {
    const warnings: string[] = [];
    const key = this.key(r, namespace, name);
    if (type === 'apply' && !(await this.lookup(key))) {
      // Server-side apply creates what does not exist.
      const body = obj(patch);
      if (!body) throw apiErrors.badRequest('the apply configuration must be an object');
      const meta = obj(body['metadata']);
      if (meta?.['name'] !== undefined && meta['name'] !== name) throw apiErrors.badRequest(`the name of the object (${String(meta['name'])}) does not match the name on the URL (${name})`);
      const created = await this.create(r, namespace, { ...body, metadata: { ...(meta ?? {}), name } }, { ...opts, fieldValidation: opts.fieldValidation ?? 'Strict', fieldManager: opts.fieldManager ?? 'unknown' }, 'Apply');
      return { ...created, code: 201 };
    }
    return this.readModifyWrite(
      r,
      namespace,
      name,
      (cur) => {
        const base = structuredClone(cur.object) as O;
        let patched: unknown;
        try {
          if (type === 'json') patched = applyJsonPatch(base, patch);
          else if (type === 'merge') patched = applyMergePatch(base, patch);
          else patched = strategicMergePatch(this.deps.schemas, r.model, base, patch, { apply: type === 'apply' });
        } catch (e) {
          if (e instanceof NodenetError) throw e;
          const msg = e instanceof Error ? e.message : String(e);
          // As upstream: a JSON patch that is not a list of operations, and a strategic merge patch in a bad
          // format, are 400s; a JSON patch whose operation fails on this object is a 422.
          if (e instanceof StrategicPatchError || (type === 'json' && !Array.isArray(patch))) throw apiErrors.badRequest(msg);
          throw new NodenetError(ErrorCode.InvalidObject, msg);
        }
        const o = this.decodeBody(r, patched, opts.fieldValidation ?? (type === 'apply' ? 'Strict' : 'Warn'), warnings, 'patch');
        // A resourceVersion in the patch is a precondition, as for an update.
        const rv = obj(o['metadata'])?.['resourceVersion'];
        if (rv !== undefined && rv !== cur.object.metadata?.['resourceVersion']) throw apiErrors.conflict(r, name);
        return o;
      },
      undefined,
      { ...opts, operation: type === 'apply' ? 'Apply' : 'Update' },
      warnings,
    );
  }

  /**
   * DELETE. 200 in every case, as kube-apiserver answers (202 only for the deprecated
   * orphanDependents=false). The body is the object when it stays (finalizers, a terminating
   * Namespace) or when the kind returns its deleted object (Pods, Services, Namespaces), else a
   * Status naming what was deleted.
   */
  async delete(r: Resource, namespace: string, name: string, opts: DeleteOptions = {}): Promise<{ code: number; body: KObject | Status }> {
    const d = await this.deleteOne(r, namespace, name, opts);
    if (!d.gone || RETURNS_DELETED_OBJECT.has(r.resource)) return { code: 200, body: d.object };
    const meta = obj(d.object.metadata) ?? {};
    // finalizeDelete's Status: no code, no message; the resource (not the kind) in details.kind.
    return { code: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: meta['name'], group: r.group, kind: r.resource, uid: meta['uid'] } } };
  }

  /** The delete itself: the object as deleted or as it stays, and whether it went. */
  private async deleteOne(r: Resource, namespace: string, name: string, opts: DeleteOptions): Promise<{ object: KObject; gone: boolean }> {
    const key = this.key(r, namespace, name);
    let answer: { object: KObject; gone: boolean } | null = null;
    const out = await this.guarded(r, name, key, async (cur) => {
      answer = null;
      await this.deps.admission?.validate(this.request('DELETE', r, namespace, name, '', opts), null, cur.object as O);
      const meta = obj(cur.object.metadata)!;
      if (opts.preconditions?.uid && opts.preconditions.uid !== meta['uid']) {
        throw apiErrors.conflict(r, name, `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${String(meta['uid'])}`);
      }
      if (opts.preconditions?.resourceVersion && opts.preconditions.resourceVersion !== meta['resourceVersion']) {
        throw apiErrors.conflict(r, name, `Precondition failed: ResourceVersion in precondition: ${opts.preconditions.resourceVersion}, ResourceVersion in object meta: ${String(meta['resourceVersion'])}`);
      }
      const had = Array.isArray(meta['finalizers']) ? (meta['finalizers'] as string[]) : [];
      const finalizers = new Set(had);
      if (opts.propagationPolicy === 'Foreground') finalizers.add(FOREGROUND);
      if (opts.propagationPolicy === 'Orphan') finalizers.add(ORPHAN);
      const keep = (object: O | Readonly<KObject>): UpdateDecision => {
        answer = { object: object as KObject, gone: false };
        return { keep: true };
      };
      // A Pod on a node is deleted gracefully: its kubelet stops it, then deletes it with a grace of 0.
      const grace = this.strategy(r).gracePeriod?.(cur.object as O, opts.gracePeriodSeconds, (node) => this.deps.cache.get(`nodes//${node}`) !== undefined) ?? 0;
      if (grace > 0) {
        const dgp = meta['deletionGracePeriodSeconds'];
        // Already terminating with this grace or a shorter one: nothing to change (a shorter one shortens it).
        if (meta['deletionTimestamp'] && typeof dgp === 'number' && dgp <= grace && finalizers.size === had.length) return keep(cur.object);
        const next = structuredClone(cur.object) as O;
        const nm = obj(next['metadata'])!;
        if (finalizers.size) nm['finalizers'] = [...finalizers];
        nm['deletionTimestamp'] = rfc3339(this.deps.clock.now() + grace * 1000);
        nm['deletionGracePeriodSeconds'] = grace;
        return opts.dryRun ? keep(next) : { write: next as KObject };
      }
      // A Namespace with spec.finalizers terminates first (its controller empties it, then finalizes it).
      const terminating = r.resource === 'namespaces' && arr(obj(cur.object['spec'])?.['finalizers']).length > 0;
      if (finalizers.size || terminating) {
        const already = Boolean(meta['deletionTimestamp']) && finalizers.size === had.length;
        if (already && (r.resource !== 'namespaces' || obj(cur.object['status'])?.['phase'] === 'Terminating')) return keep(cur.object);
        // Deletion starts: a deletionTimestamp, and the finalizers do the rest.
        const next = structuredClone(cur.object) as O;
        const nm = obj(next['metadata'])!;
        if (finalizers.size) nm['finalizers'] = [...finalizers];
        nm['deletionTimestamp'] ??= rfc3339(this.deps.clock.now());
        nm['deletionGracePeriodSeconds'] ??= 0;
        if (r.resource === 'namespaces') next['status'] = { ...(obj(next['status']) ?? {}), phase: 'Terminating' };
        return opts.dryRun ? keep(next) : { write: next as KObject };
      }
      if (opts.dryRun) {
        answer = { object: cur.object as KObject, gone: true };
        return { keep: true };
      }
      return { delete: true, also: this.releases(r, key, cur.object) };
    });
    if (out.outcome === 'kept') return answer!;
    return { object: out.stored.object as KObject, gone: out.outcome === 'deleted' };
  }

  async deleteCollection(r: Resource, namespace: string | undefined, q: ListQuery, opts: DeleteOptions): Promise<{ code: number; body: KObject }> {
    const { items, rev } = await this.list(r, namespace, { labelSelector: q.labelSelector, fieldSelector: q.fieldSelector });
    const deleted: KObject[] = [];
    for (const s of items) {
      const name = String(s.object.metadata?.['name']);
      const ns = String(s.object.metadata?.['namespace'] ?? '');
      try {
        deleted.push((await this.deleteOne(r, ns, name, opts)).object);
      } catch (e) {
        if (e instanceof NodenetError && e.code === ErrorCode.NotFound) continue;
        throw e;
      }
    }
    return { code: 200, body: { apiVersion: apiVersionOf(r), kind: `${r.kind}List`, metadata: { resourceVersion: String(rev) }, items: deleted } };
  }

  /** Status for a delete that returned no object (kubectl prints the name either way). */
  deletedStatus(r: Resource, name: string, uid: string): Status {
    return successStatus({ name, group: r.group, kind: r.resource, uid });
  }
}


/** No finalizer holds the object: metadata.finalizers, and for a Namespace spec.finalizers too. */
function finalized(r: Resource, o: O): boolean {
  if (arr(obj(o['metadata'])?.['finalizers']).length) return false;
  return r.resource !== 'namespaces' || arr(obj(o['spec'])?.['finalizers']).length === 0;
}

function managedEntry(manager: string, operation: 'Update' | 'Apply', apiVersion: string, now: number): O {
  return { manager, operation, apiVersion, time: rfc3339(now), fieldsType: 'FieldsV1', fieldsV1: {} };
}

/** What a no-op check ignores: the resourceVersion, managedFields and generation. */
function stripVolatile(o: O): O {
  const c: O = { ...o };
  const m = { ...(obj(c['metadata']) ?? {}) };
  delete m['resourceVersion'];
  delete m['managedFields'];
  delete m['generation'];
  c['metadata'] = m;
  return c;
}

export function parseRV(s: string): number {
  if (!/^\d+$/.test(s)) throw apiErrors.badRequest(`resourceVersion: Invalid value: ${JSON.stringify(s)}: must be a decimal number`);
  return Number(s);
}

function encodeContinue(rev: number, after: string): string {
  return Buffer.from(JSON.stringify({ v: 'nodenet.v1', rv: rev, start: after })).toString('base64url');
}

function decodeContinue(token: string): { rev: number; after: string } {
  try {
    const o = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { v?: string; rv?: number; start?: string };
    if (o.v !== 'nodenet.v1' || typeof o.rv !== 'number' || typeof o.start !== 'string') throw new Error('bad');
    return { rev: o.rv, after: o.start };
  } catch {
    throw apiErrors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
}
