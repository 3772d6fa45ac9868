/**
 * proxy/proxier: the mode-independent half of kube-proxy. It owns the proxy
 * state and decides when and how much to sync; the mode's ProxyBackend owns
 * the kernel.
 *
 * Flow (kube-proxy's syncProxyRules, split at the backend boundary):
 * 1. Handlers (ServiceHandler, EndpointSliceHandler) admit each object
 *    (parse + validate: handlers.ts; an update the agent cannot use keeps
 *    the last valid version served, an object never valid is absent),
 *    record (prev, cur) in the change trackers and request() a sync from
 *    the BoundedFrequencyRunner. They never touch the kernel.
 * 2. Nothing is applied until both Services and EndpointSlices have synced:
 *    a partial view would delete rules for Services not listed yet.
 * 3. syncNow() drains the trackers into ServicePortMap and EndpointsMap,
 *    builds one immutable snapshot, picks the scope and calls backend.sync
 *    once. Scope is full on the first sync, after any failure, when the
 *    backend's canary is gone (someone flushed our rules), and at least every
 *    fullSyncIntervalMs; otherwise partial with exactly the Services whose
 *    ports or endpoints changed since the last successful sync.
 * 4. On failure: log, force the next sync full, retryAfter a backoff that
 *    doubles per consecutive failure (capped at maxSyncIntervalMs). The maps
 *    already hold the new state, so the full retry renders everything.
 * 5. On success: UDP conntrack cleanup (conntrack-plan.ts), accumulated
 *    across failed syncs so a failure cannot lose it. Conntrack errors are
 *    logged, never fail the sync (the rules are right; stale flows only
 *    linger until their timeout).
 * Syncs never overlap: the runner serializes them and syncNow() chains
 * direct calls behind any sync in flight.
 */
import { asNodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Conntrack } from '../netfilter/conntrack/conntrack.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { EventRecorder } from '../../../lib/reconcile/event-recorder.js';
import type { RejectionCount } from '../../../lib/reconcile/last-good.js';
import { describeAction, planConntrackCleanup, type ConntrackAction } from './conntrack-plan.js';
import { EndpointsChangeTracker, EndpointsMap, type UpdateEndpointsMapResult } from './endpoints-map.js';
import { ObjectAdmission, type EndpointSliceHandler, type Ignored, type Rejection, type ServiceHandler } from './handlers.js';
import type { PortRange } from './model/service.js';
import { ServiceChangeTracker, ServicePortMap, type UpdateServiceMapResult } from './service-map.js';
import { SnapshotTracker } from './snapshot.js';
import { BoundedFrequencyRunner } from '../../../lib/reconcile/sync-runner.js';
import type { ProxyBackend, ProxyNodeConfig, ProxySnapshot, ServiceKey, SpnKey, SyncScope } from './types.js';

export interface ProxierDeps {
  readonly backend: ProxyBackend;
  readonly nodeConfig: ProxyNodeConfig;
  readonly conntrack: Conntrack;
  readonly clock: Clock;
  readonly log: Logger;
  /** At least this long between the end of one sync and the start of the next (kube-proxy --iptables-min-sync-period). */
  readonly minSyncIntervalMs: number;
  /** A sync at least this often even without changes (kube-proxy --iptables-sync-period). */
  readonly maxSyncIntervalMs: number;
  /** A full sync at least this often (kube-proxy: 1 hour). Default 3,600,000. */
  readonly fullSyncIntervalMs?: number;
  /** First retry delay after a failed sync; doubles per consecutive failure up to maxSyncIntervalMs. Default 1000. */
  readonly retryBaseMs?: number;
  /** The cluster's NodePort range (default 30000-32767): a Service outside it is rejected. */
  readonly nodePortRange?: PortRange;
  /**
   * Called at the end of every sync attempt, after the conntrack cleanup:
   * with the snapshot now in the kernel, or null when the sync failed.
   * Must not throw (status files, metrics).
   */
  readonly onSyncDone?: (applied: ProxySnapshot | null, stats: SyncStats) => void;
  /** Told about every change and sync (the agent's metrics and /healthz). */
  readonly observer?: ProxierObserver;
  /**
   * Warning Events on the Services and EndpointSlices the agent cannot use
   * (node/compose.ts gives one when the agent watches an API server); none when absent.
   */
  readonly events?: EventRecorder;
}

