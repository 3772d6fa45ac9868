import t from 'tap';
import { silentLogger } from '../log/log.js';
import { clusterIP, makeEndpointSlice, makeService, podIP, withField } from '../testing/addresses.js';
import { ObjectAdmission } from './handlers.js';

t.test('admission: valid, invalid (with field), ignored; the latest verdict per object wins', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger() });
  const good = makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ port: 80 }] });
  const bad = withField(good, 'spec.ports[0].port', 0);
  t.equal(a.service(good, true).ports?.length, 1);
  const r = a.service(bad, true);
  t.same(r, { key: 'default/a', ports: null });
  t.same(a.rejected(), [{ kind: 'Service', key: 'default/a', field: 'spec.ports[0].port', message: 'spec.ports[0].port: must be between 1 and 65535, inclusive, got 0' }]);
  a.service(good, true);
  t.same(a.rejected(), [], 'fixed');
  a.service(makeService({ name: 'a', clusterIP: 'None', ports: [{ port: 80 }] }), true);
  t.same(a.ignored().map((i) => [i.kind, i.key]), [['Service', 'default/a']]);
  a.service(bad, false);
  t.same(a.rejected(), [], 'prev objects are not recorded');
  a.service(bad, true);
  t.same(a.ignored(), [], 'a rejection replaces the ignore');
  a.forget('Service', 'default/a');
  t.same(a.rejected(), []);
});

t.test('admission: objects without a readable name are rejected under (unknown)', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger() });
  t.same(a.service({ spec: {} }, true), { key: null, ports: null });
  t.same(a.rejected().map((r) => [r.key, r.field]), [['(unknown)', 'metadata']]);
  t.same(a.service(null, true), { key: null, ports: null }, 'null is absence, not an error');
});

t.test('admission: EndpointSlices and the configured NodePort range', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger(), nodePortRange: { min: 20000, max: 20100 } });
  const np = makeService({ name: 'n', type: 'NodePort', clusterIP: clusterIP(2), ports: [{ port: 80, nodePort: 20050 }] });
  t.equal(a.service(np, true).ports?.[0]?.nodePort, 20050);
  const es = makeEndpointSlice({ service: 'n', ports: [{ port: 80 }], endpoints: [{ ip: podIP(1, 1) }] });
  t.equal(a.endpointSlice(es, true).info?.serviceKey, 'default/n');
  a.endpointSlice(withField(es, 'endpoints[0].addresses[0]', 'x'), true);
  t.same(a.rejected().map((r) => [r.kind, r.key, r.field]), [['EndpointSlice', 'default/n-abcde', 'endpoints[0].addresses[0]']]);
});

t.test('admission: a Service labelled for another proxy, or headless, is recorded as ignored with the reason', async (t) => {
  const a = new ObjectAdmission({ log: silentLogger() });
  const svc = makeService({ name: 'other', clusterIP: clusterIP(3), ports: [{ port: 80 }] });
  t.equal(a.service(withField(svc, 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': 'cilium' }), true).ports, null);
  t.same(a.ignored(), [{ kind: 'Service', key: 'default/other', reason: "labelled service.kubernetes.io/service-proxy-name=cilium: served by another proxy, no rules (kube-proxy's informers exclude it)" }]);
  t.equal(a.service(svc, true).ports?.length, 1, 'the label removed: served again');
  t.same(a.ignored(), []);
  a.service(withField(svc, 'metadata.labels', { 'service.kubernetes.io/headless': '' }), true);
  t.match(a.ignored(), [{ key: 'default/other', reason: /headless/ }]);
});
