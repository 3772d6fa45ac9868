/**
 * controlplane/store/persistence.fake: an in-memory Persistence that checks
 * the Store's use of it the way the database would: revisions strictly
 * ascending across commits, a DELETED only of an existing key, nothing
 * committed after close. `failNext` makes the next commits throw, and
 * nothing of those batches is kept, as with a rolled-back transaction.
 */
import type { Loaded, PersistedEvent, PersistedObject, Persistence } from './persistence.js';

export class FakePersistence implements Persistence {
  readonly objects = new Map<string, PersistedObject>();
  events: PersistedEvent[] = [];
  rev = 0;
  compacted = 0;
  commits = 0;
  failNext = 0;
  closed = false;

  load(): Loaded {
    this.closed = false;
    return { objects: [...this.objects.values()], rev: this.rev, compacted: this.compacted };
  }

  commit(events: readonly PersistedEvent[]): void {
    if (this.closed) throw new Error('FakePersistence: commit after close');
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('injected commit failure');
    }
    let last = this.rev;
    const objects = new Map(this.objects);
    for (const e of events) {
      if (e.rev <= last) throw new Error(`FakePersistence: revision ${e.rev} not above ${last}`);
      last = e.rev;
      if (e.type === 'DELETED') {
        if (!objects.delete(e.key)) throw new Error(`FakePersistence: DELETED of missing ${e.key}`);
      } else {
        if (e.type === 'ADDED' && objects.has(e.key)) throw new Error(`FakePersistence: ADDED of existing ${e.key}`);
        if (e.type === 'MODIFIED' && !objects.has(e.key)) throw new Error(`FakePersistence: MODIFIED of missing ${e.key}`);
        objects.set(e.key, { key: e.key, rev: e.rev, createRev: e.createRev, json: e.json });
      }
    }
    this.objects.clear();
    for (const [k, v] of objects) this.objects.set(k, v);
    this.events.push(...events);
    this.rev = last;
    this.commits++;
  }

  readEvents(afterRev: number, limit: number): PersistedEvent[] {
    return this.events.filter((e) => e.rev > afterRev).slice(0, limit);
  }

  compact(rev: number): void {
    this.events = this.events.filter((e) => e.rev > rev);
    this.compacted = rev;
  }

  close(): void {
    this.closed = true;
  }
}
