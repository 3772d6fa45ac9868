import t from 'tap';
import { rng } from '../../../lib/testing/rng.js';
import { VersionedSortedMap } from './versioned-map.js';

const sorted = (m: ReadonlyMap<string, number>): [string, number][] => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));


t.test('from() sorts; get/has/size/iteration agree with a Map', async (t) => {
  const m = VersionedSortedMap.from<number>([['b', 2], ['a', 1], ['c', 3], ['a', 4]]);
  t.same([...m], [['a', 4], ['b', 2], ['c', 3]]);
  t.same([...m.keys()], ['a', 'b', 'c']);
  t.same([...m.values()], [4, 2, 3]);
  t.equal(m.size, 3);
  t.equal(m.get('b'), 2);
  t.equal(m.get('z'), undefined);
  t.ok(m.has('c'));
  t.notOk(m.has('z'));
  const seen: string[] = [];
  m.forEach((v, k) => seen.push(`${k}=${v}`));
  t.same(seen, ['a=4', 'b=2', 'c=3']);
});

t.test('with(): adds in order, replaces, deletes; the old version does not change', async (t) => {
  const v1 = VersionedSortedMap.from<number>([['b', 2], ['d', 4]]);
  const v2 = v1.with(new Map<string, number | undefined>([['a', 1], ['c', 3], ['e', 5], ['d', undefined], ['b', 20]]));
  t.same([...v2], [['a', 1], ['b', 20], ['c', 3], ['e', 5]]);
  t.equal(v2.size, 4);
  t.notOk(v2.has('d'));
  t.equal(v2.get('d'), undefined);
  t.same([...v1], [['b', 2], ['d', 4]], 'the version handed out before is untouched');
  t.equal(v1.size, 2);
  const v3 = v2.with(new Map<string, number | undefined>([['c', undefined], ['d', 40], ['zz', undefined]]));
  t.same([...v3], [['a', 1], ['b', 20], ['d', 40], ['e', 5]]);
  t.same([...v2], [['a', 1], ['b', 20], ['c', 3], ['e', 5]]);
  t.equal(v3.size, 4);
  t.same([...v3.compact()], [...v3]);
  t.equal(v1.with(new Map()), v1, 'no updates: the same version');
});

t.test('random updates across compactions match a Map, and every old version keeps its contents', async (t) => {
  const rand = rng(12);
  const ref = new Map<string, number>();
  for (let i = 0; i < 2000; i++) ref.set(`k${String(Math.floor(rand() * 5000)).padStart(4, '0')}`, i);
  let cur = VersionedSortedMap.from<number>(ref);
  const history: { v: VersionedSortedMap<number>; expect: [string, number][] }[] = [];
  for (let round = 0; round < 300; round++) {
    const up = new Map<string, number | undefined>();
    const n = 1 + Math.floor(rand() * 8);
    for (let j = 0; j < n; j++) {
      const k = `k${String(Math.floor(rand() * 5000)).padStart(4, '0')}`;
      const v = rand() < 0.35 ? undefined : Math.floor(rand() * 1e6);
      up.set(k, v);
    }
    for (const [k, v] of up) {
      if (v === undefined) ref.delete(k);
      else ref.set(k, v);
    }
    cur = cur.with(up);
    if (round % 37 === 0) history.push({ v: cur, expect: sorted(ref) });
    if (round % 50 === 0 || round === 299) {
      t.same([...cur], sorted(ref), `round ${round}: contents and order`);
      t.equal(cur.size, ref.size, `round ${round}: size`);
      for (const k of up.keys()) t.equal(cur.get(k), ref.get(k), `round ${round}: get ${k}`);
    }
  }
  for (const h of history) t.same([...h.v], h.expect, 'an old version still holds what it held');
});
