import t from 'tap';
import { pino } from 'pino';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeEventRecorder } from '../../../lib/reconcile/event-recorder.fake.js';
import { clusterIP, makeEndpointSlice, makeService, podIP, withField } from '../testing/addresses.js';
import { ObjectAdmission } from './handlers.js';

const ports = (a: { cur: readonly unknown[] | null }) => a.cur?.length ?? null;

t.test('admission: valid, invalid (with field), ignored; the latest verdict per object wins', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger() });
  const good = makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ port: 80 }] });
  const bad = withField(good, 'spec.ports[0].port', 0);
  t.equal(ports(a.serviceEvent(null, good)), 1);
  t.same(a.serviceEvent(null, bad), { key: 'default/a', prev: null, cur: null }, 'an add that is invalid: nothing served');
  t.same(a.rejected(), [{ kind: 'Service', key: 'default/a', field: 'spec.ports[0].port', message: 'spec.ports[0].port: must be between 1 and 65535, inclusive, got 0', servedFromLastGood: false }]);
  a.serviceEvent(bad, good);
  t.same(a.rejected(), [], 'fixed');
  a.serviceEvent(good, makeService({ name: 'a', clusterIP: 'None', ports: [{ port: 80 }] }));
  t.same(a.ignored().map((i) => [i.kind, i.key]), [['Service', 'default/a']]);
  a.serviceEvent(null, bad);
  t.same(a.ignored(), [], 'a rejection replaces the ignore');
  t.equal(a.serviceDelete(bad).key, 'default/a');
  t.same(a.rejected(), [], 'a delete forgets the rejection');
});

t.test('admission: an update it cannot use keeps the last valid version; the next valid one replaces it; a delete removes it', async (t) => {
  const events = new FakeEventRecorder();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const a = new ObjectAdmission({ log, events });
  // The case: ClientIP affinity, then `kubectl patch -p '{"spec":{"sessionAffinity":"None"}}'`, which leaves the
  // defaulted sessionAffinityConfig behind.
  const v1 = withField(makeService({ name: 'web', clusterIP: clusterIP(1), ports: [{ port: 80 }], affinityTimeoutSeconds: 600 }), 'metadata.resourceVersion', '7');
  const v2 = withField(withField(v1, 'spec.sessionAffinity', 'None'), 'metadata.resourceVersion', '8');
  const served = a.serviceEvent(null, v1).cur!;
  t.equal(served[0]!.affinityTimeoutSeconds, 600);

  const r2 = a.serviceEvent(v1, v2);
  t.same(r2, { key: 'default/web', prev: served, cur: served }, 'no change: the last valid version stays served');
  t.same(a.rejected(), [{ kind: 'Service', key: 'default/web', field: 'spec.sessionAffinityConfig', message: 'spec.sessionAffinityConfig: must not be set when sessionAffinity is None', servedFromLastGood: true, lastGoodResourceVersion: '7' }]);
  t.same(a.counts(), [{ kind: 'Service', rejected: 1, servedFromLastGood: 1 }, { kind: 'EndpointSlice', rejected: 0, servedFromLastGood: 0 }]);
  t.equal(lines.filter((l) => l['level'] === 40).length, 1, 'one warning');
  t.match(lines.at(-1), { svc: 'default/web', kind: 'Service', field: 'spec.sessionAffinityConfig', msg: /cannot use this update .*still serving the rules of its last usable version \(resourceVersion 7\)/ });
  t.same(events.events, [
    {
      involved: { kind: 'Service', apiVersion: 'v1', name: 'web', namespace: 'default', uid: 'uid-svc-default-web', resourceVersion: '8' },
      type: 'Warning',
      reason: 'InvalidObjectKeptLastGood',
      message: 'Cannot use this version of the Service: spec.sessionAffinityConfig: must not be set when sessionAffinity is None. Keeping the rules of its last usable version (resourceVersion 7) until a usable one arrives.',
    },
  ]);

  // Delivered again (a relist), then a newer version with the same fault: nothing logged or counted again; the newer
  // version is one more occurrence of the Event (the recorder folds it into the count).
  t.same(a.serviceEvent(v2, v2), { key: 'default/web', prev: served, cur: served });
  t.equal(events.events.length, 1, 'a re-delivery of the same version: no Event');
  const v3 = withField(withField(v2, 'metadata.labels', { tier: 'front' }), 'metadata.resourceVersion', '9');
  t.same(a.serviceEvent(v2, v3), { key: 'default/web', prev: served, cur: served }, 'still the last valid version (the watch\'s prev is the bad one)');
  t.equal(lines.filter((l) => l['level'] === 40).length, 1, 'still one warning');
  t.equal(a.counts()[0]!.rejected, 1, 'counted once');
  t.equal(events.events.length, 2);
  t.same(events.events[1]!.involved.resourceVersion, '9');
  t.equal(events.events[1]!.message, events.events[0]!.message, 'the same Event again: counted on the first');

  // The next valid version is taken.
  const v4 = withField(withField(v3, 'spec.sessionAffinityConfig', undefined), 'metadata.resourceVersion', '10');
  const r4 = a.serviceEvent(v3, v4);
  t.same(r4.prev, served, 'prev: what was served, not the watch\'s prev');
  t.equal(r4.cur![0]!.affinityTimeoutSeconds, null, 'the new version: no affinity');
  t.same(a.rejected(), []);
  t.same(a.counts()[0], { kind: 'Service', rejected: 1, servedFromLastGood: 0 });

  // Broken again, then deleted: the delete removes what is served (the last valid version).
  const v5 = withField(withField(v4, 'spec.sessionAffinityConfig', { clientIP: { timeoutSeconds: 10800 } }), 'metadata.resourceVersion', '11');
  t.same(a.serviceEvent(v4, v5).cur, r4.cur, 'kept again');
  t.equal(a.counts()[0]!.rejected, 2, 'a new rejection');
  t.same(a.serviceDelete(v5), { key: 'default/web', prev: r4.cur, cur: null }, 'the delete takes away the kept version');
  t.same(a.rejected(), []);
  t.same(a.counts()[0], { kind: 'Service', rejected: 2, servedFromLastGood: 0 });
});

