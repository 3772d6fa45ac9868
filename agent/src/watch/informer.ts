/**
 * watch/informer: one Kubernetes list+watch source, on
 * `@kubernetes/client-node` 1.4's ListWatch, made dependable, delivering
 * to the narrow handler interface the rest of the agent has (add, update
 * with previous and current, delete with the last known object, synced).
 *
 * What client-node leaves to its caller, and this does:
 * - Its informer stops for good on any error other than 410 (a refused
 *   connection, a 500, a reset mid-watch): restarted here with capped,
 *   jittered exponential backoff on the injected clock. A restart resumes
 *   from the last resourceVersion; a 410 makes client-node list again, and
 *   the list's difference arrives as adds, updates and deletes.
 * - It re-watches at once, with no backoff, when a watch closes cleanly: a
 *   server that closes every watch straight away would spin it. A third
 *   (re)watch within `minRewatchMs` is held back to the same backoff (two
 *   are normal: after a 410 client-node lists and watches again at once).
 * - Its update callback gives only the new object: the previous one is
 *   kept here, per namespace/name.
 * - A watch can go silent without closing (a half-open TCP connection,
 *   client-node issues #958 and #1496): when nothing arrived for
 *   `silenceMs`, the watch is restarted from its resourceVersion. On a quiet
 *   cluster that costs one cheap re-watch per period.
 * - Synced: once, after the first complete list (see SyncGroup for several
 *   sources).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';

/**
 * Drops `metadata.managedFields` from an object as it arrives, as client-go's
 * TransformStripManagedFields does for an informer's cache: nothing in the
 * agent reads them (it patches with its own field manager), and every
 * manager's field set of every cached object would stay in memory (client-node
 * caches the same object this delivers, so both copies shrink).
 */
export function stripManagedFields(obj: KubernetesObject): void {
  const meta = obj.metadata as { managedFields?: unknown } | undefined;
  if (meta && meta.managedFields !== undefined) delete meta.managedFields;
}

/** What this needs of client-node's ListWatch (the real one, or a test's). */
export interface ListWatchLike {
  on(verb: 'add' | 'update' | 'delete', cb: (o: KubernetesObject) => void): void;
  on(verb: 'error', cb: (e: unknown) => void): void;
  on(verb: 'connect', cb: (e: unknown) => void): void;
  start(): Promise<void>;
  stop(): Promise<void>;
  latestResourceVersion(): string;
}

export interface SourceHandler {
  add(o: KubernetesObject): void;
  update(prev: KubernetesObject, cur: KubernetesObject): void;
  delete(last: KubernetesObject): void;
  synced(): void;
}

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  /** ± this fraction of each delay, at random. */
  readonly jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, jitter: 0.2 };

/** The n-th retry's delay (n from 0): initial·2ⁿ capped at max, then jittered. Pure. */
export function backoffDelay(n: number, o: BackoffOptions, random: () => number): number {
  const base = Math.min(o.maxMs, o.initialMs * 2 ** Math.min(n, 30));
  return Math.max(0, Math.round(base * (1 + o.jitter * (2 * random() - 1))));
}

export interface InformerOptions {
  /** For the log: "services", "endpointslices", "nodes/<name>" ... */
  readonly name: string;
  readonly listWatch: ListWatchLike;
  readonly handler: SourceHandler;
  readonly clock: Clock;
  readonly log: Logger;
  readonly backoff?: BackoffOptions;
  /** Restart a watch that delivered nothing for this long (default 5 minutes). */
  readonly silenceMs?: number;
  /** Watches reopened faster than this are held back (default 1 s). */
  readonly minRewatchMs?: number;
  /**
   * A list, or the watch's opening, that has not answered in this long is abandoned and made again (default 30 s,
   * client-go's dial timeout). A Pod dialing the API through the kubernetes ClusterIP before its node's Service
   * rules exist sends its SYN un-NATed; the conntrack entry keeps every retransmission on that path, and the
   * connection hangs for the kernel's SYN retries (over 2 minutes) unless it is given up.
   */
  readonly startTimeoutMs?: number;
  readonly random?: () => number;
}

