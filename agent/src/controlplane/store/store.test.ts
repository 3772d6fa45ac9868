/**
 * The Store on the validating fake persistence: revisions, preconditions,
 * group commit, failed commits, the history window, watch replay and 410,
 * restart.
 */
import t from 'tap';
import { FakeClock } from '../../reconcile/clock.fake.js';
import { FakePersistence } from './persistence.fake.js';
import { Store } from './store.js';
import type { StoreEvent } from './types.js';

const svc = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, ...extra });
const key = (name: string, ns = 'default') => ({ gr: 'services', namespace: ns, name });
const rv = (s: { object: { metadata?: Record<string, unknown> } }) => s.object.metadata!['resourceVersion'];

function open(p = new FakePersistence(), opts: { ringSize?: number; clock?: FakeClock } = {}) {
  const clock = opts.clock ?? new FakeClock();
  const store = new Store({ persistence: p, clock, ...(opts.ringSize ? { ringSize: opts.ringSize } : {}) });
  return { p, clock, store };
}

t.test('create, get, update with and without a precondition, delete: one ascending revision sequence', async (t) => {
  const { store } = open();
  const a = await store.create(key('a'), svc('a'));
  t.equal(a.rev, 2, 'a new store starts above revision 1 (a list at "0" would mean "any")');
  t.equal(rv(a), '2', 'the revision is the resourceVersion');
  t.equal(store.get(key('a'))?.json, a.json);
  await t.rejects(store.create(key('a'), svc('a')), { code: 'NN_ERR_ALREADY_EXISTS' });
  const b = await store.update(key('a'), svc('a', { spec: { x: 1 } }), a.rev);
  t.equal(b.rev, 3);
  t.equal(b.createRev, 2, 'createRev survives updates');
  await t.rejects(store.update(key('a'), svc('a'), a.rev), { code: 'NN_ERR_CONFLICT', message: /resourceVersion 3, not 2/ });
  t.equal((await store.update(key('a'), svc('a', { spec: { x: 2 } }))).rev, 4, 'no precondition: last write wins');
  await t.rejects(store.update(key('nope'), svc('nope')), { code: 'NN_ERR_NOT_FOUND' });
  await t.rejects(store.delete(key('a'), 3), { code: 'NN_ERR_CONFLICT' });
  const d = await store.delete(key('a'), 4);
  t.equal(d.rev, 5);
  t.equal(rv(d), '5', 'the deleted object carries the deletion revision');
  t.equal(store.get(key('a')), undefined);
  await t.rejects(store.delete(key('a')), { code: 'NN_ERR_NOT_FOUND' });
  t.equal(store.rev, 5);
});

t.test('group commit: writes accepted in one turn are one commit; readers see them only once committed', async (t) => {
  const { p, store } = open();
  const writes = Array.from({ length: 50 }, (_, i) => store.create(key(`s${i}`), svc(`s${i}`)));
  t.equal(store.get(key('s0')), undefined, 'get: not committed yet');
  t.ok(store.latest(key('s0')), 'latest: accepted');
  t.equal(store.list('services').items.length, 0);
  const done = await Promise.all(writes);
  t.equal(p.commits, 1, 'one transaction for 50 writes');
  t.same(done.map((s) => s.rev), Array.from({ length: 50 }, (_, i) => i + 2));
  t.equal(store.list('services').items.length, 50);
  t.same(store.list('services').items.slice(0, 3).map((s) => s.key), ['services/default/s0', 'services/default/s1', 'services/default/s10'], 'sorted by key');
  // An update computed from an accepted, uncommitted version does not spin on a Conflict.
  const c = store.create(key('x'), svc('x'));
  const u = store.update(key('x'), svc('x', { spec: { y: 1 } }), store.latest(key('x'))!.rev);
  t.equal((await u).rev, (await c).rev + 1);
});

t.test('a failed commit rejects every uncommitted write and stores, shows and sends none of them', async (t) => {
  const { p, store } = open();
  await store.create(key('keep'), svc('keep'));
  const seen: StoreEvent[] = [];
  store.watch({ gr: 'services', afterRev: store.rev, onEvent: (e) => seen.push(e) });
  p.failNext = 1;
  const w1 = store.create(key('a'), svc('a'));
  const w2 = store.update(key('keep'), svc('keep', { spec: { z: 1 } }));
  await t.rejects(w1, { code: 'NN_ERR_STORE' });
  await t.rejects(w2, { code: 'NN_ERR_STORE' });
  t.equal(store.latest(key('a')), undefined, 'the accepted create is gone');
  t.equal(store.latest(key('keep'))?.object['spec'], undefined, 'the accepted update is gone');
  t.same(seen, [], 'no watcher saw them');
  const after = await store.create(key('a'), svc('a'));
  t.ok(after.rev > 4, 'the failed revisions are not reused (a gap)');
  t.same(seen.map((e) => e.type), ['ADDED']);
});