/** The annotation the EndpointSlice controller sets to the time of the Pod or Service change behind a write. */
export const LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';

/**
 * What the Proxier reports as it works, for kube-proxy's metrics and healthz
 * (node/agent-metrics.ts). Calls are synchronous and must not throw.
 */
export interface ProxierObserver {
  /**
   * A Service or EndpointSlice event was recorded (kube-proxy counts every
   * one). `queued`: it left a change pending after the initial lists, so a
   * sync was requested (kube-proxy's QueuedUpdate: the healthz timeout runs
   * from the oldest such change until a sync succeeds).
   */
  changeSeen(kind: 'service' | 'endpoints', queued: boolean): void;
  /**
   * After every sync attempt that reached the backend. `triggerTimes`: clock
   * times of the EndpointSlice changes that sync put in the kernel (their
   * LAST_CHANGE_TRIGGER_TIME, else when the proxier received them); empty
   * when it failed (they wait for the next success).
   */
  syncDone(stats: SyncStats, triggerTimes: readonly number[]): void;
}

/**
 * A slice's LAST_CHANGE_TRIGGER_TIME as clock ms (RFC 3339, as the
 * controller writes it), null when absent or unparseable. Pure.
 */
export function lastChangeTriggerTime(slice: unknown): number | null {
  const md = typeof slice === 'object' && slice !== null ? (slice as { metadata?: unknown }).metadata : undefined;
  const ann = typeof md === 'object' && md !== null ? (md as { annotations?: unknown }).annotations : undefined;
  const v = typeof ann === 'object' && ann !== null ? (ann as Record<string, unknown>)[LAST_CHANGE_TRIGGER_TIME] : undefined;
  if (typeof v !== 'string' || !/^\d{4}-\d\d-\d\dT/.test(v)) return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
}

export type SyncReason = 'first' | 'after-failure' | 'canary-missing' | 'periodic-full' | 'partial';

export interface SyncStats {
  /** Clock time the sync started. */
  readonly startedAt: number;
  readonly durationMs: number;
  readonly scope: 'full' | 'partial';
  readonly reason: SyncReason;
  /** Services in a partial scope (0 for a full sync). */
  readonly changedServices: number;
  readonly servicePorts: number;
  readonly endpoints: number;
  /** From backend.lastSyncRuleCount() when the backend reports it. */
  readonly ruleCount: number | null;
  readonly ok: boolean;
  readonly error: string | null;
  /** Conntrack deletions run after this sync (0 when it failed: they wait for the next success). */
  readonly conntrackActions: number;
}

/** The spnKeys a sync's map updates touched. */
function* changedPorts(svc: UpdateServiceMapResult, eps: UpdateEndpointsMapResult): Iterable<SpnKey> {
  for (const c of svc.portChanges) yield c.key;
  for (const c of eps.portChanges) yield c.key;
}

export class Proxier implements ServiceHandler, EndpointSliceHandler {
  private readonly log: Logger;
  private readonly admission: ObjectAdmission;
  private readonly serviceChanges = new ServiceChangeTracker();
  private readonly endpointsChanges: EndpointsChangeTracker;
  private readonly serviceMap = new ServicePortMap();
  private readonly endpointsMap = new EndpointsMap();
  /** The maps as a snapshot, kept current per change (a partial sync must not rebuild 30,000 entries). */
  private readonly snapshots = new SnapshotTracker();
  private readonly runner: BoundedFrequencyRunner;

