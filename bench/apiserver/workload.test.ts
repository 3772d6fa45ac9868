import t from 'tap';
import { endpointSlice, isLoadObject, loadServiceName, loadSlice, podIP, service } from './workload.js';

t.test('the objects the brief names, as sent', async (t) => {
  t.same(service('c16-0'), { apiVersion: 'v1', kind: 'Service', metadata: { name: 'c16-0' }, spec: { ports: [{ port: 80 }] } });
  t.same(endpointSlice('e', 's', 3), {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'e', labels: { 'kubernetes.io/service-name': 's' } },
    addressType: 'IPv4', endpoints: [{ addresses: ['10.244.1.5'] }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  });
});

t.test('load names sort as numbers; slices pair with Services; pod IPs are unique', async (t) => {
  t.equal(loadServiceName(7), 'load-svc-00007');
  t.equal(loadSlice(10_007, 10_000).metadata.name, 'load-eps-10007');
  t.equal(loadSlice(10_007, 10_000).metadata.labels['kubernetes.io/service-name'], 'load-svc-00007', 'two slices per Service at 10,000 / 20,000');
  t.equal(podIP(0), '10.244.1.2');
  t.equal(podIP(249), '10.244.1.251');
  t.equal(podIP(250), '10.244.2.2');
  const ips = new Set(Array.from({ length: 60_000 }, (_, i) => podIP(i)));
  t.equal(ips.size, 60_000);
  t.throws(() => podIP(255 * 250), RangeError);
  t.throws(() => podIP(-1), RangeError);
});

t.test('isLoadObject: the load\'s Services and slices, not the server\'s own', async (t) => {
  t.ok(isLoadObject(loadServiceName(0)));
  t.ok(isLoadObject(loadSlice(19_999, 10_000).metadata.name));
  for (const own of ['kubernetes', 'load-svc-1', 'c16-3', undefined]) t.notOk(isLoadObject(own), String(own));
});
