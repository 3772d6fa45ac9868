/**
 * The Deployment controller with the ReplicaSet controller and the garbage
 * collector, on a real storage (LocalStorage over the fake persistence) and watch cache and Rest. A test "kubelet"
 * makes every Pod ready, so rollouts progress: a ReplicaSet per template by
 * pod-template-hash, a rolling update within maxSurge and maxUnavailable,
 * Recreate, scaling, revisions and history, and the status `kubectl rollout
 * status` reads.
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
import { DeploymentController, HASH_LABEL, resolveFenceposts, REVISION, templateHash } from './deployment.js';
import { ReplicaSetController } from './replicaset.js';
import { EventBroadcaster } from './events.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [DEPLOY, POD, NS] = [R('deployments'), R('pods'), R('namespaces')];

async function setup(t: Test, opts: { kubelet?: boolean } = {}) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const log = silentLogger();
  const events = new EventBroadcaster({ rest, clock, log });
  const dc = new DeploymentController({ rest: asController(rest, 'deployment-controller'), cache: store, clock, log, events: events.recorder('deployment-controller') });
  const rc = new ReplicaSetController({ rest: asController(rest, 'replicaset-controller'), cache: store, clock, log, events: events.recorder('replicaset-controller') });
  const gc = new GarbageCollector({ rest: asController(rest, 'generic-garbage-collector'), cache: store, clock, log });
  dc.start();
  rc.start();
  gc.start();
  t.teardown(async () => {
    dc.stop();
    rc.stop();
    gc.stop();
    await events.stop();
    ts.close();
  });
  /** Every Pod without a status becomes Running and Ready (a stand-in for the kubelet of the next issue). */
  const kubelet = async () => {
    for (const s of store.list('pods', 'default').items) {
      const p = s.object as KObject;
      if (p['status'] && (p['status'] as O)['phase'] === 'Running') continue;
      if (p.metadata!['deletionTimestamp']) continue;
      await rest.update(POD, 'default', String(p.metadata!['name']), { ...structuredClone(p), status: { phase: 'Running', podIP: '10.244.1.2', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(clock.now()).toISOString() }] } }, { sub: 'status' }).catch(() => undefined);
    }
  };
  const settle = async (rounds = 12) => {
    for (let i = 0; i < rounds; i++) {
      await dc.idle();
      await rc.idle();
      await gc.idle();
      if (opts.kubelet !== false) await kubelet();
    }
    await dc.idle();
    await events.idle();
  };
  const sets = () => store.list('replicasets.apps', 'default').items.map((s) => s.object as KObject);
  const pods = () => store.list('pods', 'default').items.map((s) => s.object as KObject);
  const dep = () => store.get('deployments.apps/default/web')!.object as KObject;
  const eventsOf = (kind: string) => store.list('events', 'default').items.map((s) => s.object as O).filter((e) => (e['involvedObject'] as O)['kind'] === kind);
  return { rest, store, clock, settle, sets, pods, dep, eventsOf };
}

const deployment = (replicas: number, image = 'v1', strategy: O = {}): KObject => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
  spec: { replicas, selector: { matchLabels: { app: 'web' } }, strategy, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image }] } } },
});

t.test('pure: the template hash and the fenceposts', async (t) => {
  const a = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'v1' }] } };
  t.match(templateHash(a), /^[0-9a-z]{10}$/);
  t.equal(templateHash(a), templateHash({ spec: { containers: [{ image: 'v1', name: 'c' }] }, metadata: { labels: { app: 'web' } } }), 'key order does not matter');
  t.not(templateHash(a), templateHash({ ...a, spec: { containers: [{ name: 'c', image: 'v2' }] } }));
  t.same(resolveFenceposts(4, undefined, undefined), { surge: 1, unavailable: 1 }, '25% of 4');
  t.same(resolveFenceposts(3, '25%', '25%'), { surge: 1, unavailable: 0 }, 'surge rounds up, unavailable down');
  t.same(resolveFenceposts(10, 3, '0%'), { surge: 3, unavailable: 0 });
  t.same(resolveFenceposts(2, 0, 0), { surge: 0, unavailable: 1 }, 'never stuck');
});

