/**
 * What the Proxier tells its observer (the agent's metrics and /healthz):
 * every change seen, which ones queued a sync after the initial lists
 * (kube-proxy's QueuedUpdate), and the EndpointSlice trigger times each
 * successful sync put in the kernel (network programming latency).
 */
import t from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeConntrack } from '../netfilter/conntrack/conntrack.fake.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { CLUSTER_CIDR, clusterIP, makeEndpointSlice, makeService, nodeIP, nodeName, podIP, withField, type JsonObject } from '../testing/addresses.js';
import { FakeBackend } from './backend.fake.js';
import { LAST_CHANGE_TRIGGER_TIME, lastChangeTriggerTime, Proxier, type ProxierObserver, type SyncStats } from './proxier.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');

function setup() {
  const clock = new FakeClock(T0);
  const backend = new FakeBackend();
  const seen: string[] = [];
  const syncs: { stats: SyncStats; triggerTimes: readonly number[] }[] = [];
  const observer: ProxierObserver = {
    changeSeen: (kind, queued) => void seen.push(`${kind}${queued ? ' queued' : ''}`),
    syncDone: (stats, triggerTimes) => void syncs.push({ stats, triggerTimes }),
  };
  const proxier = new Proxier({
    backend,
    conntrack: new FakeConntrack(),
    clock,
    log: silentLogger(),
    nodeConfig: { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 },
    minSyncIntervalMs: 0,
    maxSyncIntervalMs: 30_000,
    retryBaseMs: 1000,
    observer,
  });
  proxier.start();
  return { clock, backend, proxier, seen, syncs };
}

const web = (): JsonObject => makeService({ name: 'web', clusterIP: clusterIP(1), ports: [{ name: 'http', port: 80 }] });
const slice = (ips: string[], triggeredAt?: number): JsonObject => {
  const s = makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: ips.map((ip) => ({ ip, nodeName: nodeName(1) })) });
  return triggeredAt === undefined ? s : withField(s, 'metadata.annotations', { [LAST_CHANGE_TRIGGER_TIME]: new Date(triggeredAt).toISOString() });
};

t.test('lastChangeTriggerTime reads the RFC 3339 annotation (nanoseconds too), else null', async (t) => {
  t.equal(lastChangeTriggerTime(slice([], T0)), T0);
  t.equal(lastChangeTriggerTime(withField(slice([]), 'metadata.annotations', { [LAST_CHANGE_TRIGGER_TIME]: '2030-01-01T00:00:01.123456789Z' })), T0 + 1123);
  t.equal(lastChangeTriggerTime(slice([])), null);
  t.equal(lastChangeTriggerTime(withField(slice([]), 'metadata.annotations', { [LAST_CHANGE_TRIGGER_TIME]: 'yesterday' })), null);
  t.equal(lastChangeTriggerTime(withField(slice([]), 'metadata.annotations', { [LAST_CHANGE_TRIGGER_TIME]: 1234 })), null);
  t.equal(lastChangeTriggerTime(null), null);
});

t.test('changes before the initial lists are seen but queue nothing; after them they queue', async (t) => {
  const s = setup();
  s.proxier.onServiceAdd(web());
  s.proxier.onEndpointSliceAdd(slice([podIP(1, 1)]));
  t.same(s.proxier.pendingChanges(), { services: 1, endpoints: 1 });
  s.proxier.onServicesSynced();
  s.proxier.onEndpointSlicesSynced();
  await s.clock.advance(0);
  t.same(s.seen, ['service', 'endpoints']);
  t.equal(s.syncs.length, 1);
  t.same(s.syncs[0]!.triggerTimes, [], 'the initial list is no change: nothing measured');
  t.same(s.proxier.pendingChanges(), { services: 0, endpoints: 0 });

  s.proxier.onEndpointSliceUpdate(slice([podIP(1, 1)]), slice([podIP(1, 2)]));
  t.same(s.seen.at(-1), 'endpoints queued');
  // An update that changes nothing the rules use is seen, not queued.
  await s.clock.advance(0);
  s.proxier.onServiceUpdate(web(), withField(web(), 'metadata.resourceVersion', '2'));
  t.same(s.seen.at(-1), 'service');
});

t.test('trigger times: the annotation, else the time received; older than the proxier or deleted: none; a failed sync hands them on', async (t) => {
  const s = setup();
  // Listed with an annotation older than the proxier (a restart relisting): not this proxier's latency.
  s.proxier.onServiceAdd(web());
  s.proxier.onEndpointSliceAdd(slice([podIP(1, 1)], T0 - 60_000));
  s.proxier.onServicesSynced();
  s.proxier.onEndpointSlicesSynced();
  await s.clock.advance(0);
  t.same(s.syncs[0]!.triggerTimes, []);

  await s.clock.advance(5000);
  s.proxier.onEndpointSliceUpdate(slice([podIP(1, 1)]), slice([podIP(1, 2)], T0 + 2000));
  await s.clock.advance(0);
  t.same(s.syncs.at(-1)!.triggerTimes, [T0 + 2000], 'the annotation');
  t.equal(s.syncs.at(-1)!.stats.scope, 'partial');

  s.backend.failNext(1);
  const received = s.clock.now();
  s.proxier.onEndpointSliceUpdate(slice([podIP(1, 2)]), slice([podIP(1, 3)]));
  await s.clock.advance(0);
  t.equal(s.syncs.at(-1)!.stats.ok, false);
  t.same(s.syncs.at(-1)!.triggerTimes, [], 'a failed sync programs nothing');
  await s.clock.advance(1000);
  t.equal(s.syncs.at(-1)!.stats.ok, true, 'the retry succeeded');
  t.same(s.syncs.at(-1)!.triggerTimes, [received], 'without the annotation: when the proxier received it, kept across the failure');

  s.proxier.onEndpointSliceDelete(slice([podIP(1, 3)], T0 + 9000));
  await s.clock.advance(0);
  t.same(s.syncs.at(-1)!.triggerTimes, [], 'a deletion is not measured (as kube-proxy)');

  // A change and its reversal before a sync leave nothing pending, and nothing to measure.
  s.proxier.onEndpointSliceAdd(slice([podIP(1, 4)]));
  await s.clock.advance(0);
  const before = s.syncs.length;
  s.proxier.onEndpointSliceUpdate(slice([podIP(1, 4)]), slice([podIP(1, 5)], T0 + 20_000));
  s.proxier.onEndpointSliceUpdate(slice([podIP(1, 5)]), slice([podIP(1, 4)]));
  await s.clock.advance(30_000);
  t.ok(s.syncs.length > before, 'the periodic sync ran');
  t.same(s.syncs.slice(before).flatMap((x) => x.triggerTimes), []);
});
