/**
 * The ReplicaSet controller on a real storage (LocalStorage over the fake persistence) and watch cache and Rest:
 * replicas kept (self-healing), scaled both ways, orphans adopted and
 * mislabelled Pods released, other controllers' Pods left alone, status
 * counts, and the Pods gone with their ReplicaSet; the Events it records.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { GarbageCollector } from '../gc/garbage-collector.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { EventBroadcaster } from './events.js';
import { controllerOf, ReplicaSetController } from './replicaset.js';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [RS, POD, NS] = [R('replicasets'), R('pods'), R('namespaces')];

/** A Rest whose Pod creates fail while `failPods` says so (a quota, an admission webhook...). */
class FlakyRest extends Rest {
  failPods = false;
  override create(...args: Parameters<Rest['create']>): ReturnType<Rest['create']> {
    if (this.failPods && args[0].resource === 'pods') return Promise.reject(new NodenetError(ErrorCode.InvalidObject, 'pods "x" is invalid: quota exceeded'));
    return super.create(...args);
  }
}

async function setup(t: Test) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new FlakyRest({ storage: ts.storage, cache: store, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const events = new EventBroadcaster({ rest, clock, log: silentLogger() });
  const ctl = new ReplicaSetController({ rest: asController(rest, 'replicaset-controller'), cache: store, clock, log: silentLogger(), events: events.recorder('replicaset-controller'), retryMs: 1000 });
  const gc = new GarbageCollector({ rest, cache: store, clock, log: silentLogger() });
  ctl.start();
  gc.start();
  t.teardown(async () => {
    ctl.stop();
    gc.stop();
    await events.stop();
    ts.close();
  });
  const settle = async () => {
    for (let i = 0; i < 6; i++) {
      await ctl.idle();
      await gc.idle();
      await events.idle();
    }
  };
  const pods = () => store.list('pods', 'default').items.map((s) => s.object as KObject);
  const events_ = () => store.list('events', 'default').items.map((s) => s.object as O);
  return { store, rest, ctl, clock, settle, pods, events: events_ };
}

const rs = (name: string, replicas: number, app = name): KObject => ({
  apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name },
  spec: { replicas, selector: { matchLabels: { app } }, template: { metadata: { labels: { app } }, spec: { containers: [{ name: 'c', image: 'none', command: ['nodenet', 'serve'] }] } } },
});

t.test('keeps replicas Pods from the template, owned by it; a deleted or failed one is replaced; scales both ways', async (t) => {
  const { rest, store, settle, pods } = await setup(t);
  await rest.create(RS, 'default', rs('web', 3));
  await settle();
  t.equal(pods().length, 3);
  const p0 = pods()[0]!;
  t.match(p0, { metadata: { generateName: 'web-', labels: { app: 'web' } }, spec: { containers: [{ name: 'c', command: ['nodenet', 'serve'] }] } });
  t.match(controllerOf(p0), { kind: 'ReplicaSet', name: 'web' });
  await rest.delete(POD, 'default', String(p0.metadata!['name']));
  await settle();
  t.equal(pods().length, 3, 'self-healing: the deleted Pod was replaced');
  t.notOk(pods().some((p) => p.metadata!['name'] === p0.metadata!['name']));
  const victim = pods()[1]!;
  await rest.update(POD, 'default', String(victim.metadata!['name']), { ...structuredClone(victim), status: { phase: 'Failed' } }, { sub: 'status' });
  await settle();
  t.equal(pods().filter((p) => (p['status'] as O | undefined)?.['phase'] !== 'Failed').length, 3, 'a failed Pod is replaced');
  await rest.patch(RS, 'default', 'web', 'merge', { spec: { replicas: 5 } });
  await settle();
  t.equal(pods().length, 5);
  await rest.patch(RS, 'default', 'web', 'merge', { spec: { replicas: 1 } });
  await settle();
  t.equal(pods().length, 1);
  t.match((store.get('replicasets.apps/default/web')!.object as KObject)['status'], { replicas: 1, fullyLabeledReplicas: 1, observedGeneration: 3 });
});

