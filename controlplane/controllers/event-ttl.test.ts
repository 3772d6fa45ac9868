/**
 * Events expire (--event-ttl) on a real storage, watch cache and Rest with a fake clock: an Event goes a TTL after
 * its last update (lastTimestamp, eventTime, series.lastObservedTime, else its creation), swept at start and then
 * every minute, from the store and the cache alike; a repeat written between the sweep's read and its delete keeps
 * the Event; a stopped sweeper deletes nothing more.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import type { KObject } from '../store/types.js';
import { openTestStore } from '../testing/store.js';
import { rfc3339Nano } from './endpointslice.js';
import { DEFAULT_EVENT_TTL_MS, EventTtl, expired, lastUpdate } from './event-ttl.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [EV, NS] = [R('events'), R('namespaces')];
const T0 = Date.parse('2026-12-01T08:00:00Z');
const MIN = 60_000;

async function setup(t: Test, o: { ttlMs?: number; rest?: (r: Rest) => Rest } = {}) {
  const clock = new FakeClock(T0);
  const ts = openTestStore({ clock });
  const rest = new Rest({ storage: ts.storage, cache: ts.cache, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const ttl = new EventTtl({ rest: o.rest ? o.rest(rest) : asController(rest, 'event-ttl-controller'), cache: ts.cache, clock, log: silentLogger(), ...(o.ttlMs ? { ttlMs: o.ttlMs } : {}) });
  t.teardown(async () => {
    await ttl.stop();
    ts.close();
  });
  const names = () => ts.cache.list('events', 'default').items.map((s) => String(s.object.metadata!['name']));
  const stored = async (name: string) => (await ts.storage.get(`events/default/${name}`)) !== undefined;
  return { clock, rest, ttl, names, stored };
}

const event = (name: string, extra: O = {}): KObject => ({
  apiVersion: 'v1', kind: 'Event', metadata: { name, namespace: 'default' },
  involvedObject: { kind: 'Pod', namespace: 'default', name: 'web-1' }, reason: 'Started', message: 'Started container', type: 'Normal', ...extra,
});
/** A "new" Event (events.k8s.io's shape through core/v1): eventTime and the reporting fields. */
const seriesEvent = (name: string, first: number, last: number): KObject => event(name, {
  eventTime: new Date(first).toISOString().replace('Z', '000Z'), reportingComponent: 'kubelet', reportingInstance: 'n1', action: 'Started',
  series: { count: 3, lastObservedTime: new Date(last).toISOString().replace('Z', '000Z') },
});

t.test('lastUpdate: the latest of lastTimestamp, eventTime, series.lastObservedTime and creationTimestamp', async (t) => {
  const at = (ms: number) => rfc3339Nano(ms);
  t.equal(lastUpdate({ metadata: { creationTimestamp: at(T0) } }), T0, 'no times of its own: its creation');
  t.equal(lastUpdate({ metadata: { creationTimestamp: at(T0) }, lastTimestamp: at(T0 + 5 * MIN), firstTimestamp: at(T0) }), T0 + 5 * MIN);
  t.equal(lastUpdate({ metadata: { creationTimestamp: at(T0) }, eventTime: at(T0 + MIN), series: { lastObservedTime: at(T0 + 9 * MIN) } }), T0 + 9 * MIN);
  t.equal(lastUpdate({ metadata: { creationTimestamp: at(T0) }, lastTimestamp: 'yesterday' }), T0, 'a time that does not parse is no time');
  t.equal(lastUpdate({}), -Infinity);
  const s = (name: string, obj: KObject) => ({ key: `events/default/${name}`, rev: 1, createRev: 1, object: obj, json: '' });
  t.same(expired([s('a', { metadata: { creationTimestamp: at(T0) } }), s('b', { metadata: { creationTimestamp: at(T0 + MIN) } })], T0 + 61 * MIN, 60 * MIN).map((x) => x.key), ['events/default/a', 'events/default/b'], 'a TTL old exactly: expired');
  t.same(expired([s('b', { metadata: { creationTimestamp: at(T0 + MIN) } })], T0 + 61 * MIN - 1, 60 * MIN), []);
});

t.test('swept at start and every minute: each Event a TTL after its last update, gone from the store and the cache', async (t) => {
  const { clock, rest, ttl, names, stored } = await setup(t);
  t.equal(DEFAULT_EVENT_TTL_MS, 3_600_000, 'kube-apiserver\'s default, 1h');
  await rest.create(EV, 'default', event('created-only'));
  await rest.create(EV, 'default', event('repeated', { firstTimestamp: rfc3339Nano(T0), lastTimestamp: rfc3339Nano(T0 + 30 * MIN), count: 4 }));
  await rest.create(EV, 'default', seriesEvent('series', T0, T0 + 50 * MIN));
  await clock.advance(59 * MIN);
  ttl.start();
  await ttl.idle();
  t.same(names(), ['created-only', 'repeated', 'series'], 'nothing is an hour old yet');
  await clock.advance(MIN);
  await ttl.idle();
  t.same(names(), ['repeated', 'series'], 'an hour after its creation: the Event with no times of its own');
  t.notOk(await stored('created-only'), 'deleted in the store, not only in the cache');
  await clock.advance(30 * MIN);
  await ttl.idle();
  t.same(names(), ['series'], 'an hour after its lastTimestamp');
  await clock.advance(19 * MIN);
  await ttl.idle();
  t.same(names(), ['series'], 'eventTime an hour and a half ago, but observed again 59 minutes ago');
  await clock.advance(MIN);
  await ttl.idle();
  t.same(names(), [], 'an hour after its series\' last observation');
});

t.test('--event-ttl shorter; a repeat written between the read and the delete keeps its Event; stop ends the sweeps', async (t) => {
  let repeatBeforeDelete = true;
  const { clock, rest, ttl, names } = await setup(t, {
    ttlMs: 5 * MIN,
    rest: (r) => {
      const wrapped = Object.create(r) as Rest;
      wrapped.delete = async (...a: Parameters<Rest['delete']>) => {
        // The event recorder's repeat lands first: count + 1, a new lastTimestamp.
        if (repeatBeforeDelete && a[2] === 'busy') await r.patch(EV, 'default', 'busy', 'merge', { count: 2, lastTimestamp: rfc3339Nano(clock.now()) });
        return r.delete(...a);
      };
      return wrapped;
    },
  });
  await rest.create(EV, 'default', event('busy'));
  await rest.create(EV, 'default', event('quiet'));
  await clock.advance(5 * MIN);
  t.equal(await ttl.sweep(), 1, 'one deleted');
  t.same(names(), ['busy'], 'the repeat wins: the delete was conditional on the version read');
  repeatBeforeDelete = false;
  ttl.start();
  await ttl.idle();
  t.same(names(), ['busy'], 'not 5 minutes since its repeat yet');
  await ttl.stop();
  await clock.advance(10 * MIN);
  t.same(names(), ['busy'], 'no sweep after stop');
});
