/**
 * reconcile/last-good: what a watcher does with a version of an object it
 * cannot use. Shared by the proxy (Services, EndpointSlices) and the overlay
 * (Nodes). Pure: no I/O but the injected logger and Event recorder.
 *
 * The rule (issue 24): a component never withdraws what it serves because an
 * update is one it cannot use. kube-apiserver validates every write, so an
 * object the agent cannot parse is either a bug in whoever wrote it or a
 * check the API server lacks (nodenet's own control plane once stored a
 * Service with sessionAffinity None and a leftover sessionAffinityConfig);
 * taking the rules away turned one bad `kubectl patch` into an outage on
 * every node. So, per object key:
 * - an update the component cannot use, of an object it serves: it keeps
 *   serving the last version it could use ("kept"), and records why;
 * - an object it never could use (or a new object under the same name: its
 *   uid differs) is skipped, as before: nothing served, the reason recorded;
 * - the next usable version replaces the kept one; a delete removes it.
 * Either way it says so once per distinct rejection (kind, key, field,
 * message, kept or not): one warning line, one count in rejectedTotal and one
 * Warning Event on the object (reason InvalidObjectKeptLastGood or
 * InvalidObjectSkipped) when an EventRecorder is given (the agent watches an
 * API server). A re-delivery of the same version (a relist, a resync) says
 * nothing; a newer version with the same fault adds to the Event's count
 * (the recorder folds identical Events) and logs nothing new.
 *
 * The caller decides what is usable and what it serves from it (V: a
 * Service's ports, a slice's endpoints, a Node's lease) and hands in the
 * version being served when an update is rejected; LastGood keeps only the
 * kept versions, so it costs nothing for the objects that are fine.
 */
import { F } from '../log/fields.js';
import type { Logger } from '../log/log.js';
import { NO_EVENTS, type EventRecorder, type ObjectReference } from './event-recorder.js';

/** Why an object gets what it gets, for the status, the CLI and tests. */
export interface ObjectRejection<K extends string = string> {
  readonly kind: K;
  /** "namespace/name" (a Node's name), or "(unknown)" when even that was unreadable. */
  readonly key: string;
  /** JSON path of the offending field, e.g. spec.ports[1].port. */
  readonly field: string;
  readonly message: string;
  /** True: the last version the component could use is still served. False: nothing is served for the object. */
  readonly servedFromLastGood: boolean;
  /** That version's resourceVersion, when it had one. */
  readonly lastGoodResourceVersion?: string;
}

/** The figures behind nodenet_*_objects_rejected_total and nodenet_*_objects_served_from_last_good. */
export interface RejectionCount {
  readonly kind: string;
  /** Distinct rejections so far (each said once). */
  readonly rejected: number;
  /** Objects served from their last usable version now. */
  readonly servedFromLastGood: number;
}

/** A version the component could use and serves: what it got from it, and which version it was. */
export interface LastGoodVersion<V> {
  readonly value: V;
  readonly uid?: string | undefined;
  readonly resourceVersion?: string | undefined;
}

export const REASON_KEPT_LAST_GOOD = 'InvalidObjectKeptLastGood';
export const REASON_SKIPPED = 'InvalidObjectSkipped';

export interface LastGoodDeps<K extends string> {
  readonly kind: K;
  readonly log: Logger;
  /** The log field the key goes under (F.svc, F.node). */
  readonly keyField: string;
  /** What the component serves from an object, for the messages ("rules", "route"). */
  readonly serves: string;
  /** Warning Events on the objects; none when absent (no API server watched). */
  readonly events?: EventRecorder | undefined;
}

interface RejectionRecord<K extends string> {
  rejection: ObjectRejection<K>;
  readonly signature: string;
  resourceVersion: string | undefined;
}

export class LastGood<V, K extends string = string> {
  private readonly kept = new Map<string, LastGoodVersion<V>>();
  private readonly records = new Map<string, RejectionRecord<K>>();
  private total = 0;
  private readonly events: EventRecorder;

  constructor(private readonly deps: LastGoodDeps<K>) {
    this.events = deps.events ?? NO_EVENTS;
  }

  /** The version kept for `key` (it is served though its object is now one the component cannot use). */
  get(key: string): LastGoodVersion<V> | undefined {
    return this.kept.get(key);
  }

