import t from 'tap';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { clusterIP, makeEndpointSlice, makeService, podIP } from '../testing/addresses.js';
import { FakeBackend } from './backend.fake.js';
import { snapshotFromObjects } from './snapshot.js';
import type { ProxySnapshot } from './types.js';

const snap = (eps: number): ProxySnapshot =>
  snapshotFromObjects(
    [makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ port: 80 }] }), makeService({ name: 'b', clusterIP: clusterIP(2), ports: [{ port: 80 }] })],
    [makeEndpointSlice({ service: 'a', ports: [{ port: 80 }], endpoints: Array.from({ length: eps }, (_, i) => ({ ip: podIP(1, i + 1) })) })],
    'node-1',
  );

t.test('partial before any full sync is a caller bug', async (t) => {
  const b = new FakeBackend();
  await t.rejects(b.sync(snap(1), { full: false, changed: new Set(['default/a']) }), /partial sync without a successful full sync/);
  t.equal(await b.canaryMissing(), true, 'nothing installed yet');
});

t.test('a partial sync rewrites only the named Services; a forgotten one shows', async (t) => {
  const b = new FakeBackend();
  await b.sync(snap(1), { full: true });
  t.equal(await b.canaryMissing(), false);
  t.equal(b.lastSyncRuleCount(), 3);
  await b.sync(snap(2), { full: false, changed: new Set() });
  t.notOk(b.installedEquals(snap(2)), 'default/a changed but was not named');
  await b.sync(snap(2), { full: false, changed: new Set(['default/a']) });
  t.ok(b.installedEquals(snap(2)));
  await t.rejects(b.sync(snap(2), { full: false, changed: new Set(['default/a:http']) }), /not a ServiceKey/);
  t.same(b.scopes(), ['full', 'partial ', 'partial default/a']);
});

t.test('failure, flush and cleanup each require a full sync next', async (t) => {
  const b = new FakeBackend();
  await b.sync(snap(1), { full: true });
  b.failNext();
  await t.rejects(b.sync(snap(1), { full: false, changed: new Set(['default/a']) }), { code: ErrorCode.RuleApply });
  await t.rejects(b.sync(snap(1), { full: false, changed: new Set(['default/a']) }), /partial sync without/);
  await b.sync(snap(1), { full: true });
  b.removeCanary();
  t.equal(await b.canaryMissing(), true);
  await t.rejects(b.sync(snap(1), { full: false, changed: new Set() }), /partial sync without/);
  await b.sync(snap(1), { full: true });
  await b.cleanup();
  await t.rejects(b.sync(snap(1), { full: false, changed: new Set() }), /partial sync without/);
});

t.test('malformed snapshots are refused', async (t) => {
  const b = new FakeBackend();
  const s = snap(1);
  const wrongKey: ProxySnapshot = { services: new Map([['x/y', s.services.get('default/a')!]]), endpoints: new Map() };
  await t.rejects(b.sync(wrongKey, { full: true }), /does not match its spn/);
  const orphan: ProxySnapshot = { services: s.services, endpoints: new Map([['default/zzz', []]]) };
  await t.rejects(b.sync(orphan, { full: true }), /not a Service port/);
});