function isAbort(e: unknown): boolean {
  const x = e as { name?: unknown; type?: unknown } | null;
  return !!x && (x.name === 'AbortError' || x.type === 'aborted');
}

const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

export class Informer {
  private readonly known = new Map<string, KubernetesObject>();
  private failures = 0;
  private stopped = true;
  /** Bumped on every deliberate stop, so the error client-node reports for its own abort is ignored. */
  private gen = 0;
  private retry: unknown = null;
  private silence: unknown = null;
  private lastConnects: [number, number] = [-Infinity, -Infinity];
  private synced = false;
  private restarting = false;
  /** Deliberate stops whose abort client-node will still report as an error. */
  private abortsExpected = 0;
  private failed = false;
  /** Restarts so far, by cause (status and tests). */
  readonly restarts = { error: 0, silence: 0, fastClose: 0, stuck: 0 };

  constructor(private readonly o: InformerOptions) {
    const lw = o.listWatch;
    lw.on('add', (obj) => this.onObject(obj, 'add'));
    lw.on('update', (obj) => this.onObject(obj, 'update'));
    lw.on('delete', (obj) => this.onDelete(obj));
    lw.on('error', (e) => this.onError(e));
    lw.on('connect', () => this.onConnect());
  }

  /** Starts listing and watching; resolves when the first list was delivered or failed (then it retries). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.gen++;
    this.clear();
    await this.o.listWatch.stop();
  }

  get name(): string {
    return this.o.name;
  }

  get resourceVersion(): string {
    return this.o.listWatch.latestResourceVersion();
  }

  /** The objects as last delivered. */
  list(): KubernetesObject[] {
    return [...this.known.values()];
  }

  private clear(): void {
    if (this.retry !== null) this.o.clock.clearTimeout(this.retry);
    if (this.silence !== null) this.o.clock.clearTimeout(this.silence);
    this.retry = null;
    this.silence = null;
  }

  private async run(): Promise<void> {
    const gen = this.gen;
    const errorsBefore = this.restarts.error;
    this.failed = false;
    const stuck = this.o.clock.setTimeout(() => {
      if (this.stopped || gen !== this.gen) return;
      this.restarts.stuck++;
      this.o.log.warn({ [F.subsys]: 'watch', source: this.o.name, [F.durationMs]: this.o.clock.now() - started }, 'list or watch did not answer; making it again');
      const next = ++this.gen;
      void this.stopListWatch().then(() => {
        if (this.stopped || next !== this.gen) return;
        this.restarting = true;
        return this.run();
      });
    }, this.o.startTimeoutMs ?? 30_000);
    const started = this.o.clock.now();
    try {
      await this.o.listWatch.start();
    } finally {
      this.o.clock.clearTimeout(stuck);
    }
    if (gen !== this.gen || this.stopped) return;
    // client-node resolves start() after the list was delivered and the watch opened, or after it reported an error.
    if (!this.failed && this.restarts.error === errorsBefore) {
      this.failures = 0;
      this.armSilence();
      if (!this.synced) {
        this.synced = true;
        this.o.handler.synced();
      }
    }
  }

  private onObject(obj: KubernetesObject, how: 'add' | 'update'): void {
    this.armSilence();
    stripManagedFields(obj);
    const k = keyOf(obj);
    const prev = this.known.get(k);
    this.known.set(k, obj);
    // A relist after a 410 reports a known object as added again: it is an update to this agent.
    if (prev) this.o.handler.update(prev, obj);
    else this.o.handler.add(obj);
    void how;
  }

  private onDelete(obj: KubernetesObject): void {
    this.armSilence();
    stripManagedFields(obj);
    const k = keyOf(obj);
    const last = this.known.get(k) ?? obj;
    this.known.delete(k);
    this.o.handler.delete(last);
  }

