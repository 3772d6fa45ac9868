/**
 * LocalStorage on the validating fake persistence: what the contract does
 * not say and this backend adds: group commit, a failed commit that takes
 * every uncommitted write with it, and a compare-and-swap against the
 * newest accepted version (no spinning until the commit). The contract
 * itself runs in storage.contract.test.ts.
 */
import t from 'tap';
import { LocalStorage } from './local-storage.js';
import { FakePersistence } from './persistence.fake.js';
import { ConflictError, guaranteedUpdate } from './storage.js';
import type { StoreEvent } from './types.js';

const svc = (name: string, spec: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec });
const key = (name: string) => `services/default/${name}`;

function open(p = new FakePersistence()) {
  const s = new LocalStorage({ persistence: p });
  t.teardown(() => s.close());
  return { p, s };
}

t.test('a new store starts above revision 1 (a list at "0" means "any")', async (t) => {
  const { s } = open();
  t.equal((await s.create(key('a'), svc('a'))).rev, 2);
});

t.test('group commit: writes accepted in one turn are one commit; readers see them only once committed', async (t) => {
  const { p, s } = open();
  const writes = Array.from({ length: 50 }, (_, i) => s.create(key(`s${i}`), svc(`s${i}`)));
  t.equal(await s.get(key('s0')), undefined, 'get: not committed yet');
  t.equal((await s.list('services/')).items.length, 0);
  const done = await Promise.all(writes);
  t.equal(p.commits, 1, 'one transaction for 50 writes');
  t.same(done.map((x) => x.rev), Array.from({ length: 50 }, (_, i) => i + 2));
  t.equal((await s.list('services/')).items.length, 50);
  // An update computed from an accepted, uncommitted version does not spin on a Conflict.
  const c = s.create(key('x'), svc('x'));
  const lost = await s.update(key('x'), svc('x', { y: 1 }), 1).then(() => null, (e: unknown) => e);
  t.ok(lost instanceof ConflictError && lost.current?.rev === 52, 'the conflict carries the accepted version');
  const u = await guaranteedUpdate(s, key('x'), () => ({ write: svc('x', { y: 2 }) }), { cached: (lost as ConflictError).current });
  t.equal(u.stored.rev, (await c).rev + 1, 'decided once, on the accepted version');
});

t.test('a failed commit rejects every uncommitted write and stores, shows and sends none of them', async (t) => {
  const { p, s } = open();
  const keep = await s.create(key('keep'), svc('keep'));
  const seen: StoreEvent[] = [];
  s.watch({ prefix: 'services/', afterRev: keep.rev, onEvent: (e) => seen.push(e), onError: () => {} });
  p.failNext = 1;
  const w1 = s.create(key('a'), svc('a'));
  const w2 = s.update(key('keep'), svc('keep', { z: 1 }), keep.rev);
  await t.rejects(w1, { code: 'NN_ERR_STORE' });
  await t.rejects(w2, { code: 'NN_ERR_STORE' });
  t.equal(await s.get(key('a')), undefined, 'the accepted create is gone');
  t.same((await s.get(key('keep')))?.object['spec'], {}, 'the accepted update is gone');
  t.same(seen, [], 'no watcher saw them');
  const after = await s.create(key('a'), svc('a'));
  t.ok(after.rev > 4, 'the failed revisions are not reused (a gap)');
  t.same(seen.map((e) => e.type), ['ADDED']);
});

t.test('a watcher hears of a write in the turn it is acknowledged; its delivered mark follows the commits', async (t) => {
  const { s } = open();
  const order: string[] = [];
  const h = s.watch({ prefix: 'services/', afterRev: await s.currentRev(), onEvent: (e) => order.push(`event ${e.rev}`), onError: () => {} });
  const a = await s.create(key('a'), svc('a'));
  order.push(`ack ${a.rev}`);
  t.same(order, [`event ${a.rev}`, `ack ${a.rev}`], 'the event first');
  await s.create('pods/default/p', { kind: 'Pod', metadata: { name: 'p' } });
  t.equal(h.progressRev, await s.currentRev(), 'a commit of another prefix moves the mark too');
});
