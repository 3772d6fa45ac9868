/** The guest's tap subset (guest/tap-lite.ts): what it passes and fails, as tap would. No root. */
import t from 'tap';
import lite, { collect } from './guest/tap-lite.js';

t.test('assertions pass and fail as tap would; a throw fails the subtest; order and teardowns', async (t) => {
  const order: string[] = [];
  const lines: string[] = [];
  const h = collect('demo', () => {
    lite.before(() => { order.push('before'); });
    lite.teardown(() => { order.push('root teardown'); });
    lite.test('passes', (st) => {
      st.teardown(() => { order.push('sub teardown'); });
      st.ok(1); st.notOk(''); st.equal(2, 2); st.not(2, 3); st.same([1, { a: 'x' }], [1, { a: 'x' }]);
      st.match('pod1 10.0.0.1', /^pod1 /); st.match('abc', 'b'); st.match({ kind: 'Service', field: 'f', extra: 1 }, { kind: 'Service', field: /^f$/ });
      st.notMatch('pod2', /^pod1/); st.pass();
      order.push('passes');
    });
    lite.test('fails', (st) => {
      st.equal(1, 2, 'one is not two');
      st.same([1], [2]);
      st.match({ kind: 'Pod' }, { kind: 'Service' });
    });
    lite.test('throws', async () => { throw new Error('boom'); });
  }, (l) => lines.push(l));
  const r = await h.run();
  t.same(order, ['before', 'passes', 'sub teardown', 'root teardown']);
  t.equal(r.tests, 3);
  t.equal(r.passed, 10);
  t.equal(r.failed, 4, '3 failed assertions and one throw');
  t.match(r.failures[0], /^fails: one is not two: 1 !== 2/);
  t.match(r.failures.at(-1), /^throws: threw: boom/);
  t.match(lines[0], /^ok 1 - passes \(10 assertions/);
  t.match(lines[1], /^not ok 2 - fails/);
});

t.test('a failing before skips the subtests and fails the run', async (t) => {
  const h = collect('broken', () => {
    lite.before(() => { throw new Error('no lab'); });
    lite.test('never', (st) => { st.fail('ran'); });
  }, () => undefined);
  const r = await h.run();
  t.equal(r.failed, 1);
  t.match(r.failures[0], /^before: no lab/);
});

t.test('registering outside collect() is an error, not a silent no-op', async (t) => {
  t.throws(() => lite.test('x', () => undefined), /outside collect/);
});
