/**
 * The Indexer: sorted lists kept sorted through puts and removes, a
 * namespace's run of keys, named indexes filed and unfiled on change,
 * added late, shared and refused, and a random workload checked against a
 * naive model (sort and filter everything on every read).
 */
import t from 'tap';
import { rng } from '../../lib/testing/rng.js';
import { Indexer, SortedRun, type IndexFunc } from './indexer.js';
import type { Stored } from './types.js';

const stored = (key: string, labels: Record<string, string> = {}, rev = 1): Stored => {
  const [, namespace, name] = key.split('/');
  const object = { metadata: { name, namespace, labels } };
  return { key, rev, createRev: rev, object, json: JSON.stringify(object) };
};
const keys = (xs: readonly Stored[]) => xs.map((s) => s.key);
const app: IndexFunc = (s) => {
  const v = (s.object.metadata?.['labels'] as Record<string, string> | undefined)?.['app'];
  return v ? [v] : [];
};

t.test('lists stay sorted by key through puts and removes; a namespace is its run of keys', async (t) => {
  const ix = new Indexer();
  for (const k of ['services/b/x', 'services/a/z', 'services/a-b/q', 'services/a/y', 'services/a.b/r', 'pods/a/p']) ix.put(stored(k));
  t.same(keys(ix.list('services')), ['services/a-b/q', 'services/a.b/r', 'services/a/y', 'services/a/z', 'services/b/x']);
  t.same(keys(ix.list('services', 'a')), ['services/a/y', 'services/a/z'], 'not a-b or a.b, which sort around it');
  t.same(keys(ix.list('services', 'c')), []);
  t.same(keys(ix.list('nodes')), [], 'an unknown group-resource is empty');
  const held = ix.list('services', 'a');
  ix.put(stored('services/a/y', {}, 2));
  ix.remove('services/a/z');
  ix.remove('services/a/nope');
  t.same(keys(held), ['services/a/y', 'services/a/z'], 'a list handed out is a copy');
  t.equal(held[0]!.rev, 1);
  t.same(keys(ix.list('services', 'a')), ['services/a/y']);
  t.equal(ix.list('services', 'a')[0]!.rev, 2, 'a put of an existing key replaces it in place');
  t.equal(ix.get('services/a/y')?.rev, 2);
  t.equal(ix.get('services/a/z'), undefined);
  t.same([...ix.counts()], [['services', 4], ['pods', 1]]);
});

t.test('named indexes: filed on put, moved on change, unfiled on remove, built when added late', async (t) => {
  const ix = new Indexer();
  ix.put(stored('pods/n/a', { app: 'web' }));
  ix.put(stored('pods/n/b', { app: 'db' }));
  ix.addIndex('pods', 'app', app);
  t.same(keys(ix.byIndex('pods', 'app', 'web')), ['pods/n/a'], 'built from what is there');
  ix.put(stored('pods/m/c', { app: 'web' }));
  t.same(keys(ix.byIndex('pods', 'app', 'web')), ['pods/m/c', 'pods/n/a'], 'sorted by key');
  ix.put(stored('pods/n/a', { app: 'db' }, 2));
  t.same(keys(ix.byIndex('pods', 'app', 'web')), ['pods/m/c'], 'a changed value moves the object');
  t.same(keys(ix.byIndex('pods', 'app', 'db')), ['pods/n/a', 'pods/n/b']);
  t.equal(ix.byIndex('pods', 'app', 'db')[0]!.rev, 2, 'the index holds the newest version');
  ix.put(stored('pods/n/b', {}, 3));
  ix.remove('pods/n/a');
  t.same(keys(ix.byIndex('pods', 'app', 'db')), [], 'an object with no value, and a removed one, are in no index entry');
  t.same(keys(ix.byIndex('pods', 'app', 'nope')), []);
  ix.addIndex('pods', 'app', app);
  t.throws(() => ix.addIndex('pods', 'app', (s) => [s.key]), { code: 'NN_ERR_INTERNAL' }, 'the same name with another function is refused');
  t.throws(() => ix.byIndex('services', 'app', 'web'), { code: 'NN_ERR_INTERNAL', message: /services has no index "app"/ });
});

t.test('load: replaces everything in one sort and keeps the indexes', async (t) => {
  const ix = new Indexer();
  ix.addIndex('pods', 'app', app);
  ix.put(stored('pods/n/old', { app: 'web' }));
  ix.load([stored('pods/n/b', { app: 'web' }), stored('services/n/s'), stored('pods/n/a', { app: 'web' })]);
  t.same(keys(ix.list('pods')), ['pods/n/a', 'pods/n/b']);
  t.same(keys(ix.byIndex('pods', 'app', 'web')), ['pods/n/a', 'pods/n/b'], 'indexes rebuilt over the loaded objects');
  t.equal(ix.get('pods/n/old'), undefined);
});

t.test('a random workload agrees with sorting and filtering everything on every read', async (t) => {
  const r = rng(24);
  const ix = new Indexer();
  ix.addIndex('pods', 'app', app);
  const model = new Map<string, Stored>();
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  let rev = 1;
  for (let i = 0; i < 3000; i++) {
    const key = `pods/${pick(['a', 'a-a', 'b', 'ab'])}/${Math.floor(r() * 60)}`;
    if (r() < 0.3) {
      ix.remove(key);
      model.delete(key);
    } else {
      const s = stored(key, r() < 0.7 ? { app: pick(['web', 'db']) } : {}, ++rev);
      ix.put(s);
      model.set(key, s);
    }
    if (i % 100 !== 0) continue;
    const all = [...model.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
    t.same(keys(ix.list('pods')), keys(all), `list at step ${i}`);
    for (const ns of ['a', 'a-a', 'b', 'ab']) t.same(keys(ix.list('pods', ns)), keys(all.filter((s) => s.key.split('/')[1] === ns)), `namespace ${ns} at step ${i}`);
    for (const v of ['web', 'db']) t.same(ix.byIndex('pods', 'app', v), all.filter((s) => app(s).includes(v)), `index app=${v} at step ${i}`);
  }
});

t.test('SortedRun: chunks split and empty out through a long random workload, and ranges cross chunk borders', async (t) => {
  const r = rng(7);
  const run = new SortedRun();
  const model = new Map<string, Stored>();
  const key = (i: number) => `pods/ns/${String(i).padStart(5, '0')}`;
  let checks = 0;
  for (let i = 0; i < 40_000; i++) {
    // Grow to several chunks first, then churn, then drain most of it.
    const phase = i < 15_000 ? 0.05 : i < 30_000 ? 0.5 : 0.95;
    const k = key(Math.floor(r() * 6000));
    if (r() < phase) {
      run.delete(k);
      model.delete(k);
    } else {
      const s = stored(k, {}, i);
      run.set(s);
      model.set(k, s);
    }
    if (i % 2500 !== 0 && i !== 39_999) continue;
    const all = [...model.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
    t.same(run.range(), all, `everything at step ${i} (${all.length} objects)`);
    const lo = key(Math.floor(r() * 6000));
    const hi = key(Math.floor(r() * 6000));
    t.same(keys(run.range(lo, hi)), keys(all.filter((s) => s.key >= lo && s.key < hi)), `range [${lo}, ${hi}) at step ${i}`);
    checks++;
  }
  t.equal(checks, 17);
  run.reset([]);
  t.same(run.range(), []);
  run.delete('pods/ns/x');
  run.set(stored('pods/ns/x'));
  t.same(keys(run.range()), ['pods/ns/x']);
});