t.test('watch: history then live, in order, per group-resource and namespace; DELETED carries its revision', async (t) => {
  const { store } = open();
  const a = await store.create(key('a'), svc('a'));
  await store.create({ gr: 'pods', namespace: 'default', name: 'p' }, { kind: 'Pod', metadata: { name: 'p' } });
  await store.create(key('b', 'other'), svc('b'));
  const events: string[] = [];
  const h = store.watch({ gr: 'services', afterRev: a.rev - 1, onEvent: (e) => events.push(`${e.type} ${e.key} ${e.rev}`) });
  t.same(events, ['ADDED services/default/a 2', 'ADDED services/other/b 4'], 'replayed from the history, pods left out');
  const onlyDefault: string[] = [];
  store.watch({ gr: 'services', namespace: 'default', afterRev: store.rev, onEvent: (e) => onlyDefault.push(`${e.type} ${e.key}`) });
  await store.update(key('a'), svc('a', { spec: { v: 1 } }));
  const d = await store.delete(key('b', 'other'));
  t.same(events.slice(2), ['MODIFIED services/default/a 5', `DELETED services/other/b ${d.rev}`]);
  t.same(onlyDefault, ['MODIFIED services/default/a']);
  h.stop();
  await store.create(key('c'), svc('c'));
  t.equal(events.length, 4, 'nothing after stop');
});

t.test('watch resumes from the database when the memory ring no longer holds the revision; 410 after compaction', async (t) => {
  const { store } = open(new FakePersistence(), { ringSize: 5 });
  const revs: number[] = [];
  for (let i = 0; i < 20; i++) revs.push((await store.create(key(`s${i}`), svc(`s${i}`))).rev);
  const got: number[] = [];
  store.watch({ gr: 'services', afterRev: revs[2]!, onEvent: (e) => got.push(e.rev) });
  t.same(got, revs.slice(3), 'every event after the revision, from the database and then the ring, none twice');
  store.compact(revs[9]!);
  t.throws(() => store.watch({ gr: 'services', afterRev: revs[8]!, onEvent: () => {} }), { code: 'NN_ERR_EXPIRED', message: /too old resource version/ });
  const from9: number[] = [];
  store.watch({ gr: 'services', afterRev: revs[9]!, onEvent: (e) => from9.push(e.rev) });
  t.same(from9, revs.slice(10), 'exactly at the compacted revision is still complete');
});

t.test('compaction on the clock keeps at least historyMs of history', async (t) => {
  const p = new FakePersistence();
  const clock = new FakeClock();
  const store = new Store({ persistence: p, clock, historyMs: 300_000, compactEveryMs: 60_000 });
  t.teardown(() => store.close());
  const early = (await store.create(key('a'), svc('a'))).rev;
  await clock.advance(60_000);
  const mid = (await store.create(key('b'), svc('b'))).rev;
  await clock.advance(240_000);
  t.ok(store.compactedRev < early, 'nothing older than 5 minutes yet');
  await clock.advance(60_000);
  t.ok(store.compactedRev >= early && store.compactedRev < mid, `compacted to ${store.compactedRev}: what was committed 5 minutes ago`);
  t.doesNotThrow(() => store.watch({ gr: 'services', afterRev: mid - 1, onEvent: () => {} }));
});

t.test('a restart keeps every object, the revision sequence and the history', async (t) => {
  const p = new FakePersistence();
  const { store } = open(p);
  for (let i = 0; i < 5; i++) await store.create(key(`s${i}`), svc(`s${i}`));
  await store.delete(key('s0'));
  const last = store.rev;
  store.close();
  const again = open(p).store;
  t.equal(again.rev, last);
  t.same(again.list('services').items.map((s) => s.key), ['services/default/s1', 'services/default/s2', 'services/default/s3', 'services/default/s4']);
  const replay: string[] = [];
  again.watch({ gr: 'services', afterRev: 1, onEvent: (e) => replay.push(e.type) });
  t.same(replay, ['ADDED', 'ADDED', 'ADDED', 'ADDED', 'ADDED', 'DELETED']);
  t.equal((await again.create(key('n'), svc('n'))).rev, last + 1);
});

t.test('a watcher that throws is stopped; the others keep receiving', async (t) => {
  const { store } = open();
  const good: number[] = [];
  store.watch({ gr: 'services', afterRev: store.rev, onEvent: () => { throw new Error('client gone'); } });
  store.watch({ gr: 'services', afterRev: store.rev, onEvent: (e) => good.push(e.rev) });
  await store.create(key('a'), svc('a'));
  await store.create(key('b'), svc('b'));
  t.equal(good.length, 2);
});
