/**
 * The pod GC on a real storage (LocalStorage over the fake persistence) and watch cache and Rest with a fake clock:
 * the Pods of a Node that is gone are deleted after the quarantine, with
 * their DisruptionTarget condition and an Event; a Node that comes back in
 * time keeps them; Pods of existing Nodes and unbound Pods are never
 * touched.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import type { EventRecorder } from './events.js';
import { PodGarbageCollector } from './pod-gc.js';

const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (n: string) => RESOURCES.find((r) => r.resource === n)!;
const [NODES, PODS] = [R('nodes'), R('pods')];

async function setup(t: Test) {
  const clock = new FakeClock();
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock });
  await rest.create(R('namespaces'), '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const events: string[] = [];
  const recorder: EventRecorder = { event: (o, type, reason, message) => void events.push(`${type} ${reason} ${String((o as KObject).metadata?.['name'])}: ${message}`) } as EventRecorder;
  const gc = new PodGarbageCollector({ rest: asController(rest, 'pod-garbage-collector'), cache: store, clock, log: silentLogger(), events: recorder, quarantineMs: 40_000 });
  t.teardown(() => {
    gc.stop();
    ts.close();
  });
  return { clock, store, rest, gc, events };
}

const node = (name: string): KObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
const pod = (name: string, nodeName?: string): KObject => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
  spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '1'] }] },
});
const names = async (rest: Rest) => (await rest.list(PODS, 'default', {})).items.map((s) => String(s.object.metadata?.['name'])).sort();

t.test('the Pods of a deleted Node go after the quarantine; the others stay', async (t) => {
  const { clock, rest, gc, events, store } = await setup(t);
  for (const n of ['n1', 'n2']) await rest.create(NODES, '', node(n));
  for (const [p, n] of [['a', 'n1'], ['b', 'n2'], ['c', 'n2'], ['free', undefined]] as const) await rest.create(PODS, 'default', pod(p, n));
  gc.start();
  await gc.idle();
  t.same(await names(rest), ['a', 'b', 'c', 'free'], 'nothing to do while every Node exists');
  await rest.delete(NODES, '', 'n2', {});
  await gc.idle();
  await clock.advance(39_000);
  await gc.idle();
  t.same(await names(rest), ['a', 'b', 'c', 'free'], 'within the quarantine: kept');
  let seen: KObject | undefined;
  const w = store.watch({ gr: 'pods', afterRev: store.rev, onEvent: (ev) => { if (ev.type === 'MODIFIED' && ev.cur.object.metadata?.['name'] === 'b') seen ??= ev.cur.object; } });
  await clock.advance(1_000);
  await gc.idle();
  w.stop();
  t.same(await names(rest), ['a', 'free'], 'after it: the orphans deleted at once (grace 0), the bound-elsewhere and unbound Pods kept');
  t.match((seen?.['status'] as { conditions?: unknown[] } | undefined)?.conditions, [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByPodGC', message: 'PodGC: node no longer exists' }], 'the condition says why, before the delete');
  t.same(events.sort(), ['Normal PodGCOrphaned b: Deleting Pod default/b: node n2 no longer exists', 'Normal PodGCOrphaned c: Deleting Pod default/c: node n2 no longer exists']);
});

t.test('a Node back within the quarantine keeps its Pods; a Pod naming a Node that never registers goes', async (t) => {
  const { clock, rest, gc } = await setup(t);
  await rest.create(NODES, '', node('n1'));
  await rest.create(PODS, 'default', pod('a', 'n1'));
  await rest.create(PODS, 'default', pod('ghost', 'nowhere'));
  gc.start();
  await rest.delete(NODES, '', 'n1', {});
  await gc.idle();
  await clock.advance(20_000);
  await rest.create(NODES, '', node('n1'));
  await gc.idle();
  await clock.advance(30_000);
  await gc.idle();
  t.same(await names(rest), ['a'], 'n1 came back: a kept; ghost\'s Node never existed: deleted after 40 s');
});
