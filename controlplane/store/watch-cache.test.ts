/**
 * The watch cache over the in-memory backend, whose watch delivers late
 * (as etcd's does), and over LocalStorage where it matters: consistent
 * reads that wait for the backend's revision, watches from the ring and
 * from below it, 410, lists at a revision from the ring and from the
 * backend, indexes, and a broken backend watch.
 */
import t from 'tap';
import { NodenetError } from '../../lib/errors/errors.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { openTestStore } from '../testing/store.js';
import { MemoryStorage } from './memory-storage.js';
import type { StorageWatchOptions } from './storage.js';
import type { StoreEvent } from './types.js';
import { WatchCache } from './watch-cache.js';

const svc = (name: string, ns = 'default', spec: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec });
const key = (name: string, ns = 'default') => `services/${ns}/${name}`;

async function started(storage = new MemoryStorage(), opts: { ringSize?: number } = {}) {
  const cache = new WatchCache({ storage, ...opts });
  await cache.start();
  t.teardown(() => cache.close());
  return { storage, cache };
}

t.test('a write is in the cache once fresh() returns, though the backend delivers it late', async (t) => {
  const { storage, cache } = await started();
  await storage.create(key('pre'), svc('pre'));
  const a = await storage.create(key('a'), svc('a'));
  t.equal(cache.get(key('a')), undefined, 'not yet: the backend delivers on a later turn');
  t.equal(await cache.fresh(), a.rev, 'fresh() waits for the revision the backend acknowledged');
  t.equal(cache.get(key('a'))?.json, a.json);
  t.same(cache.list('services').items.map((s) => s.key), [key('a'), key('pre')], 'sorted by key');
  t.equal(cache.rev, a.rev);
});

t.test('a cache started on a filled backend lists it in pages at one revision', async (t) => {
  const storage = new MemoryStorage();
  for (let i = 0; i < 25; i++) await storage.create(key(`s${String(i).padStart(2, '0')}`), svc(`s${i}`));
  const cache = new WatchCache({ storage, pageSize: 7 });
  await cache.start();
  t.teardown(() => cache.close());
  t.equal(cache.list('services').items.length, 25);
  t.equal(cache.rev, await storage.currentRev());
});

t.test('watch: the ring, then live; per group-resource and namespace; DELETED carries its revision', async (t) => {
  const { storage, cache } = await started();
  const a = await storage.create(key('a'), svc('a'));
  await storage.create('pods/default/p', { kind: 'Pod', metadata: { name: 'p' } });
  await storage.create(key('b', 'other'), svc('b', 'other'));
  await cache.fresh();
  const events: string[] = [];
  const h = cache.watch({ gr: 'services', afterRev: a.rev - 1, onEvent: (e) => events.push(`${e.type} ${e.key} ${e.rev}`) });
  t.same(events, [`ADDED ${key('a')} ${a.rev}`, `ADDED ${key('b', 'other')} ${a.rev + 2}`], 'replayed from the ring, the Pod left out');
  const onlyDefault: string[] = [];
  cache.watch({ gr: 'services', namespace: 'default', afterRev: cache.rev, onEvent: (e) => onlyDefault.push(`${e.type} ${e.key}`) });
  await storage.update(key('a'), svc('a', 'default', { v: 1 }), a.rev);
  const d = await storage.delete(key('b', 'other'));
  await cache.fresh();
  t.same(events.slice(2), [`MODIFIED ${key('a')} ${a.rev + 3}`, `DELETED ${key('b', 'other')} ${d.rev}`]);
  t.same(onlyDefault, [`MODIFIED ${key('a')}`]);
  t.equal(h.progressRev, cache.rev, 'a bookmark may carry the cache\'s revision');
  h.stop();
  await storage.create(key('c'), svc('c'));
  await cache.fresh();
  t.equal(events.length, 4, 'nothing after stop');
});

t.test('a watch from below the ring is served by the backend: every event once, then live', async (t) => {
  const { storage, cache } = await started(new MemoryStorage(), { ringSize: 5 });
  const revs: number[] = [];
  for (let i = 0; i < 20; i++) revs.push((await storage.create(key(`s${i}`), svc(`s${i}`))).rev);
  await cache.fresh();
  t.throws(() => cache.listAt('services', revs[2]!), { code: 'NN_ERR_EXPIRED' }, 'the ring no longer reaches back');
  t.equal((await cache.listFromStorage('services', revs[2]!)).length, 3, 'the backend lists at that revision');
  t.equal(cache.listAt('services', revs[16]!).length, 17, 'within the ring: rebuilt from it');
  const got: number[] = [];
  const h = cache.watch({ gr: 'services', afterRev: revs[2]!, onEvent: (e) => got.push(e.rev) });
  const last = (await storage.create(key('live'), svc('live'))).rev;
  for (let i = 0; i < 100 && got[got.length - 1] !== last; i++) await new Promise((r) => setImmediate(r));
  t.same(got, [...revs.slice(3), last], 'history from the backend, then live, none twice');
  t.equal(h.progressRev, last, 'its own delivered mark');
  h.stop();
});