t.test('a Deployment makes its ReplicaSet by pod-template-hash, the Pods follow, and the status says it rolled out', async (t) => {
  const { rest, settle, sets, pods, dep, eventsOf } = await setup(t);
  await rest.create(DEPLOY, 'default', deployment(3));
  await settle();
  const [rs] = sets();
  const hash = (rs!.metadata!['labels'] as O)[HASH_LABEL] as string;
  t.equal(rs!.metadata!['name'], `web-${hash}`);
  t.match(rs, { metadata: { annotations: { [REVISION]: '1' }, ownerReferences: [{ kind: 'Deployment', name: 'web', controller: true }] }, spec: { replicas: 3, selector: { matchLabels: { app: 'web', [HASH_LABEL]: hash } } } });
  t.equal(pods().length, 3);
  t.ok(pods().every((p) => (p.metadata!['labels'] as O)[HASH_LABEL] === hash));
  const d = dep();
  t.match(d['status'], { observedGeneration: d.metadata!['generation'], replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, conditions: [{ type: 'Available', status: 'True' }, { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }] });
  t.equal((d.metadata!['annotations'] as O)[REVISION], '1');
  await rest.patch(DEPLOY, 'default', 'web', 'merge', { spec: { replicas: 5 } });
  await settle();
  t.equal(pods().length, 5, 'scaled');
  t.equal(sets().length, 1, 'scaling is no rollout');
  await rest.patch(DEPLOY, 'default', 'web', 'merge', { spec: { replicas: 2 } });
  await settle();
  const scaling = eventsOf('Deployment').map((e) => [e['type'], e['reason'], e['message']]);
  t.same(scaling, [
    ['Normal', 'ScalingReplicaSet', `Scaled up replica set web-${hash} from 0 to 3`],
    ['Normal', 'ScalingReplicaSet', `Scaled up replica set web-${hash} from 3 to 5`],
    ['Normal', 'ScalingReplicaSet', `Scaled down replica set web-${hash} from 5 to 2`],
  ], 'ScalingReplicaSet Events on the Deployment, as upstream words them');
  t.match(eventsOf('Deployment')[0], { source: { component: 'deployment-controller' }, involvedObject: { apiVersion: 'apps/v1', name: 'web' } });
  t.equal(eventsOf('ReplicaSet').filter((e) => e['reason'] === 'SuccessfulCreate').length, 5);
  t.equal(eventsOf('ReplicaSet').filter((e) => e['reason'] === 'SuccessfulDelete').length, 3);
});

