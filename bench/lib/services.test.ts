import t from 'tap';
import { parseEndpointSlice } from '../../agent/src/proxy/model/endpoint-slice.js';
import { parseService } from '../../agent/src/proxy/model/service.js';
import { ENDPOINTS_PER_SERVICE, MAX_SERVICES, POD_IP_POOL, endpointAt, initialEndpoints, nodePortOf, nodePortRangeFor, planChanges, service, slice } from './services.js';

t.test('endpoint addresses: unique 10.244.N.x pod IPs, 253 per node', async (t) => {
  t.same(endpointAt(0), { ip: '10.244.1.2', nodeName: 'node-1' });
  t.same(endpointAt(252), { ip: '10.244.1.254', nodeName: 'node-1' });
  t.same(endpointAt(253), { ip: '10.244.2.2', nodeName: 'node-2' });
  t.same(endpointAt(POD_IP_POOL - 1), { ip: '10.244.254.254', nodeName: 'node-254' });
  t.throws(() => endpointAt(POD_IP_POOL), RangeError);
  t.throws(() => endpointAt(-1), RangeError);
  const ips = new Set<string>();
  for (let n = 1; n <= 30000; n++) for (const j of initialEndpoints(n)) ips.add(endpointAt(j).ip);
  t.equal(ips.size, 30000 * ENDPOINTS_PER_SERVICE, '60,000 distinct endpoint IPs at 30k Services');
});

t.test('every 10th Service is a NodePort; the range widens past 2,768 NodePorts', async (t) => {
  t.equal(nodePortOf(1), 0);
  t.equal(nodePortOf(10), 30000);
  t.equal(nodePortOf(30000), 32999);
  t.same(nodePortRangeFor(1000), { min: 30000, max: 32767 });
  t.same(nodePortRangeFor(30000), { min: 30000, max: 32999 });
});

t.test('the objects pass the proxy model validation the Proxier applies', async (t) => {
  const range = nodePortRangeFor(30000);
  const plain = parseService(service(7), { nodePortRange: range });
  const np = parseService(service(30000), { nodePortRange: range });
  t.match(plain, { kind: 'service', key: 'bench/svc-7' });
  t.match(np, { kind: 'service', key: 'bench/svc-30000' });
  t.match(JSON.stringify(np), /"nodePort":32999/);
  t.match(JSON.stringify(plain), /"clusterIP":"10\.96\.0\.7"/);
  t.throws(() => parseService(service(30000)), 'NodePort 32999 is outside the default range');
  const s = parseEndpointSlice(slice(7, initialEndpoints(7)));
  t.match(s, { kind: 'slice', info: { serviceKey: 'bench/svc-7', ports: [{ name: '', protocol: 'TCP', port: 8080 }] } });
  t.match(JSON.stringify(s), /10\.244\.1\.14.*10\.244\.1\.15/);
});

t.test('planChanges: distinct Services spread over the list, new IPs from the spare pool', async (t) => {
  t.same(planChanges(1000, 3), [
    { service: 250, slot: 1, newEndpoint: 2000 },
    { service: 500, slot: 1, newEndpoint: 2001 },
    { service: 750, slot: 1, newEndpoint: 2002 },
  ]);
  const many = planChanges(5, 5);
  t.equal(new Set(many.map((c) => c.service)).size, 5, 'no Service twice');
  t.ok(many.every((c) => c.service >= 1 && c.service <= 5));
  t.same(planChanges(1, 1), [{ service: 1, slot: 1, newEndpoint: 2 }]);
  t.same(planChanges(10, 0), []);
  t.throws(() => planChanges(3, 4), RangeError);
  t.throws(() => planChanges(32131, 1), /need 64263 pod IPs/);
  t.throws(() => planChanges(0, 0), RangeError);
});

t.test('MAX_SERVICES fits the address conventions: their endpoints and a spare pool for the changes', async (t) => {
  t.ok(MAX_SERVICES * ENDPOINTS_PER_SERVICE + 100 <= POD_IP_POOL, `${MAX_SERVICES} Services`);
  t.equal(planChanges(MAX_SERVICES, 100).length, 100);
});