  /**
   * The object at `key` is now `involved`, which the component cannot use
   * (field, message). `serving`: what it serves for the key right now (the
   * version kept already, or the one the last usable version gave), null
   * when nothing. Returns what to serve from now on: that same value (kept),
   * or null (skipped: it never was usable, or it is another object of that
   * name, its uid differing).
   */
  reject(key: string, involved: ObjectReference | null, field: string, message: string, serving: LastGoodVersion<V> | null): V | null {
    let last = serving;
    if (last && last.uid !== undefined && involved?.uid !== undefined && last.uid !== involved.uid) last = null;
    if (last) this.kept.set(key, last);
    else this.kept.delete(key);
    const kept = last !== null;
    const signature = `${field}\u0000${message}\u0000${kept}`;
    const rv = involved?.resourceVersion;
    const rejection: ObjectRejection<K> = {
      kind: this.deps.kind, key, field, message, servedFromLastGood: kept,
      ...(last?.resourceVersion !== undefined ? { lastGoodResourceVersion: last.resourceVersion } : {}),
    };
    const prior = this.records.get(key);
    if (prior && prior.signature === signature) {
      prior.rejection = rejection;
      // The same version delivered again (a relist, a resync): nothing new to say.
      if (prior.resourceVersion === rv) return last?.value ?? null;
      // A newer version with the same fault: the Event's count, nothing else.
      prior.resourceVersion = rv;
      this.recordEvent(involved, rejection);
      return last?.value ?? null;
    }
    this.records.set(key, { rejection, signature, resourceVersion: rv });
    this.total++;
    const { kind, keyField, serves } = this.deps;
    const fields = { [keyField]: key, [F.kind]: kind, [F.field]: field, ...(rejection.lastGoodResourceVersion ? { [F.rev]: rejection.lastGoodResourceVersion } : {}) };
    if (kept) this.deps.log.warn(fields, `${kind} ${key}: cannot use this update (${message}); still serving the ${serves} of its last usable version${versionNote(rejection)}`);
    else this.deps.log.warn(fields, `invalid ${kind} rejected: ${message}`);
    this.recordEvent(involved, rejection);
    return last?.value ?? null;
  }

  /**
   * The object at `key` is usable now (or valid with nothing to serve): its
   * rejection, if any, is over. Returns the version that was kept, if any
   * (what was served until now).
   */
  accept(key: string): LastGoodVersion<V> | undefined {
    const was = this.kept.get(key);
    const record = this.records.get(key);
    if (!record) return was;
    this.records.delete(key);
    this.kept.delete(key);
    this.deps.log.info({ [this.deps.keyField]: key, [F.kind]: this.deps.kind }, `${this.deps.kind} ${key}: usable again${was ? `; its current version replaces the last usable one` : ''}`);
    return was;
  }

  /** The object at `key` was deleted: forgets it. Returns the version that was kept, if any (its rules go now). */
  forget(key: string): LastGoodVersion<V> | undefined {
    const was = this.kept.get(key);
    this.kept.delete(key);
    this.records.delete(key);
    return was;
  }

  /** The objects rejected now, sorted by key. */
  rejected(): ObjectRejection<K>[] {
    return [...this.records.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r.rejection);
  }

  counts(): RejectionCount {
    return { kind: this.deps.kind, rejected: this.total, servedFromLastGood: this.kept.size };
  }

  private recordEvent(involved: ObjectReference | null, r: ObjectRejection<K>): void {
    if (!involved) return;
    const { kind, serves } = this.deps;
    if (r.servedFromLastGood) {
      this.events.event(involved, 'Warning', REASON_KEPT_LAST_GOOD, `Cannot use this version of the ${kind}: ${r.message}. Keeping the ${serves} of its last usable version${versionNote(r)} until a usable one arrives.`);
    } else {
      this.events.event(involved, 'Warning', REASON_SKIPPED, `Cannot use this ${kind}: ${r.message}. No ${serves} for it until a usable version arrives.`);
    }
  }
}

function versionNote(r: ObjectRejection): string {
  return r.lastGoodResourceVersion !== undefined ? ` (resourceVersion ${r.lastGoodResourceVersion})` : '';
}