t.test('status counts ready and available Pods; orphans adopted, mislabelled ones released, others\' left alone', async (t) => {
  const { rest, store, settle, pods, clock } = await setup(t);
  await rest.create(POD, 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'orphan', labels: { app: 'api' } }, spec: { containers: [{ name: 'c', image: 'none' }] } });
  await rest.create(POD, 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'theirs', labels: { app: 'api' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'x', uid: 'other', controller: true }] }, spec: { containers: [{ name: 'c', image: 'none' }] } });
  await rest.create(RS, 'default', rs('api', 2));
  await settle();
  const mine = pods().filter((p) => controllerOf(p)?.name === 'api');
  t.equal(mine.length, 2, 'the orphan adopted, one more made');
  t.ok(mine.some((p) => p.metadata!['name'] === 'orphan'));
  t.equal(controllerOf(pods().find((p) => p.metadata!['name'] === 'theirs')!)?.uid, 'other', 'another controller\'s Pod is left alone');
  for (const p of mine) {
    await rest.update(POD, 'default', String(p.metadata!['name']), { ...structuredClone(p), status: { phase: 'Running', podIP: '10.244.1.2', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(clock.now()).toISOString() }] } }, { sub: 'status' });
  }
  await settle();
  t.match((store.get('replicasets.apps/default/api')!.object as KObject)['status'], { replicas: 2, readyReplicas: 2, availableReplicas: 2 });
  const orphan = pods().find((p) => p.metadata!['name'] === 'orphan')!;
  await rest.update(POD, 'default', 'orphan', { ...structuredClone(orphan), metadata: { ...(orphan.metadata as O), labels: { app: 'moved' } } });
  await settle();
  t.equal(controllerOf(pods().find((p) => p.metadata!['name'] === 'orphan')!), undefined, 'relabelled away: released');
  t.equal(pods().filter((p) => controllerOf(p)?.name === 'api').length, 2, 'and replaced');
  await rest.delete(RS, 'default', 'api');
  await settle();
  t.same(pods().map((p) => p.metadata!['name']).sort(), ['orphan', 'theirs'], 'its Pods go with it');
});

t.test('Events: SuccessfulCreate and SuccessfulDelete per Pod, FailedCreate on an error (then retried)', async (t) => {
  const { rest, settle, pods, events, clock } = await setup(t);
  await rest.create(RS, 'default', rs('web', 2));
  await settle();
  const names = pods().map((p) => String(p.metadata!['name'])).sort();
  const of = (reason: string) => events().filter((e) => e['reason'] === reason);
  t.same(of('SuccessfulCreate').map((e) => e['message']).sort(), names.map((n) => `Created pod: ${n}`));
  t.match(of('SuccessfulCreate')[0], { type: 'Normal', involvedObject: { kind: 'ReplicaSet', apiVersion: 'apps/v1', name: 'web', namespace: 'default' }, source: { component: 'replicaset-controller' }, count: 1 });
  await rest.patch(RS, 'default', 'web', 'merge', { spec: { replicas: 1 } });
  await settle();
  const gone = names.find((n) => !pods().some((p) => p.metadata!['name'] === n))!;
  t.match(of('SuccessfulDelete'), [{ type: 'Normal', message: `Deleted pod: ${gone}` }]);
  rest.failPods = true;
  await rest.patch(RS, 'default', 'web', 'merge', { spec: { replicas: 2 } });
  await settle();
  t.match(of('FailedCreate'), [{ type: 'Warning', message: 'Error creating: pods "x" is invalid: quota exceeded', count: 1 }]);
  await clock.advance(1000);
  await settle();
  t.match(of('FailedCreate'), [{ count: 2 }], 'the retry failed the same way: the same Event, counted');
  rest.failPods = false;
  await clock.advance(1000);
  await settle();
  t.equal(pods().length, 2, 'created once the error went');
  t.equal(of('SuccessfulCreate').length, 3);
});
