import t from 'tap';
import { ChangeTracker } from './change-tracker.js';
import { deepEqual } from './deep-equal.js';

type V = { ports: number[] };
const v = (...ports: number[]): V => ({ ports });

t.test('keeps the first prev and the latest cur', async (t) => {
  const ct = new ChangeTracker<string, V>();
  t.equal(ct.update('a', v(1), v(2)), true);
  t.equal(ct.update('a', v(2), v(3)), true);
  t.equal(ct.update('a', v(3), v(4)), true);
  t.same([...ct.drain()], [['a', { prev: v(1), cur: v(4) }]]);
  t.equal(ct.size, 0, 'drain forgets');
  t.same([...ct.drain()], []);
});

t.test('no-op changes cancel (deep equality, not identity)', async (t) => {
  const ct = new ChangeTracker<string, V>();
  t.equal(ct.update('a', v(1), v(1)), false, 'an update to an equal value');
  t.equal(ct.size, 0);
  ct.update('b', v(1), v(2));
  t.equal(ct.update('b', v(2), v(1)), false, 'back to the original');
  t.equal(ct.has('b'), false);
  t.equal(ct.size, 0);
});

t.test('add then delete before a drain cancels; delete then re-add of the same value cancels', async (t) => {
  const ct = new ChangeTracker<string, V>();
  ct.update('a', null, v(1));
  t.equal(ct.update('a', v(1), null), false);
  t.equal(ct.size, 0);
  ct.update('b', v(5), null);
  t.equal(ct.size, 1);
  t.equal(ct.update('b', null, v(5)), false);
  t.equal(ct.size, 0);
  t.equal(ct.update('c', null, null), false, 'absent to absent is nothing');
  t.equal(ct.size, 0);
});

t.test('delete then re-add with a different value stays a change from the first prev', async (t) => {
  const ct = new ChangeTracker<string, V>();
  ct.update('a', v(1), null);
  ct.update('a', null, v(2));
  t.same(ct.drain().get('a'), { prev: v(1), cur: v(2) });
});

t.test('keys are independent', async (t) => {
  const ct = new ChangeTracker<string, V>();
  ct.update('a', null, v(1));
  ct.update('b', null, v(2));
  ct.update('a', v(1), null);
  t.same([...ct.drain().keys()], ['b']);
});

t.test('deepEqual', async (t) => {
  t.ok(deepEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }), 'key order does not matter');
  t.notOk(deepEqual([1, 2], [2, 1]), 'array order matters');
  t.notOk(deepEqual({ a: 1 }, { a: 1, b: undefined }));
  t.notOk(deepEqual({ a: null }, { a: undefined }));
  t.ok(deepEqual(new Map([['k', [1]]]), new Map([['k', [1]]])));
  t.notOk(deepEqual(new Map([['k', [1]]]), new Map([['k', [2]]])));
  t.notOk(deepEqual(new Map(), {}));
  t.ok(deepEqual(new Set(['a']), new Set(['a'])));
  t.notOk(deepEqual(new Set(['a']), new Set(['b'])));
  t.notOk(deepEqual([], {}));
  t.ok(deepEqual(NaN, NaN));
  t.notOk(deepEqual(null, {}));
});