t.test('admission: a Service never valid stays skipped; a new object (another uid) of a kept name is not kept', async (t) => {
  const events = new FakeEventRecorder();
  const a = new ObjectAdmission({ log: silentLogger(), events });
  const good = makeService({ name: 'x', clusterIP: clusterIP(2), ports: [{ port: 80 }] });
  const bad = withField(good, 'spec.sessionAffinity', 'Sticky');
  t.same(a.serviceEvent(null, bad), { key: 'default/x', prev: null, cur: null });
  t.same(a.serviceEvent(bad, withField(bad, 'metadata.resourceVersion', '2')), { key: 'default/x', prev: null, cur: null }, 'still nothing');
  t.match(a.rejected(), [{ key: 'default/x', servedFromLastGood: false }]);
  t.match(events.events.map((e) => e.reason), ['InvalidObjectSkipped', 'InvalidObjectSkipped']);
  t.match(events.events[0]!.message, /No rules for it until a usable version arrives/);

  const served = a.serviceEvent(bad, good).cur;
  t.ok(served, 'the valid version is served');
  // Deleted and created again while the watch was away: the relist says "update", but the uid is new.
  const other = withField(withField(bad, 'metadata.uid', 'uid-new'), 'metadata.resourceVersion', '5');
  t.same(a.serviceEvent(good, other), { key: 'default/x', prev: served, cur: null }, 'withdrawn: the new object was never valid');
  t.match(a.rejected(), [{ key: 'default/x', servedFromLastGood: false }]);
});

t.test('admission: objects without a readable name are rejected under (unknown)', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger() });
  t.same(a.serviceEvent(null, { spec: {} }), { key: null, prev: null, cur: null });
  t.same(a.rejected().map((r) => [r.key, r.field]), [['(unknown)', 'metadata']]);
  t.same(a.serviceEvent(null, null), { key: null, prev: null, cur: null }, 'null is absence, not an error');
});

t.test('admission: EndpointSlices, kept the same way, and the configured NodePort range', async (t) => {
  const events = new FakeEventRecorder();
  const a = new ObjectAdmission({ log: silentLogger(), nodePortRange: { min: 20000, max: 20100 }, events });
  const np = makeService({ name: 'n', type: 'NodePort', clusterIP: clusterIP(2), ports: [{ port: 80, nodePort: 20050 }] });
  t.equal(a.serviceEvent(null, np).cur?.[0]?.nodePort, 20050);
  const es = makeEndpointSlice({ service: 'n', ports: [{ port: 80 }], endpoints: [{ ip: podIP(1, 1) }] });
  const info = a.endpointSliceEvent(null, es).cur;
  t.equal(info?.serviceKey, 'default/n');
  const bad = withField(es, 'endpoints[0].addresses[0]', 'x');
  t.same(a.endpointSliceEvent(es, bad), { key: 'default/n-abcde', prev: info, cur: info }, 'its endpoints stay');
  t.same(a.rejected().map((r) => [r.kind, r.key, r.field, r.servedFromLastGood]), [['EndpointSlice', 'default/n-abcde', 'endpoints[0].addresses[0]', true]]);
  t.match(events.events, [{ involved: { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', namespace: 'default', name: 'n-abcde' }, reason: 'InvalidObjectKeptLastGood' }]);
  t.same(a.endpointSliceDelete(bad), { key: 'default/n-abcde', prev: info, cur: null });
  t.same(a.rejected(), []);
});

t.test('admission: a Service labelled for another proxy, or headless, is recorded as ignored with the reason', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger() });
  const svc = makeService({ name: 'other', clusterIP: clusterIP(3), ports: [{ port: 80 }] });
  t.equal(a.serviceEvent(null, withField(svc, 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': 'cilium' })).cur, null);
  t.same(a.ignored(), [{ kind: 'Service', key: 'default/other', reason: "labelled service.kubernetes.io/service-proxy-name=cilium: served by another proxy, no rules (kube-proxy's informers exclude it)" }]);
  t.equal(a.serviceEvent(null, svc).cur?.length, 1, 'the label removed: served again');
  t.same(a.ignored(), []);
  a.serviceEvent(svc, withField(svc, 'metadata.labels', { 'service.kubernetes.io/headless': '' }));
  t.match(a.ignored(), [{ key: 'default/other', reason: /headless/ }]);
});
