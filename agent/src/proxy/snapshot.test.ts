import t from 'tap';
import { clusterIP, makeEndpointSlice, makeService, nodeName, podIP } from '../testing/addresses.js';
import { buildSnapshot, SnapshotTracker, snapshotFromObjects } from './snapshot.js';
import { ep, svc } from './test-fixtures.js';
import { spnKey, type EndpointInfo, type ProxySnapshot, type ServicePortInfo, type SpnKey } from './types.js';

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

const dump = (s: ProxySnapshot) => ({ services: [...s.services.entries()], endpoints: [...s.endpoints.entries()] });

t.test('SnapshotTracker: updated at the changed ports, it equals a rebuild; snapshots handed out never change', async (t) => {
  const services = new Map<SpnKey, ServicePortInfo>();
  const endpoints = new Map<SpnKey, readonly EndpointInfo[]>();
  const put = (info: ServicePortInfo) => services.set(spnKey(info.spn), info);
  for (let i = 1; i <= 400; i++) {
    const info = svc('ns', `s${i}`, `10.96.${i >> 8}.${i & 255}`, { portName: 'http', protocol: i % 7 === 0 ? 'UDP' : 'TCP' });
    put(info);
    if (i % 5 !== 0) endpoints.set(spnKey(info.spn), [ep(`10.244.0.${i % 250}`), ep(`10.244.1.${i % 250}`)]);
  }
  endpoints.set('ns/orphan:http/TCP', [ep('10.244.9.9')]); // endpoints without a ServicePort: left out
  const tracker = new SnapshotTracker();
  const first = tracker.rebuild(services, endpoints);
  const firstDump = dump(first);
  t.same(firstDump, dump(buildSnapshot(services, endpoints)));
  t.equal(tracker.endpointCount, 2 * 320);

  const held: { snap: ProxySnapshot; expect: ReturnType<typeof dump> }[] = [{ snap: first, expect: firstDump }];
  const steps: [string, () => SpnKey[]][] = [
    ['an endpoint changes', () => {
      const k = 'ns/s3:http/TCP';
      endpoints.set(k, [ep('10.244.2.3')]);
      return [k];
    }],
    ['a Service gets its first endpoints, another loses all', () => {
      endpoints.set('ns/s5:http/TCP', [ep('10.244.3.5')]);
      endpoints.delete('ns/s4:http/TCP');
      return ['ns/s5:http/TCP', 'ns/s4:http/TCP'];
    }],
    ['a port changes protocol under the same name (one spnString, two spnKeys)', () => {
      services.delete('ns/s8:http/TCP');
      endpoints.delete('ns/s8:http/TCP');
      put(svc('ns', 's8', '10.96.0.8', { portName: 'http', protocol: 'UDP' }));
      endpoints.set('ns/s8:http/UDP', [ep('10.244.4.8')]);
      return ['ns/s8:http/TCP', 'ns/s8:http/UDP'];
    }],
    ['Services added (sorting between and after the others) and removed', () => {
      put(svc('ns', 's10a', '10.96.9.1', { portName: 'http' }));
      put(svc('zz', 'last', '10.96.9.2', { portName: 'http' }));
      endpoints.set('zz/last:http/TCP', [ep('10.244.5.1'), ep('10.244.5.2')]);
      services.delete('ns/s2:http/TCP');
      endpoints.delete('ns/s2:http/TCP');
      return ['ns/s10a:http/TCP', 'zz/last:http/TCP', 'ns/s2:http/TCP'];
    }],
    ['an orphan endpoint list changes: nothing to show', () => {
      endpoints.set('ns/orphan:http/TCP', [ep('10.244.9.10')]);
      return ['ns/orphan:http/TCP'];
    }],
    ['a ServicePort itself changes (a NodePort added)', () => {
      put(svc('ns', 's11', '10.96.0.11', { portName: 'http', nodePort: 30011 }));
      return ['ns/s11:http/TCP'];
    }],
  ];
  for (const [what, step] of steps) {
    const snap = tracker.update(step(), services, endpoints);
    const want = buildSnapshot(services, endpoints);
    t.same(dump(snap), dump(want), what);
    let total = 0;
    for (const l of want.endpoints.values()) total += l.length;
    t.equal(tracker.endpointCount, total, `${what}: endpoint count`);
    t.equal(tracker.current().services, snap.services, 'current() is the last snapshot');
    held.push({ snap, expect: dump(snap) });
  }
  for (let i = 0; i < 600; i++) {
    const k = `ns/s${1 + (i % 390)}:http/${(1 + (i % 390)) % 7 === 0 ? 'UDP' : 'TCP'}`;
    endpoints.set(k, [ep(`10.245.${i >> 8}.${i & 255}`)]);
    tracker.update([k], services, endpoints);
  }
  t.same(dump(tracker.current()), dump(buildSnapshot(services, endpoints)), 'after enough changes to compact, still equal to a rebuild');
  for (const h of held) t.same(dump(h.snap), h.expect, 'a snapshot handed out earlier is unchanged');
});
