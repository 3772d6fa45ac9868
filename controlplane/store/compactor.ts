/**
 * controlplane/store/compactor: drops the storage's history once it is
 * older than the window watchers may resume in (kube-apiserver's
 * `storage/etcd3/compact.go`, which compacts etcd every 5 minutes).
 *
 * Every `everyMs` it samples the backend's current revision and compacts to
 * the newest sample at least `historyMs` old, so a watch may resume from
 * any revision of the last `historyMs`. With several API servers on one
 * etcd, one compacts per round: EtcdStorage.compact() is kube-apiserver's
 * compare-and-swap on the version of `compact_rev_key` (a replica that
 * loses it leaves the round to the one that won); the control plane runs it
 * every 5 minutes there, as kube-apiserver does. For the embedded store
 * there is one process.
 */
import { F } from '../../lib/log/fields.js';
import { silentLogger, type Logger } from '../../lib/log/log.js';
import { realClock, type Clock } from '../../lib/reconcile/clock.js';
import type { Storage } from './storage.js';

export interface CompactorOptions {
  readonly storage: Storage;
  readonly clock?: Clock;
  readonly log?: Logger;
  /** History kept for watchers that resume: at least this long (default 5 minutes). */
  readonly historyMs?: number;
  /** How often compaction runs (default 60 s). */
  readonly everyMs?: number;
  /** Told each revision compacted to (the watch cache trims its ring to match). */
  readonly onCompacted?: (rev: number) => void;
}

export class Compactor {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly historyMs: number;
  private readonly everyMs: number;
  /** (time, revision) samples, oldest first. */
  private samples: { at: number; rev: number }[] = [];
  private timer: unknown = null;
  private running = false;

  constructor(private readonly o: CompactorOptions) {
    this.clock = o.clock ?? realClock;
    this.log = (o.log ?? silentLogger()).child({ [F.subsys]: 'controlplane/compactor' });
    this.historyMs = o.historyMs ?? 5 * 60_000;
    this.everyMs = o.everyMs ?? 60_000;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.samples.push({ at: this.clock.now(), rev: await this.o.storage.currentRev() });
    this.arm();
  }

  stop(): void {
    this.running = false;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  /** One round: sample, and compact to the newest sample at least historyMs old. */
  async tick(): Promise<void> {
    const now = this.clock.now();
    this.samples.push({ at: now, rev: await this.o.storage.currentRev() });
    while (this.samples.length > 1 && this.samples[1]!.at <= now - this.historyMs) this.samples.shift();
    const oldest = this.samples[0]!;
    if (oldest.at > now - this.historyMs) return;
    if (oldest.rev > (await this.o.storage.compactedRev())) {
      await this.o.storage.compact(oldest.rev);
      this.o.onCompacted?.(oldest.rev);
    }
  }

  private arm(): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      if (!this.running) return;
      this.tick()
        .catch((e: unknown) => this.log.error({ [F.err]: e }, 'compaction failed; retried at the next interval'))
        .finally(() => {
          if (this.running) this.arm();
        });
    }, this.everyMs);
  }
}