  private onConnect(): void {
    const now = this.o.clock.now();
    // Three (re)watches within minRewatchMs: the server closes them at once. (Two are normal: a 410
    // makes client-node list and watch again straight away.)
    const tooSoon = now - this.lastConnects[0] < (this.o.minRewatchMs ?? 1000);
    this.lastConnects = [this.lastConnects[1], now];
    // The first connect of a (re)start is ours; a quick second one is client-node re-watching after a clean close.
    if (tooSoon && !this.restarting) {
      this.lastConnects = [-Infinity, -Infinity];
      this.restarts.fastClose++;
      this.o.log.warn({ [F.subsys]: 'watch', source: this.o.name }, 'watch closed at once; re-watching after a backoff');
      this.schedule(true);
    }
    this.restarting = false;
  }

  private onError(e: unknown): void {
    if (this.abortsExpected > 0 && isAbort(e)) {
      this.abortsExpected--;
      return;
    }
    this.failed = true;
    if (this.stopped || this.retry !== null) return;
    this.restarts.error++;
    this.o.log.warn({ [F.subsys]: 'watch', source: this.o.name, [F.err]: e instanceof Error ? e.message : String(e) }, 'list or watch failed; restarting after a backoff');
    this.schedule(false);
  }

  /** Stops the ListWatch (when it still runs) and starts it again after the backoff. */
  private schedule(stopFirst: boolean): void {
    if (this.stopped) return;
    this.clear();
    const gen = ++this.gen;
    if (stopFirst) this.stopListWatch();
    const delay = backoffDelay(this.failures++, this.o.backoff ?? DEFAULT_BACKOFF, this.o.random ?? Math.random);
    this.retry = this.o.clock.setTimeout(() => {
      this.retry = null;
      if (this.stopped || gen !== this.gen) return;
      this.restarting = true;
      void this.run();
    }, delay);
  }

  private stopListWatch(): Promise<void> {
    this.abortsExpected++;
    // Forget the expectation if no abort comes (nothing was in flight).
    this.o.clock.setTimeout(() => (this.abortsExpected = Math.max(0, this.abortsExpected - 1)), 5_000);
    return this.o.listWatch.stop();
  }

  private armSilence(): void {
    if (this.stopped) return;
    if (this.silence !== null) this.o.clock.clearTimeout(this.silence);
    this.silence = this.o.clock.setTimeout(() => {
      this.silence = null;
      if (this.stopped || this.retry !== null) return;
      this.restarts.silence++;
      this.o.log.info({ [F.subsys]: 'watch', source: this.o.name, rv: this.resourceVersion }, 'watch silent; restarting it from its resourceVersion');
      const gen = ++this.gen;
      void this.stopListWatch().then(() => {
        if (this.stopped || gen !== this.gen) return;
        this.restarting = true;
        return this.run();
      });
    }, this.o.silenceMs ?? 300_000);
  }
}

/**
 * Several sources, synced together: each handler's synced() is called once,
 * after every source delivered its first list (what the proxy needs: no
 * rules before both Services and EndpointSlices are known).
 */
export class SyncGroup {
  private readonly pending = new Set<string>();
  private readonly waiting: (() => void)[] = [];
  private done = false;

  /** A handler for source `name` whose synced() joins the group; `onSynced` runs when all did. */
  join(name: string, h: Omit<SourceHandler, 'synced'>, onSynced: () => void): SourceHandler {
    this.pending.add(name);
    this.waiting.push(onSynced);
    return {
      add: (o) => h.add(o),
      update: (p, c) => h.update(p, c),
      delete: (o) => h.delete(o),
      synced: () => {
        this.pending.delete(name);
        if (this.pending.size === 0 && !this.done) {
          this.done = true;
          for (const f of this.waiting) f();
        }
      },
    };
  }

  get synced(): boolean {
    return this.done;
  }
}