t.test('a template change rolls out a new ReplicaSet within maxSurge and maxUnavailable; the old one is kept at 0 as history', async (t) => {
  const { rest, store, settle, sets, pods, dep } = await setup(t, { kubelet: false });
  await rest.create(DEPLOY, 'default', deployment(4, 'v1', { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } }));
  // Pods are made ready by hand here, to look at each step.
  const ready = async () => {
    for (const p of pods()) {
      if ((p['status'] as O | undefined)?.['phase'] === 'Running' || p.metadata!['deletionTimestamp']) continue;
      await rest.update(POD, 'default', String(p.metadata!['name']), { ...structuredClone(p), status: { phase: 'Running', podIP: '10.244.1.3', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-12-01T00:00:00Z' }] } }, { sub: 'status' });
    }
  };
  const step = async () => {
    await settle(4);
    await ready();
    await settle(4);
  };
  await step();
  t.equal(pods().length, 4);
  await rest.patch(DEPLOY, 'default', 'web', 'strategic', { spec: { template: { spec: { containers: [{ name: 'c', image: 'v2' }] } } } });
  await settle(4);
  const size = () => Object.fromEntries(sets().map((s) => [(s.metadata!['annotations'] as O)[REVISION], (s['spec'] as O)['replicas']]));
  const s1 = size();
  t.equal(sets().length, 2, 'a second ReplicaSet');
  t.ok(Number(s1['2']) + Number(s1['1']) <= 5, `never more than replicas + maxSurge: ${JSON.stringify(s1)}`);
  t.ok(Number(s1['1']) >= 3, 'never fewer available than replicas - maxUnavailable');
  for (let i = 0; i < 8; i++) await step();
  t.same(size(), { 1: 0, 2: 4 }, 'rolled out');
  t.equal(pods().filter((p) => !p.metadata!['deletionTimestamp']).length, 4);
  t.ok(pods().every((p) => (p['spec'] as { containers: { image: string }[] }).containers[0]!.image === 'v2'));
  t.match(dep()['status'], { updatedReplicas: 4, replicas: 4, availableReplicas: 4, conditions: [{ type: 'Available', status: 'True' }, { type: 'Progressing', reason: 'NewReplicaSetAvailable' }] });
  t.equal((dep().metadata!['annotations'] as O)[REVISION], '2');
  // Back to v1: the old ReplicaSet is reused and becomes revision 3.
  await rest.patch(DEPLOY, 'default', 'web', 'strategic', { spec: { template: { spec: { containers: [{ name: 'c', image: 'v1' }] } } } });
  for (let i = 0; i < 10; i++) await step();
  t.equal(sets().length, 2, 'no third ReplicaSet for a template seen before');
  t.same(size(), { 3: 4, 2: 0 });
  void store;
});

t.test('Recreate: the old Pods go before the new ones come', async (t) => {
  const { rest, settle, sets, pods } = await setup(t);
  await rest.create(DEPLOY, 'default', deployment(2, 'v1', { type: 'Recreate' }));
  await settle();
  await rest.patch(DEPLOY, 'default', 'web', 'strategic', { spec: { template: { spec: { containers: [{ name: 'c', image: 'v2' }] } } } });
  await settle();
  const images = pods().map((p) => (p['spec'] as { containers: { image: string }[] }).containers[0]!.image);
  t.same(images, ['v2', 'v2']);
  t.equal(sets().length, 2);
});

t.test('revisionHistoryLimit: old idle ReplicaSets beyond it are deleted; deleting the Deployment removes everything', async (t) => {
  const { rest, settle, sets, pods } = await setup(t);
  await rest.create(DEPLOY, 'default', { ...deployment(1), spec: { ...(deployment(1)['spec'] as O), revisionHistoryLimit: 1 } });
  for (const v of ['v2', 'v3', 'v4']) {
    await settle();
    await rest.patch(DEPLOY, 'default', 'web', 'strategic', { spec: { template: { spec: { containers: [{ name: 'c', image: v }] } } } });
  }
  await settle();
  t.equal(sets().length, 2, 'the current one and one of history');
  await rest.delete(DEPLOY, 'default', 'web');
  await settle();
  t.same(sets(), []);
  t.same(pods(), []);
});

t.test('progressDeadlineSeconds: a rollout that makes no progress for that long is ProgressDeadlineExceeded; progress again clears it; change-cause goes to the ReplicaSet', async (t) => {
  const { rest, settle, sets, dep, clock, pods } = await setup(t, { kubelet: false });
  const d = deployment(2);
  d.metadata!['annotations'] = { 'kubernetes.io/change-cause': 'first', 'kubectl.kubernetes.io/last-applied-configuration': '{}' };
  (d['spec'] as O)['progressDeadlineSeconds'] = 60;
  await rest.create(DEPLOY, 'default', d);
  await settle();
  const annotations = sets()[0]!.metadata!['annotations'] as O;
  t.equal(annotations['kubernetes.io/change-cause'], 'first', 'copied to the ReplicaSet (rollout history reads it there)');
  t.notOk('kubectl.kubernetes.io/last-applied-configuration' in annotations, 'but not kubectl\'s last-applied-configuration');
  const progressing = () => ((dep()['status'] as O)['conditions'] as O[]).find((c) => c['type'] === 'Progressing');
  t.match(progressing(), { status: 'True', reason: 'ReplicaSetUpdated' }, 'no Pod ever ready: progressing, for now');
  await clock.advance(30_000);
  await settle();
  t.match(progressing(), { status: 'True', reason: 'ReplicaSetUpdated' }, 'within the deadline');
  await clock.advance(32_000);
  await settle();
  t.match(progressing(), { status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${String(sets()[0]!.metadata!['name'])}" has timed out progressing.` }, 'past it: the requeue found it');
  t.match((dep()['status'] as O)['conditions'], [{ type: 'Available', status: 'False' }, { type: 'Progressing', status: 'False' }]);
  // A Pod becomes ready: progress, the condition is True again.
  const pod = pods()[0]!;
  await rest.update(POD, 'default', String(pod.metadata!['name']), { ...structuredClone(pod), status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(clock.now()).toISOString() }] } }, { sub: 'status' });
  await settle();
  t.match(progressing(), { status: 'True', reason: 'ReplicaSetUpdated' }, 'progress made: no longer timed out');
});
