import t from 'tap';
import { clusterIP, makeEndpointSlice, makeService, nodeName, podIP } from '../testing/addresses.js';
import { snapshotFromObjects } from './snapshot.js';

t.test('targetPort by name: the endpoint port comes from the slice port named like the Service port', async (t) => {
  const svc = makeService({ name: 'web', clusterIP: clusterIP(1), ports: [{ name: 'http', port: 80, targetPort: 'web' }] });
  const es = makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: [{ ip: podIP(1, 1), nodeName: nodeName(1) }] });
  const snap = snapshotFromObjects([svc], [es], 'node-1');
  t.same([...snap.services.keys()], ['default/web:http']);
  t.same(snap.endpoints.get('default/web:http'), [
    { ip: '10.244.1.2', port: 8080, ready: true, serving: true, terminating: false, nodeName: 'node-1', isLocal: true },
  ]);
});

t.test('endpoints match by port name AND protocol; every port has an entry; orphans dropped; sorted keys', async (t) => {
  const dns = makeService({
    name: 'dns',
    namespace: 'kube-system',
    clusterIP: clusterIP(10),
    ports: [
      { name: 'dns', port: 53, protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      { name: 'metrics', port: 9153 },
    ],
  });
  const a = makeService({ name: 'a', clusterIP: clusterIP(11), ports: [{ port: 80 }] });
  const es = makeEndpointSlice({
    service: 'dns',
    namespace: 'kube-system',
    ports: [
      { name: 'dns', port: 53, protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, protocol: 'UDP' }, // wrong protocol: must not match the TCP port
    ],
    endpoints: [{ ip: podIP(1, 3) }],
  });
  const orphan = makeEndpointSlice({ service: 'gone', ports: [{ port: 80 }], endpoints: [{ ip: podIP(1, 4) }] });
  const snap = snapshotFromObjects([dns, a], [orphan, es], 'node-1');
  t.same([...snap.services.keys()], ['default/a', 'kube-system/dns:dns', 'kube-system/dns:dns-tcp', 'kube-system/dns:metrics']);
  t.same([...snap.endpoints.keys()], [...snap.services.keys()]);
  t.same(snap.endpoints.get('kube-system/dns:dns')!.map((e) => e.ip), ['10.244.1.4']);
  t.same(snap.endpoints.get('kube-system/dns:dns-tcp'), []);
  t.same(snap.endpoints.get('default/a'), []);
});