  private servicesSynced = false;
  private slicesSynced = false;
  private everSynced = false;
  private needFullSync = true;
  private lastFullSyncAt = 0;
  private consecutiveFailures = 0;
  /** Services changed since the last successful sync (survives failures). */
  private readonly pendingChanged = new Set<ServiceKey>();
  /** Conntrack work waiting for a successful sync, keyed by description. */
  private readonly pendingConntrack = new Map<string, ConntrackAction>();
  private chain: Promise<void> = Promise.resolve();
  private stats: SyncStats | null = null;
  private syncs = 0;
  /** Network programming latency: trigger times of the pending EndpointSlice changes, by slice key. */
  private readonly triggerTimes = new Map<string, number[]>();
  /** Trigger times a failed sync took, for the next successful one. */
  private unsyncedTriggerTimes: number[] = [];
  /** Trigger times before this are older than the proxier (a restart relisting): not its latency (kube-proxy's trackerStartTime). */
  private readonly createdAt: number;

  constructor(private readonly deps: ProxierDeps) {
    this.createdAt = deps.clock.now();
    this.log = deps.log.child({ [F.subsys]: 'proxy', [F.mode]: deps.backend.mode });
    this.admission = new ObjectAdmission({ log: this.log, ...(deps.nodePortRange ? { nodePortRange: deps.nodePortRange } : {}), ...(deps.events ? { events: deps.events } : {}) });
    this.endpointsChanges = new EndpointsChangeTracker(deps.nodeConfig.nodeName);
    this.runner = new BoundedFrequencyRunner({
      fn: () => this.syncNow(),
      clock: deps.clock,
      minIntervalMs: deps.minSyncIntervalMs,
      maxIntervalMs: deps.maxSyncIntervalMs,
      log: this.log,
    });
  }

  /** Starts the sync loop (periodic syncs, and the syncs handlers request). Idempotent. */
  start(): void {
    this.runner.start();
  }

  /** Stops the loop; a sync in flight completes. Rules stay installed (backend.cleanup() removes them). */
  stop(): void {
    this.runner.stop();
  }

  // ---- ServiceHandler ----

  onServiceAdd(svc: unknown): void {
    this.serviceEvent(null, svc);
  }

  onServiceUpdate(prev: unknown, cur: unknown): void {
    this.serviceEvent(prev, cur);
  }

  onServiceDelete(svc: unknown): void {
    const p = this.admission.serviceDelete(svc);
    if (p.key === null) return void this.log.warn('Service delete without namespace/name ignored');
    this.changed('service', this.serviceChanges.update(p.key, p.prev, null));
  }

  onServicesSynced(): void {
    this.servicesSynced = true;
    this.runner.request();
  }

  // ---- EndpointSliceHandler ----

  onEndpointSliceAdd(slice: unknown): void {
    this.sliceEvent(null, slice);
  }

  onEndpointSliceUpdate(prev: unknown, cur: unknown): void {
    this.sliceEvent(prev, cur);
  }

  onEndpointSliceDelete(slice: unknown): void {
    const p = this.admission.endpointSliceDelete(slice);
    if (p.key === null) return void this.log.warn('EndpointSlice delete without namespace/name ignored');
    // As kube-proxy: a deletion's trigger time is that of the slice's last update, not of the change; not measured.
    this.triggerTimes.delete(p.key);
    this.changed('endpoints', this.endpointsChanges.update(p.key, p.prev, null));
  }

  onEndpointSlicesSynced(): void {
    this.slicesSynced = true;
    this.runner.request();
  }

  private serviceEvent(prevRaw: unknown, curRaw: unknown): void {
    const { key, prev, cur } = this.admission.serviceEvent(prevRaw, curRaw);
    if (key === null) return void this.log.warn('Service without namespace/name ignored');
    this.changed('service', this.serviceChanges.update(key, prev, cur));
  }

  private sliceEvent(prevRaw: unknown, curRaw: unknown): void {
    const { key, prev, cur } = this.admission.endpointSliceEvent(prevRaw, curRaw);
    if (key === null) return void this.log.warn('EndpointSlice without namespace/name ignored');
    const pending = this.endpointsChanges.update(key, prev, cur);
    this.noteTriggerTime(key, pending, curRaw);
    this.changed('endpoints', pending);
  }

