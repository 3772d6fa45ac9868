/**
 * reconcile/change-tracker: uncommitted changes per key, kube-proxy's
 * ServiceChangeTracker shape made generic. Pure.
 *
 * Handlers record (prev, cur) as events arrive; the sync drains them. For a
 * key with several events before a drain, the FIRST prev (what was applied)
 * and the LATEST cur are kept; when they end up equal (add then delete,
 * update back and forth) the change cancels out and the key disappears, so
 * a sync never sees a no-op. null means "absent".
 */
import { deepEqual } from './deep-equal.js';

export interface Change<V> {
  readonly prev: V | null;
  readonly cur: V | null;
}

export class ChangeTracker<K, V> {
  private items = new Map<K, { prev: V | null; cur: V | null }>();

  constructor(private readonly equal: (a: V | null, b: V | null) => boolean = deepEqual) {}

  /**
   * Records one event for `key`. Returns whether the key has a pending change
   * afterwards. Both null is a no-op.
   */
  update(key: K, prev: V | null, cur: V | null): boolean {
    if (prev === null && cur === null && !this.items.has(key)) return false;
    const item = this.items.get(key) ?? { prev, cur };
    item.cur = cur;
    if (this.equal(item.prev, item.cur)) {
      this.items.delete(key);
      return false;
    }
    this.items.set(key, item);
    return true;
  }

  /** Number of keys with a pending change. */
  get size(): number {
    return this.items.size;
  }

  has(key: K): boolean {
    return this.items.has(key);
  }

  /** Returns every pending change and forgets them. */
  drain(): Map<K, Change<V>> {
    const out = new Map<K, Change<V>>();
    for (const [k, v] of this.items) out.set(k, { prev: v.prev, cur: v.cur });
    this.items = new Map();
    return out;
  }
}
