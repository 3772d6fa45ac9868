import t from 'tap';
import { planChanges } from '../lib/services.js';
import {
  appliedKey, changeApplied, changedEndpoints, countInitialApplied, endpointIP, endpointString, serviceObject, sliceObject, TRIGGER_TIME_ANNOTATION,
} from './workload.js';

t.test('endpoint addresses: 250 to a /24 from 10.160.0.2, unique, outside the service and cluster CIDRs', async (t) => {
  t.equal(endpointIP(0), '10.160.0.2');
  t.equal(endpointIP(249), '10.160.0.251');
  t.equal(endpointIP(250), '10.160.1.2');
  t.equal(endpointIP(256 * 250), '10.161.0.2', 'past 10.160.255.x into 10.161');
  const seen = new Set<string>();
  for (let j = 0; j < 64_000; j++) seen.add(endpointIP(j));
  t.equal(seen.size, 64_000);
  t.ok([...seen].every((ip) => /^10\.16[01]\.\d+\.\d+$/.test(ip)));
  t.throws(() => endpointIP(-1), RangeError);
  t.throws(() => endpointIP(1.5), RangeError);
  t.equal(endpointString(1), '10.160.0.3:8080');
});

t.test('a Service without a selector, one named port; its slice names it and carries the extras', async (t) => {
  t.same(serviceObject(7), {
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc-7', namespace: 'default' },
    spec: { type: 'ClusterIP', ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }] },
  });
  const s = sliceObject(7, [12, 13], 'n1');
  t.same(s['metadata'], { name: 'svc-7-a', namespace: 'default', labels: { 'kubernetes.io/service-name': 'svc-7' } }, 'no resourceVersion or annotation on a create');
  t.same(s['endpoints'], [
    { addresses: ['10.160.0.14'], conditions: { ready: true, serving: true, terminating: false }, nodeName: 'n1' },
    { addresses: ['10.160.0.15'], conditions: { ready: true, serving: true, terminating: false }, nodeName: 'n1' },
  ]);
  t.same(s['ports'], [{ name: 'http', protocol: 'TCP', port: 8080 }]);
  const u = sliceObject(7, [12, 20_000], 'n1', { resourceVersion: '42', triggerTime: '2026-12-01T10:00:00.123Z' }) as { metadata: Record<string, unknown> };
  t.equal(u.metadata['resourceVersion'], '42');
  t.same(u.metadata['annotations'], { [TRIGGER_TIME_ANNOTATION]: '2026-12-01T10:00:00.123Z' });
});

t.test('the status checks: initial endpoints per Service, and a change applied with the old endpoint gone', async (t) => {
  const applied: Record<string, string[]> = {
    [appliedKey(1)]: [endpointString(1), endpointString(0)],
    [appliedKey(2)]: [endpointString(2)],
    [appliedKey(3)]: [endpointString(4), endpointString(5), endpointString(99)],
    'default/kubernetes:https': ['192.168.77.1:6443'],
  };
  t.equal(appliedKey(1), 'default/svc-1:http');
  t.equal(countInitialApplied(applied, 3), 1, 'order does not matter; a missing or an extra endpoint does');
  const [c] = planChanges(10, 1);
  t.same(c, { service: 5, slot: 1, newEndpoint: 20 });
  t.same(changedEndpoints(c!), [8, 20]);
  t.notOk(changeApplied({ [appliedKey(5)]: [endpointString(8), endpointString(9)] }, c!), 'not yet');
  t.notOk(changeApplied({ [appliedKey(5)]: [endpointString(8), endpointString(9), endpointString(20)] }, c!), 'the old endpoint still there');
  t.ok(changeApplied({ [appliedKey(5)]: [endpointString(20), endpointString(8)] }, c!));
});