t.test('a watch from a compacted revision ends with a 410, through onError or thrown at once', async (t) => {
  const { storage, cache } = await started(new MemoryStorage(), { ringSize: 2 });
  const revs: number[] = [];
  for (let i = 0; i < 6; i++) revs.push((await storage.create(key(`s${i}`), svc(`s${i}`))).rev);
  await storage.compact(revs[3]!);
  await cache.fresh();
  const err = await new Promise<NodenetError>((resolve) => cache.watch({ gr: 'services', afterRev: revs[1]!, onEvent: () => t.fail('no event'), onError: resolve }));
  t.match(err, { code: 'NN_ERR_EXPIRED', message: /too old resource version/ });
  // LocalStorage says so in the watch call itself.
  const local = openTestStore({ ringSize: 2 });
  t.teardown(() => local.close());
  for (let i = 0; i < 6; i++) await local.storage.create(key(`s${i}`), svc(`s${i}`));
  await local.storage.compact(5);
  t.throws(() => local.cache.watch({ gr: 'services', afterRev: 3, onEvent: () => {} }), { code: 'NN_ERR_EXPIRED' });
});

t.test('told of a compaction, the ring drops what the backend dropped: a watch or a list from there is a 410', async (t) => {
  const local = openTestStore();
  t.teardown(() => local.close());
  const revs: number[] = [];
  for (let i = 0; i < 6; i++) revs.push((await local.storage.create(key(`s${i}`), svc(`s${i}`))).rev);
  t.doesNotThrow(() => local.cache.watch({ gr: 'services', afterRev: revs[1]!, onEvent: () => {} }).stop(), 'in the ring');
  await local.storage.compact(revs[3]!);
  local.cache.compacted(revs[3]!);
  t.throws(() => local.cache.watch({ gr: 'services', afterRev: revs[1]!, onEvent: () => {} }), { code: 'NN_ERR_EXPIRED' });
  t.throws(() => local.cache.listAt('services', revs[1]!), { code: 'NN_ERR_EXPIRED' });
  await t.rejects(local.cache.listFromStorage('services', revs[1]!), { code: 'NN_ERR_EXPIRED' });
  const got: number[] = [];
  local.cache.watch({ gr: 'services', afterRev: revs[3]!, onEvent: (e) => got.push(e.rev) });
  t.same(got, revs.slice(4), 'at the compacted revision: complete');
});

t.test('indexes follow the cache', async (t) => {
  const { storage, cache } = await started();
  cache.addIndex('services', 'by-app', (s) => [String((s.object['spec'] as { app?: string }).app ?? '')]);
  await storage.create(key('a'), svc('a', 'default', { app: 'web' }));
  const b = await storage.create(key('b'), svc('b', 'default', { app: 'web' }));
  await cache.fresh();
  t.same(cache.byIndex('services', 'by-app', 'web').map((s) => s.key), [key('a'), key('b')]);
  await storage.update(key('b'), svc('b', 'default', { app: 'db' }), b.rev);
  await cache.fresh();
  t.same(cache.byIndex('services', 'by-app', 'web').map((s) => s.key), [key('a')]);
  t.equal(cache.counts().get('services'), 2);
});

t.test('a consistent read that the cache cannot reach in time is a Timeout', async (t) => {
  const clock = new FakeClock();
  const storage = new MemoryStorage();
  const cache = new WatchCache({ storage, clock, freshTimeoutMs: 3000 });
  await cache.start();
  t.teardown(() => cache.close());
  const waiting = t.rejects(cache.waitFor((await storage.currentRev()) + 5), { code: 'NN_ERR_TIMEOUT', message: /Too large resource version/ });
  await clock.advance(3000);
  await waiting;
});

/** A MemoryStorage whose watches can be broken from the test, as a backend restart breaks them. */
class Breakable extends MemoryStorage {
  readonly errors: ((e: NodenetError) => void)[] = [];
  override watch(opts: StorageWatchOptions) {
    this.errors.push(opts.onError);
    return super.watch(opts);
  }
}

t.test('a broken backend watch ends every watch with a 410, and the cache lists and watches again', async (t) => {
  const storage = new Breakable();
  const { cache } = await started(storage);
  await storage.create(key('a'), svc('a'));
  await cache.fresh();
  const errs: NodenetError[] = [];
  const seen: StoreEvent[] = [];
  cache.watch({ gr: 'services', afterRev: cache.rev, onEvent: (e) => seen.push(e), onError: (e) => errs.push(e) });
  storage.errors[0]!(new NodenetError('NN_ERR_STORE', 'the backend restarted'));
  t.match(errs, [{ code: 'NN_ERR_EXPIRED' }], 'the watcher learns it must list again');
  const b = await storage.create(key('b'), svc('b'));
  for (let i = 0; i < 100 && !cache.get(key('b')); i++) await new Promise((r) => setTimeout(r, 5));
  t.equal(cache.get(key('b'))?.rev, b.rev, 'refilled, and following the backend again');
  t.same(seen, [], 'the ended watch got nothing more');
});
