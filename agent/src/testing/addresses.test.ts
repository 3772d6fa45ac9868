import t from 'tap';
import { cidrContains } from '../../../lib/net/ip.js';
import { CLUSTER_CIDR, SERVICE_CIDR, UNDERLAY_CIDR, clusterIP, makeService, nodeIP, nodePort, podCIDR, podGateway, podIP, withField } from './addresses.js';

t.test('address conventions', async (t) => {
  t.equal(podCIDR(3), '10.244.3.0/24');
  t.equal(podGateway(3), '10.244.3.1');
  t.equal(podIP(3, 1), '10.244.3.2');
  t.ok(cidrContains(podCIDR(3), podIP(3, 253)));
  t.ok(cidrContains(CLUSTER_CIDR, podIP(200, 7)));
  t.equal(nodeIP(1), '192.168.77.11', 'matches lab/plan.ts');
  t.ok(cidrContains(UNDERLAY_CIDR, nodeIP(9)));
  t.equal(clusterIP(1), '10.96.0.1');
  t.equal(clusterIP(300), '10.96.1.44');
  t.ok(cidrContains(SERVICE_CIDR, clusterIP(65534)));
  t.equal(nodePort(80), 30080);
  t.throws(() => podIP(1, 0), RangeError);
  t.throws(() => podIP(0, 1), RangeError);
  t.throws(() => clusterIP(65535), RangeError);
});

t.test('withField edits a deep copy; undefined deletes; bad paths throw', async (t) => {
  const svc = makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ port: 80 }, { port: 81, name: 'b' }] });
  const edited = withField(svc, 'spec.ports[1].port', 0);
  t.same((edited['spec'] as { ports: { port: number }[] }).ports[1]!.port, 0);
  t.same((svc['spec'] as { ports: { port: number }[] }).ports[1]!.port, 81, 'original untouched');
  const del = withField(svc, 'spec.ports[0].protocol', undefined);
  t.notOk('protocol' in (del['spec'] as { ports: object[] }).ports[0]!);
  t.throws(() => withField(svc, 'spec.nothing.here', 1));
});
