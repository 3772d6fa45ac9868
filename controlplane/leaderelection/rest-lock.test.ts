/**
 * Two electors on one Lease through the real REST layer (the in-memory
 * store): one leads, the Lease reads as kube-controller-manager's does, a
 * stale resourceVersion is refused, and a clean stop hands it over.
 */
import t from 'tap';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { openTestStore } from '../testing/store.js';
import { LeaderElector } from './leader-election.js';
import { RestLeaseLock } from './rest-lock.js';

const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const NS = RESOURCES.find((r) => r.resource === 'namespaces')!;

t.test('a Lease in kube-system through the REST layer: one leader, compare-and-swap, hand-over on stop', async (t) => {
  const clock = new FakeClock(Date.parse('2026-12-05T10:00:00Z'));
  const ts = openTestStore({ clock });
  t.teardown(() => ts.close());
  const rest = new Rest({ storage: ts.storage, cache: ts.cache, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } });
  const log: string[] = [];
  const make = (id: string) => new LeaderElector({ lock: new RestLeaseLock(rest, 'kube-controller-manager'), identity: id, clock, random: () => 0, onStartedLeading: () => void log.push(`${id} leads`), onStoppedLeading: () => void log.push(`${id} stops`) });
  const a = make('cp-1_a');
  const b = make('cp-2_b');
  a.start();
  await clock.advance(0);
  b.start();
  await clock.advance(4_000);
  t.same(log, ['cp-1_a leads']);
  const lease = ts.cache.get('leases.coordination.k8s.io/kube-system/kube-controller-manager')!.object as { spec: Record<string, unknown> };
  t.match(lease.spec, { holderIdentity: 'cp-1_a', leaseDurationSeconds: 15, leaseTransitions: 0, acquireTime: '2026-12-05T10:00:00.000000Z' });
  t.match(lease.spec['renewTime'], /^2026-12-05T10:00:04\.000000Z$/, 'renewed every retry period, as a MicroTime');
  const lock = new RestLeaseLock(rest, 'kube-controller-manager');
  const cur = (await lock.get())!;
  await t.rejects(lock.update({ ...cur.record, holderIdentity: 'intruder' }, String(Number(cur.resourceVersion) - 1)), { code: 'NN_ERR_CONFLICT' }, 'a stale resourceVersion is refused');
  await a.stop();
  await clock.advance(2_000);
  t.same(log, ['cp-1_a leads', 'cp-1_a stops', 'cp-2_b leads']);
  t.match((await lock.get())!.record, { holderIdentity: 'cp-2_b', leaseTransitions: 1 });
  await b.stop();
  t.equal((await lock.get())!.record.holderIdentity, '', 'released on stop');
});
