/**
 * The event recorder on a real storage (LocalStorage over the fake persistence) and watch cache and Rest with a
 * fake clock: the Event a component records (name, namespace, involved
 * object, source, timestamps, count), repeats folded into one Event within
 * the window and new ones after it, a repeat of a deleted Event made
 * again, and failures logged, never thrown.
 */
import t, { type Test } from 'tap';
import { Admission } from '../admission/admission.js';
import { makePlugins } from '../admission/plugins.js';
import { pino } from 'pino';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { EventBroadcaster, refOf } from './events.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [NS, RS, NODE, EV] = [R('namespaces'), R('replicasets'), R('nodes'), R('events')];
const START = Date.UTC(2026, 11, 1, 12, 0, 0);

async function setup(t: Test, opts: { windowMs?: number } = {}) {
  const clock = new FakeClock(START);
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, admission: Admission.of(makePlugins({ cache: store, storage: ts.storage }), ['NamespaceLifecycle', 'DefaultTolerationSeconds']), clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const logs: O[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => void logs.push(JSON.parse(s) as O) });
  const events = new EventBroadcaster({ rest, clock, log, ...opts });
  t.teardown(async () => {
    await events.stop();
    ts.close();
  });
  const list = () => store.list('events').items.map((s) => s.object as KObject & O);
  return { clock, store, rest, events, list, logs };
}

const rs = (): KObject => ({
  apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web' },
  spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'none' }] } } },
});

t.test('an Event as a Kubernetes component records it', async (t) => {
  const { rest, events, list } = await setup(t);
  const made = (await rest.create(RS, 'default', rs())).object;
  events.recorder('replicaset-controller').event(made, 'Normal', 'SuccessfulCreate', 'Created pod: web-abcde');
  await events.idle();
  const [e, ...more] = list();
  t.equal(more.length, 0);
  const m = e!.metadata as O;
  t.match(m['name'], /^web\.[0-9a-f]+$/, '<involved name>.<hex>');
  t.equal(m['namespace'], 'default');
  t.same(e!['involvedObject'], { kind: 'ReplicaSet', apiVersion: 'apps/v1', namespace: 'default', name: 'web', uid: (made.metadata as O)['uid'], resourceVersion: (made.metadata as O)['resourceVersion'] });
  t.match(e, {
    reason: 'SuccessfulCreate', message: 'Created pod: web-abcde', type: 'Normal', count: 1,
    source: { component: 'replicaset-controller' }, reportingComponent: 'replicaset-controller',
    firstTimestamp: '2026-12-01T12:00:00Z', lastTimestamp: '2026-12-01T12:00:00Z',
  });
  t.notOk('eventTime' in e!, 'a legacy (core/v1) event: no eventTime');
});

t.test('repeats within the window bump count on the same Event; another message, component or a later repeat is a new one', async (t) => {
  const { rest, events, list, clock } = await setup(t, { windowMs: 60_000 });
  const made = (await rest.create(RS, 'default', rs())).object;
  const rec = events.recorder('deployment-controller');
  rec.event(made, 'Normal', 'ScalingReplicaSet', 'Scaled up replica set web from 0 to 3');
  await events.idle();
  await clock.advance(5_000);
  rec.event(made, 'Normal', 'ScalingReplicaSet', 'Scaled up replica set web from 0 to 3');
  await clock.advance(5_000);
  rec.event(made, 'Normal', 'ScalingReplicaSet', 'Scaled up replica set web from 0 to 3');
  await events.idle();
  t.equal(list().length, 1, 'one Event');
  t.match(list()[0], { count: 3, firstTimestamp: '2026-12-01T12:00:00Z', lastTimestamp: '2026-12-01T12:00:10Z' });
  rec.event(made, 'Normal', 'ScalingReplicaSet', 'Scaled down replica set web from 3 to 1');
  events.recorder('other-controller').event(made, 'Normal', 'ScalingReplicaSet', 'Scaled up replica set web from 0 to 3');
  await events.idle();
  t.equal(list().length, 3, 'a different message and a different component are Events of their own');
  await clock.advance(61_000);
  rec.event(made, 'Normal', 'ScalingReplicaSet', 'Scaled up replica set web from 0 to 3');
  await events.idle();
  t.equal(list().length, 4, 'past the window: a new Event');
  t.equal(list().filter((e) => e['count'] === 1).length, 3);
  t.equal(new Set(list().map((e) => (e.metadata as O)['name'])).size, 4, 'names never collide, even within one millisecond');
});

t.test('a repeat of an Event deleted meanwhile makes it again with its count', async (t) => {
  const { rest, events, list } = await setup(t);
  const made = (await rest.create(RS, 'default', rs())).object;
  const rec = events.recorder('replicaset-controller');
  rec.event(made, 'Warning', 'FailedCreate', 'Error creating: quota');
  await events.idle();
  const name = String((list()[0]!.metadata as O)['name']);
  await rest.delete(EV, 'default', name);
  rec.event(made, 'Warning', 'FailedCreate', 'Error creating: quota');
  await events.idle();
  t.match(list(), [{ metadata: { name }, count: 2, type: 'Warning' }]);
});

t.test('a cluster-scoped object\'s Events go to default; a failure is logged, never thrown', async (t) => {
  const { rest, events, list, logs } = await setup(t);
  const node = (await rest.create(NODE, '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } })).object;
  const rec = events.recorder('node-controller', 'cp-1');
  rec.event(node, 'Normal', 'RegisteredNode', 'Node n1 event: Registered Node n1 in Controller');
  await events.idle();
  t.match(list()[0], { metadata: { namespace: 'default' }, involvedObject: { kind: 'Node', name: 'n1' }, source: { component: 'node-controller', host: 'cp-1' }, reportingInstance: 'cp-1' });
  t.notOk('namespace' in (list()[0]!['involvedObject'] as O));
  const ghost: KObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'nowhere', uid: 'u' } };
  t.doesNotThrow(() => rec.event(ghost, 'Warning', 'FailedScheduling', 'x'));
  rec.event(node, 'Normal', 'Other', 'after the failure');
  await events.idle();
  t.match(logs, [{ level: 40, msg: 'events: could not record an event', reason: 'FailedScheduling', namespace: 'nowhere', name: 'p', err: { message: /namespaces "nowhere" not found/ } }]);
  t.equal(list().length, 2, 'the next event is recorded');
});

t.test('refOf: the reference an Event keeps', async (t) => {
  t.same(refOf({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns', uid: 'u1', resourceVersion: '7', labels: { a: 'b' } } }), { kind: 'Pod', apiVersion: 'v1', namespace: 'ns', name: 'p', uid: 'u1', resourceVersion: '7' });
});

t.test('stopped: later events are ignored', async (t) => {
  const { rest, events, list } = await setup(t);
  const made = (await rest.create(RS, 'default', rs())).object;
  await events.stop();
  events.recorder('x').event(made, 'Normal', 'R', 'm');
  await events.idle();
  t.equal(list().length, 0);
});