  /** One recorded event: request a sync when it left a change pending; tell the observer. */
  private changed(kind: 'service' | 'endpoints', pending: boolean): void {
    // Before both initial lists there is nothing to sync: asking would only start a run that does nothing
    // and then holds the real first sync back by minSyncIntervalMs (1 s by default) once the lists are in.
    if (pending && this.servicesSynced && this.slicesSynced) this.runner.request();
    this.deps.observer?.changeSeen(kind, pending && this.servicesSynced && this.slicesSynced);
  }

  /**
   * Remembers when the change behind a slice event happened: the
   * controller's annotation, else (for a change after the initial list) now.
   * A change that cancelled out (nothing pending for the slice) has none.
   */
  private noteTriggerTime(key: string, pending: boolean, curRaw: unknown): void {
    if (!pending) return void this.triggerTimes.delete(key);
    const t = lastChangeTriggerTime(curRaw) ?? (this.slicesSynced ? this.deps.clock.now() : null);
    if (t === null || t < this.createdAt) return;
    const list = this.triggerTimes.get(key);
    if (list) list.push(t);
    else this.triggerTimes.set(key, [t]);
  }

  // ---- sync ----

  /**
   * Runs one sync now (the runner calls this; tests and the CLI may too).
   * Never throws: failures are logged, recorded in lastSync and retried.
   * A call while a sync is in flight runs after it.
   */
  syncNow(): Promise<void> {
    const p = this.chain.then(() => this.doSync());
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async doSync(): Promise<void> {
    if (!this.servicesSynced || !this.slicesSynced) {
      this.log.debug(`not syncing: waiting for the initial lists (Services ${this.servicesSynced ? 'synced' : 'pending'}, EndpointSlices ${this.slicesSynced ? 'synced' : 'pending'})`);
      return;
    }
    const { clock, backend } = this.deps;
    const startedAt = clock.now();
    const svcResult = this.serviceMap.apply(this.serviceChanges.drain());
    const epResult = this.endpointsMap.apply(this.endpointsChanges.drain());
    const triggerTimes = this.unsyncedTriggerTimes;
    for (const list of this.triggerTimes.values()) for (const t of list) triggerTimes.push(t);
    this.unsyncedTriggerTimes = [];
    this.triggerTimes.clear();
    for (const k of svcResult.changedServices) this.pendingChanged.add(k);
    for (const k of epResult.changedServices) this.pendingChanged.add(k);
    for (const a of planConntrackCleanup(svcResult, epResult, this.serviceMap.view(), this.endpointsMap.view())) {
      this.pendingConntrack.set(describeAction(a), a);
    }

    const reason = await this.chooseScope(startedAt);
    const scope: SyncScope = reason === 'partial' ? { full: false, changed: new Set(this.pendingChanged) } : { full: true };
    // A full sync rebuilds the snapshot from the maps; a partial one updates the last at the ports that changed.
    const snapshot = scope.full
      ? this.snapshots.rebuild(this.serviceMap.view(), this.endpointsMap.view())
      : this.snapshots.update(changedPorts(svcResult, epResult), this.serviceMap.view(), this.endpointsMap.view());
    const endpointCount = this.snapshots.endpointCount;
    const base = {
      startedAt,
      scope: scope.full ? ('full' as const) : ('partial' as const),
      reason,
      changedServices: scope.full ? 0 : scope.changed.size,
      servicePorts: snapshot.services.size,
      endpoints: endpointCount,
    };
    this.syncs++;
    try {
      await backend.sync(snapshot, scope);
    } catch (e) {
      const err = asNodenetError(e);
      this.needFullSync = true;
      this.consecutiveFailures++;
      const retryMs = Math.min(this.deps.maxSyncIntervalMs, (this.deps.retryBaseMs ?? 1000) * 2 ** (this.consecutiveFailures - 1));
      this.stats = { ...base, durationMs: clock.now() - startedAt, ruleCount: null, ok: false, error: err.message, conntrackActions: 0 };
      this.log.error({ [F.err]: err, [F.scope]: base.scope, [F.reason]: reason }, `proxy sync failed; retrying in ${retryMs} ms with a full sync`);
      this.runner.retryAfter(retryMs);
      this.unsyncedTriggerTimes = triggerTimes;
      this.deps.onSyncDone?.(null, this.stats);
      this.deps.observer?.syncDone(this.stats, []);
      return;
    }
    this.everSynced = true;
    this.needFullSync = false;
    this.consecutiveFailures = 0;
    if (scope.full) this.lastFullSyncAt = startedAt;
    this.pendingChanged.clear();
    const conntrackActions = await this.runConntrack();
    const durationMs = clock.now() - startedAt;
    const ruleCount = backend.lastSyncRuleCount ? backend.lastSyncRuleCount() : null;
    this.stats = { ...base, durationMs, ruleCount, ok: true, error: null, conntrackActions };
    this.log.info(
      { [F.scope]: base.scope, [F.reason]: reason, [F.durationMs]: durationMs, [F.count]: base.servicePorts },
      `proxy rules synced: ${base.servicePorts} service ports, ${endpointCount} endpoints${scope.full ? '' : `, ${base.changedServices} changed Services`}`,
    );
    this.deps.onSyncDone?.(snapshot, this.stats);
    this.deps.observer?.syncDone(this.stats, triggerTimes);
  }

  private async chooseScope(now: number): Promise<SyncReason> {
    if (!this.everSynced) return 'first';
    if (this.needFullSync) return 'after-failure';
    if (now - this.lastFullSyncAt >= (this.deps.fullSyncIntervalMs ?? 3_600_000)) return 'periodic-full';
    try {
      if (await this.deps.backend.canaryMissing()) {
        this.log.warn('proxy canary missing (rules flushed by someone else?): full sync');
        return 'canary-missing';
      }
    } catch (err) {
      this.log.warn({ [F.err]: err }, 'proxy canary check failed: full sync');
      return 'canary-missing';
    }
    return 'partial';
  }

  private async runConntrack(): Promise<number> {
    const actions = [...this.pendingConntrack.values()];
    this.pendingConntrack.clear();
    for (const a of actions) {
      try {
        const n = a.op === 'endpoint' ? await this.deps.conntrack.deleteUDPEndpoint(a.target, a.endpointIP) : await this.deps.conntrack.deleteUDPService(a.target);
        this.log.debug({ [F.count]: n }, `conntrack: deleted UDP entries (${describeAction(a)})`);
      } catch (err) {
        this.log.warn({ [F.err]: err }, `conntrack cleanup failed (${describeAction(a)}); stale UDP flows last until they time out`);
      }
    }
    return actions.length;
  }

  // ---- introspection (CLI, benches, tests) ----

  /** Stats of the last sync attempt, null before any. */
  get lastSync(): SyncStats | null {
    return this.stats;
  }

  /** Sync attempts that reached the backend. */
  get syncCount(): number {
    return this.syncs;
  }

  /** True once both sources synced and a sync succeeded. */
  get ready(): boolean {
    return this.everSynced;
  }

  /** Keys with a change recorded but not yet synced (kube-proxy's *_changes_pending). */
  pendingChanges(): { readonly services: number; readonly endpoints: number } {
    return { services: this.serviceChanges.size, endpoints: this.endpointsChanges.size };
  }

  /** The applied state as a snapshot (what the last sync rendered, plus nothing pending). */
  snapshot(): ProxySnapshot {
    return this.snapshots.current();
  }

  /** Objects rejected as invalid, with the offending field, and whether their last valid version is still served. */
  rejected(): Rejection[] {
    return this.admission.rejected();
  }

  /** Rejections so far and objects served from their last valid version now, per kind (the agent's metrics). */
  rejectionCounts(): RejectionCount[] {
    return this.admission.counts();
  }

  /** Valid objects that get no rules (headless, IPv6, ...), with the reason. */
  ignored(): Ignored[] {
    return this.admission.ignored();
  }

  /** Resolves when no sync is running (for tests and orderly shutdown). */
  whenIdle(): Promise<void> {
    return this.chain;
  }
}
