/**
 * testing/store: the control plane's storage for unit tests, started
 * synchronously: LocalStorage over the validating FakePersistence, and a
 * watch cache over it. The storage delivers in the commit's own turn, so a
 * test reads its writes from the cache as soon as they are acknowledged.
 */
import type { Clock } from '../../lib/reconcile/clock.js';
import { LocalStorage } from '../store/local-storage.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { WatchCache } from '../store/watch-cache.js';

export interface TestStore {
  readonly persistence: FakePersistence;
  readonly storage: LocalStorage;
  readonly cache: WatchCache;
  close(): void;
}

export function openTestStore(opts: { persistence?: FakePersistence; clock?: Clock; ringSize?: number } = {}): TestStore {
  const persistence = opts.persistence ?? new FakePersistence();
  const storage = new LocalStorage({ persistence });
  const cache = new WatchCache({ storage, ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.ringSize ? { ringSize: opts.ringSize } : {}) });
  cache.startFrom(storage.snapshot());
  return {
    persistence,
    storage,
    cache,
    close: () => {
      cache.close();
      void storage.close();
    },
  };
}
