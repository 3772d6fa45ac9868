/**
 * ClusterIP and NodePort allocation in the API server's create and update
 * path, on a real storage (LocalStorage over the fake persistence) and watch cache and Rest: no duplicate ever,
 * requested values checked in kube-apiserver's words, kept across
 * updates, released on delete and type changes, rebuilt from the stored
 * Services at start (the repair).
 */
import t, { type Test } from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { statusOf, type Status } from '../api/errors.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { parsePortRange, ServiceAllocator } from './service-allocator.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const SVC = RESOURCES.find((r) => r.resource === 'services')!;
const NS = RESOURCES.find((r) => r.resource === 'namespaces')!;

async function setup(t: Test, opts: { persistence?: FakePersistence; cidr?: string; ports?: { from: number; to: number } } = {}) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const persistence = opts.persistence ?? new FakePersistence();
  const ts = openTestStore({ persistence, clock });
  const store = ts.cache;
  const alloc = new ServiceAllocator({ ...(opts.cidr ? { serviceCIDR: opts.cidr } : {}), ...(opts.ports ? { nodePortRange: opts.ports } : {}) });
  alloc.start(store);
  await alloc.repair(store, ts.storage);
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock, services: alloc });
  t.teardown(() => {
    alloc.stop();
    ts.close();
  });
  if (!store.get('namespaces//default')) await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { store, ts, rest, alloc, persistence };
}

const svc = (name: string, spec: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ name: 'http', port: 80 }], ...spec } });
const spec = (o: KObject) => o['spec'] as { clusterIP?: string; clusterIPs?: string[]; ports: { port: number; nodePort?: number; protocol?: string }[] };

async function failure(f: () => Promise<unknown>): Promise<Status> {
  try {
    await f();
  } catch (e) {
    return statusOf(e);
  }
  throw new Error('expected a failure');
}

t.test('parsePortRange', async (t) => {
  t.same(parsePortRange('30000-32767'), { from: 30000, to: 32767 });
  for (const bad of ['30000', '0-10', '10-5', '1-70000', 'a-b']) t.throws(() => parsePortRange(bad), /not a port range/);
});

t.test('a ClusterIP for every ClusterIP, NodePort and LoadBalancer Service, none for headless and ExternalName; never a duplicate', async (t) => {
  const { rest, alloc } = await setup(t, { cidr: '10.96.0.0/28' });
  t.equal(alloc.firstIP, '10.96.0.1');
  const created = await rest.create(SVC, 'default', svc('a'));
  const ip = spec(created.object).clusterIP!;
  t.ok(ip.startsWith('10.96.0.'), `the object returned already has its ClusterIP (${ip})`);
  t.same(spec(created.object).clusterIPs, [ip]);
  t.not(ip, '10.96.0.1', 'the first address is the kubernetes Service\'s');
  const headless = await rest.create(SVC, 'default', svc('h', { clusterIP: 'None' }));
  t.equal(spec(headless.object).clusterIP, 'None');
  const ext = await rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { type: 'ExternalName', externalName: 'example.com' } });
  t.equal(spec(ext.object).clusterIP, undefined);
  // A /28: 16 addresses, less the network, the broadcast and the kubernetes one: 13 for others; one is taken.
  const ips = new Set([ip]);
  const many = await Promise.all(Array.from({ length: 12 }, (_, i) => rest.create(SVC, 'default', svc(`s${i}`))));
  for (const m of many) ips.add(spec(m.object).clusterIP!);
  t.equal(ips.size, 13, 'concurrent creates got distinct addresses');
  t.notOk([...ips].some((x) => x === '10.96.0.0' || x === '10.96.0.15' || x === '10.96.0.1'), 'never the network, the broadcast or the first address');
  const full = await failure(() => rest.create(SVC, 'default', svc('one-too-many')));
  t.match(full, { code: 422, details: { causes: [{ field: 'spec.clusterIPs', message: /range is full/ }] } });
  await rest.delete(SVC, 'default', 's3');
  const again = await rest.create(SVC, 'default', svc('reuses'));
  t.equal(spec(again.object).clusterIP, spec(many[3]!.object).clusterIP, 'a deleted Service\'s address is free again');
});

t.test('a requested ClusterIP: out of range or taken is a 422 naming spec.clusterIPs; the kubernetes one may be asked for', async (t) => {
  const { rest, store } = await setup(t);
  t.equal(spec((await rest.create(SVC, 'default', svc('kubernetes', { clusterIP: '10.96.0.1' }))).object).clusterIP, '10.96.0.1');
  t.equal(spec((await rest.create(SVC, 'default', svc('dns', { clusterIP: '10.96.0.10' }))).object).clusterIP, '10.96.0.10');
  const rev = store.rev;
  t.match(await failure(() => rest.create(SVC, 'default', svc('dup', { clusterIP: '10.96.0.10' }))), {
    code: 422, reason: 'Invalid', message: 'Service "dup" is invalid: spec.clusterIPs: Invalid value: "10.96.0.10": failed to allocate IP 10.96.0.10: provided IP is already allocated',
  });
  t.match(await failure(() => rest.create(SVC, 'default', svc('far', { clusterIP: '192.168.1.1' }))), {
    code: 422, details: { causes: [{ field: 'spec.clusterIPs', message: /the provided IP \(192\.168\.1\.1\) is not in the valid range\. The range of valid IPs is 10\.96\.0\.0\/12/ }] },
  });
  t.match(await failure(() => rest.create(SVC, 'default', svc('net', { clusterIP: '10.96.0.0' }))), { code: 422 });
  t.equal(store.rev, rev, 'nothing stored');
  const dry = await rest.create(SVC, 'default', svc('dry'), { dryRun: true });
  t.ok(spec(dry.object).clusterIP, 'a dry run shows an address');
  t.notOk(store.get('services/default/dry'));
  const after = await rest.create(SVC, 'default', svc('after', { clusterIP: spec(dry.object).clusterIP }));
  t.equal(spec(after.object).clusterIP, spec(dry.object).clusterIP, 'and holds nothing');
});

t.test('NodePorts: allocated in range, requested ones checked, kept across updates, dropped with the type, freed on delete', async (t) => {
  const { rest } = await setup(t, { ports: { from: 30000, to: 30009 } });
  const np = await rest.create(SVC, 'default', svc('np', { type: 'NodePort', ports: [{ name: 'http', port: 80 }, { name: 'dns', port: 53, protocol: 'UDP' }, { name: 'dns-tcp', port: 53, protocol: 'TCP' }] }));
  const [a, b, c] = spec(np.object).ports.map((p) => p.nodePort!);
  t.ok(a! >= 30000 && a! <= 30009 && b! >= 30000 && b! <= 30009);
  t.not(a, b);
  t.equal(b, c, 'one port number over TCP and UDP shares its NodePort, as upstream');
  t.match(await failure(() => rest.create(SVC, 'default', svc('taken', { type: 'NodePort', ports: [{ port: 80, nodePort: a }] }))), {
    code: 422, details: { causes: [{ field: 'spec.ports[0].nodePort', message: `Invalid value: ${a}: provided port is already allocated` }] },
  });
  t.match(await failure(() => rest.create(SVC, 'default', svc('low', { type: 'NodePort', ports: [{ port: 80, nodePort: 8080 }] }))), {
    code: 422, details: { causes: [{ field: 'spec.ports[0].nodePort', message: 'Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-30009' }] },
  });
  // An update (a kubectl apply of the manifest without nodePorts) keeps them.
  const cur = (await rest.get(SVC, 'default', 'np')).object as KObject;
  const next = structuredClone(cur) as KObject;
  for (const p of spec(next).ports) delete p.nodePort;
  const upd = await rest.update(SVC, 'default', 'np', next);
  t.same(spec(upd.object).ports.map((p) => p.nodePort), [a, b, c], 'kept');
  t.equal(upd.object.metadata?.['resourceVersion'], cur.metadata?.['resourceVersion'], 'and so nothing changed at all');
  // Adding a port allocates only for it.
  const added = await rest.patch(SVC, 'default', 'np', 'strategic', { spec: { ports: [{ name: 'https', port: 443 }] } });
  const ports = spec(added.object).ports;
  t.equal(ports.length, 4);
  t.same(ports.filter((p) => p.port !== 443).map((p) => p.nodePort).sort(), [a, b, c].sort());
  const https = ports.find((p) => p.port === 443)!.nodePort!;
  t.ok(![a, b].includes(https));
  // Back to ClusterIP: the NodePorts go and are free again.
  const back = await rest.patch(SVC, 'default', 'np', 'merge', { spec: { type: 'ClusterIP' } });
  t.same(spec(back.object).ports.map((p) => p.nodePort), [undefined, undefined, undefined, undefined]);
  const reuse = await rest.create(SVC, 'default', svc('reuse', { type: 'NodePort', ports: [{ port: 80, nodePort: a }] }));
  t.equal(spec(reuse.object).ports[0]!.nodePort, a, 'a freed NodePort may be asked for');
  await rest.delete(SVC, 'default', 'reuse');
  t.equal(spec((await rest.create(SVC, 'default', svc('reuse2', { type: 'NodePort', ports: [{ port: 80, nodePort: a }] }))).object).ports[0]!.nodePort, a, 'and again after a delete');
  // A ClusterIP can not change.
  const ip = spec(back.object).clusterIP;
  t.match(await failure(() => rest.patch(SVC, 'default', 'np', 'merge', { spec: { clusterIP: '10.96.0.99', clusterIPs: ['10.96.0.99'] } })), { code: 422, message: /may not change once set/ });
  t.equal(spec((await rest.get(SVC, 'default', 'np')).object as KObject).clusterIP, ip);
});

t.test('the repair: a restarted server rebuilds what is allocated from the stored Services', async (t) => {
  const persistence = new FakePersistence();
  const first = await setup(t, { persistence, cidr: '10.96.0.0/29', ports: { from: 30000, to: 30001 } });
  const a = await first.rest.create(SVC, 'default', svc('a', { type: 'NodePort' }));
  first.alloc.stop();
  first.ts.close();
  const second = await setup(t, { persistence, cidr: '10.96.0.0/29', ports: { from: 30000, to: 30001 } });
  // A /29 has 5 addresses for Services besides the kubernetes one; one is a's.
  const made = await Promise.all(Array.from({ length: 4 }, (_, i) => second.rest.create(SVC, 'default', svc(`b${i}`, { type: 'NodePort' })).catch((e: unknown) => statusOf(e))));
  const ok = made.filter((m): m is Awaited<ReturnType<Rest['create']>> => 'object' in m);
  t.equal(ok.length, 1, 'one NodePort was left of two');
  t.not(spec(ok[0]!.object).ports[0]!.nodePort, spec(a.object).ports[0]!.nodePort, 'not the one a holds');
  t.notOk(ok.some((m) => spec(m.object).clusterIP === spec(a.object).clusterIP), 'nor its address');
  t.same(second.alloc.duplicates, []);
});

const hcOf = (o: KObject) => (o['spec'] as { healthCheckNodePort?: number }).healthCheckNodePort;
const lbLocal = (name: string, spec: O = {}) => svc(name, { type: 'LoadBalancer', externalTrafficPolicy: 'Local', ...spec });

t.test('healthCheckNodePort: a LoadBalancer with externalTrafficPolicy Local gets one from the NodePort range, apart from its NodePorts', async (t) => {
  const { rest } = await setup(t, { ports: { from: 30000, to: 30009 } });
  // A requested one is honoured when free.
  const b = (await rest.create(SVC, 'default', lbLocal('b', { healthCheckNodePort: 30009, ports: [{ port: 80, nodePort: 30008 }] }))).object;
  t.equal(hcOf(b), 30009);
  const a = (await rest.create(SVC, 'default', lbLocal('a'))).object;
  const hc = hcOf(a)!;
  const np = spec(a).ports[0]!.nodePort!;
  t.ok(hc >= 30000 && hc <= 30009, `in range (${hc})`);
  t.not(hc, np, 'not its own NodePort');
  // Taken or out of range: a 422 naming the field.
  t.match(await failure(() => rest.create(SVC, 'default', lbLocal('taken', { healthCheckNodePort: hc }))), {
    code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: `Invalid value: ${hc}: provided port is already allocated` }] },
  });
  t.match(await failure(() => rest.create(SVC, 'default', lbLocal('by-nodeport', { healthCheckNodePort: 30008 }))), { code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: /already allocated/ }] } }, 'another Service\'s NodePort is taken too');
  const free = [30000, 30001, 30002, 30003, 30004].find((p) => p !== hc && p !== np)!;
  t.match(await failure(() => rest.create(SVC, 'default', lbLocal('own', { healthCheckNodePort: free, ports: [{ port: 80, nodePort: free }] }))), { code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: /already allocated/ }] } }, 'and so is its own');
  t.match(await failure(() => rest.create(SVC, 'default', lbLocal('far', { healthCheckNodePort: 31000 }))), {
    code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: 'Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30009' }] },
  });
  t.match(await failure(() => rest.create(SVC, 'default', lbLocal('zero', { healthCheckNodePort: 70000 }))), { code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: /must be between 1 and 65535, inclusive/ }] } });
  t.equal(hcOf((await rest.create(SVC, 'default', svc('cluster', { type: 'LoadBalancer' }))).object), undefined, 'externalTrafficPolicy Cluster: none');
  t.equal(hcOf((await rest.create(SVC, 'default', svc('np', { type: 'NodePort', externalTrafficPolicy: 'Local' }))).object), undefined, 'a NodePort Service: none');
});

t.test('healthCheckNodePort: kept across updates, immutable, released when the policy or the type changes away or the Service goes', async (t) => {
  const { rest } = await setup(t, { ports: { from: 30000, to: 30003 } });
  const a = (await rest.create(SVC, 'default', lbLocal('a'))).object;
  const hc = hcOf(a)!;
  const next = structuredClone(a);
  delete (next['spec'] as O)['healthCheckNodePort'];
  for (const p of spec(next).ports) delete p.nodePort;
  t.equal(hcOf((await rest.update(SVC, 'default', 'a', next)).object), hc, 'an update without it keeps it');
  const other = hc === 30000 ? 30001 : 30000;
  t.match(await failure(() => rest.patch(SVC, 'default', 'a', 'merge', { spec: { healthCheckNodePort: other } })), {
    code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: 'Forbidden: field is immutable' }] },
  });
  // externalTrafficPolicy Cluster: the field goes and the port is free again.
  const cluster = (await rest.patch(SVC, 'default', 'a', 'merge', { spec: { externalTrafficPolicy: 'Cluster' } })).object;
  t.equal(hcOf(cluster), undefined, 'dropped with the policy');
  const spare = [30000, 30001, 30002, 30003].find((p) => p !== hc && p !== spec(a).ports[0]!.nodePort);
  t.equal(hcOf((await rest.create(SVC, 'default', lbLocal('b', { healthCheckNodePort: hc, ports: [{ port: 80, nodePort: spare }] }))).object), hc, 'and free for another Service');
  t.match(await failure(() => rest.patch(SVC, 'default', 'a', 'merge', { spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: hc } })), { code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: /already allocated/ }] } });
  // Back to Local: a new one (the range has 4: a's NodePort, b's NodePort and health check port, so the last).
  const local = (await rest.patch(SVC, 'default', 'a', 'merge', { spec: { externalTrafficPolicy: 'Local' } })).object;
  const again = hcOf(local)!;
  t.ok(again >= 30000 && again <= 30003 && again !== hc, `allocated again (${again})`);
  t.match(await failure(() => rest.create(SVC, 'default', svc('full', { type: 'NodePort' }))), { code: 422, details: { causes: [{ field: 'spec.ports[0].nodePort', message: /range is full/ }] } }, 'the range is used up');
  // The type changes away: the NodePorts and the health check port go, the load-balancer fields too.
  const back = (await rest.patch(SVC, 'default', 'a', 'merge', { spec: { type: 'ClusterIP' } })).object;
  t.equal(hcOf(back), undefined);
  t.notOk('externalTrafficPolicy' in (back['spec'] as O) || 'allocateLoadBalancerNodePorts' in (back['spec'] as O), 'externalTrafficPolicy and allocateLoadBalancerNodePorts dropped with the type');
  t.ok(hcOf((await rest.create(SVC, 'default', lbLocal('c', { ports: [{ port: 80, nodePort: again }] , healthCheckNodePort: spec(local).ports[0]!.nodePort }))).object), 'both of a\'s ports are free again');
  await rest.delete(SVC, 'default', 'b');
  t.equal(hcOf((await rest.create(SVC, 'default', lbLocal('d', { allocateLoadBalancerNodePorts: false, healthCheckNodePort: hc }))).object), hc, 'a deleted Service\'s health check port is free');
});

t.test('allocateLoadBalancerNodePorts: false: no NodePorts, but a requested one is honoured and checked', async (t) => {
  const { rest } = await setup(t, { ports: { from: 30000, to: 30009 } });
  const none = (await rest.create(SVC, 'default', svc('none', { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false }))).object;
  t.same(spec(none).ports.map((p) => p.nodePort), [undefined]);
  const asked = (await rest.create(SVC, 'default', svc('asked', { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [{ name: 'a', port: 80, nodePort: 30005 }, { name: 'b', port: 81 }] }))).object;
  t.same(spec(asked).ports.map((p) => p.nodePort), [30005, undefined]);
  t.match(await failure(() => rest.create(SVC, 'default', svc('dup', { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [{ port: 80, nodePort: 30005 }] }))), { code: 422, details: { causes: [{ field: 'spec.ports[0].nodePort', message: /already allocated/ }] } });
  // Turned on later: the ports without one get one, the requested one stays.
  const on = (await rest.patch(SVC, 'default', 'asked', 'merge', { spec: { allocateLoadBalancerNodePorts: true } })).object;
  t.equal(spec(on).ports[0]!.nodePort, 30005);
  t.ok(spec(on).ports[1]!.nodePort, 'allocated');
});

t.test('the repair includes health check NodePorts', async (t) => {
  const persistence = new FakePersistence();
  const first = await setup(t, { persistence, ports: { from: 30000, to: 30002 } });
  const a = (await first.rest.create(SVC, 'default', lbLocal('a'))).object;
  first.alloc.stop();
  first.ts.close();
  const second = await setup(t, { persistence, ports: { from: 30000, to: 30002 } });
  t.match(await failure(() => second.rest.create(SVC, 'default', lbLocal('b', { healthCheckNodePort: hcOf(a) }))), { code: 422, details: { causes: [{ field: 'spec.healthCheckNodePort', message: /already allocated/ }] } });
  const b = (await second.rest.create(SVC, 'default', svc('b', { type: 'NodePort' }))).object;
  t.notOk([hcOf(a), spec(a).ports[0]!.nodePort].includes(spec(b).ports[0]!.nodePort), 'the one port left');
  t.same(second.alloc.free().ports, 0);
});

t.test('load-balancer field validation, in kube-apiserver\'s words', async (t) => {
  const { rest } = await setup(t);
  const causes = async (s: KObject) => (await failure(() => rest.create(SVC, 'default', s))).details?.causes;
  t.match(await causes(svc('a', { type: 'NodePort', externalTrafficPolicy: 'Local', healthCheckNodePort: 30100 })), [{ field: 'spec.healthCheckNodePort', message: "Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'" }]);
  t.match(await causes(svc('b', { externalTrafficPolicy: 'Local' })), [{ field: 'spec.externalTrafficPolicy', message: 'Invalid value: "Local": may only be set for externally-accessible services' }]);
  t.ok(await rest.create(SVC, 'default', svc('ext', { externalIPs: ['192.0.2.1'], externalTrafficPolicy: 'Local' })), 'a ClusterIP with externalIPs is externally accessible');
  t.match(await causes(svc('c', { type: 'LoadBalancer', externalTrafficPolicy: 'Remote' })), [{ field: 'spec.externalTrafficPolicy', message: 'Unsupported value: "Remote": supported values: "Cluster", "Local"' }]);
  t.match(await causes(svc('d', { type: 'LoadBalancer', loadBalancerSourceRanges: ['10.0.0.0/8', ' 192.168.0.0/16 ', 'fd00::/8', 'nope', '10.0.0.0/33'] })), [
    { field: 'spec.LoadBalancerSourceRanges[3]', message: 'Invalid value: "nope": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)' },
    { field: 'spec.LoadBalancerSourceRanges[4]' },
  ]);
  t.match(await causes(svc('e', { loadBalancerSourceRanges: ['10.0.0.0/8'] })), [{ field: 'spec.LoadBalancerSourceRanges', message: "Forbidden: may only be used when `type` is 'LoadBalancer'" }]);
  t.match(await causes({ ...svc('f', { type: 'LoadBalancer' }), metadata: { name: 'f', annotations: { 'service.beta.kubernetes.io/load-balancer-source-ranges': '10.0.0.0/8, x' } } }), [{ field: 'metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]', message: 'Invalid value: "x": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)' }]);
  t.match(await causes(svc('g', { type: 'NodePort', allocateLoadBalancerNodePorts: false })), [{ field: 'spec.allocateLoadBalancerNodePorts', message: "Forbidden: may only be used when `type` is 'LoadBalancer'" }]);
  t.match(await causes(svc('h', { loadBalancerClass: 'example.com/lb' })), [{ field: 'spec.loadBalancerClass', message: "Forbidden: may only be used when `type` is 'LoadBalancer'" }]);
  t.match(await causes(svc('i', { type: 'LoadBalancer', loadBalancerClass: 'not a name' })), [{ field: 'spec.loadBalancerClass', message: /^Invalid value: "not a name": name part must consist of alphanumeric characters/ }]);
  await rest.create(SVC, 'default', svc('j', { type: 'LoadBalancer', loadBalancerClass: 'example.com/lb' }));
  t.match((await failure(() => rest.patch(SVC, 'default', 'j', 'merge', { spec: { loadBalancerClass: 'example.com/other' } }))).details?.causes, [{ field: 'spec.loadBalancerClass', message: 'Invalid value: "example.com/other": may not change once set' }]);
  const cip = (await rest.patch(SVC, 'default', 'j', 'merge', { spec: { type: 'ClusterIP' } })).object;
  t.notOk('loadBalancerClass' in (cip['spec'] as O), 'dropped with the type');
});

// ---- the allocation objects (issue 25): the stored lock that holds across API servers ----

import { MemoryStorage } from '../store/memory-storage.js';
import { WatchCache } from '../store/watch-cache.js';
import { IP_ADDRESSES, NODE_PORTS } from './service-allocator.js';
import type { Storage } from '../store/storage.js';

/** One API server (cache, allocator, Rest) over a shared backend. */
async function server(t: Test, storage: Storage, opts: { cidr?: string; ports?: { from: number; to: number } } = {}) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const cache = new WatchCache({ storage, clock });
  await cache.start();
  const alloc = new ServiceAllocator({ ...(opts.cidr ? { serviceCIDR: opts.cidr } : {}), ...(opts.ports ? { nodePortRange: opts.ports } : {}) });
  alloc.start(cache);
  await alloc.repair(cache, storage);
  const rest = new Rest({ storage, cache, schemas, clock, services: alloc });
  t.teardown(() => {
    alloc.stop();
    cache.close();
  });
  return { cache, alloc, rest };
}

const parent = (s: { object: KObject } | undefined) => (s?.object['spec'] as { parentRef?: O } | undefined)?.parentRef;

t.test('each ClusterIP and NodePort is an object naming its Service, written and deleted with it', async (t) => {
  const { store, rest } = await setup(t, { cidr: '10.96.0.0/24' });
  const a = await rest.create(SVC, 'default', svc('a', { type: 'NodePort' }));
  const ip = spec(a.object).clusterIP!;
  const port = spec(a.object).ports[0]!.nodePort!;
  t.same(parent(store.get(`${IP_ADDRESSES}//${ip}`)), { group: '', resource: 'services', namespace: 'default', name: 'a' }, 'an IPAddress, KEP-1880\'s shape');
  t.equal(store.get(`${IP_ADDRESSES}//${ip}`)?.object['kind'], 'IPAddress');
  t.same(parent(store.get(`${NODE_PORTS}//${port}`))?.['name'], 'a');
  t.equal(store.get(`${IP_ADDRESSES}//${ip}`)?.rev, store.get('services/default/a')!.rev + 1, 'written in the Service\'s transaction (its next revision)');
  // The type changes away from NodePort: its NodePort object goes in the same write.
  await rest.patch(SVC, 'default', 'a', 'merge', { spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80 }] } });
  t.equal(store.get(`${NODE_PORTS}//${port}`), undefined, 'the released NodePort\'s object is gone');
  t.ok(store.get(`${IP_ADDRESSES}//${ip}`), 'the address stays');
  await rest.delete(SVC, 'default', 'a');
  t.equal(store.get(`${IP_ADDRESSES}//${ip}`), undefined, 'deleted with the Service');
});

t.test('two API servers on one backend never hand out one value, though each cache lags the other\'s writes', async (t) => {
  const storage = new MemoryStorage();
  // A /29: 5 addresses for Services (the first is the kubernetes Service's, unused here), NodePorts 30000-30003.
  const opts = { cidr: '10.96.0.0/29', ports: { from: 30000, to: 30003 } };
  const one = await server(t, storage, opts);
  const two = await server(t, storage, opts);
  await one.rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  await two.cache.fresh();
  // Both ask at once, each for 4 NodePort Services: 8 asks for 5 addresses and 4 ports.
  const asks = [one, two].flatMap((s, i) => Array.from({ length: 4 }, (_, j) => s.rest.create(SVC, 'default', svc(`s${i}-${j}`, { type: 'NodePort' })).catch((e: unknown) => statusOf(e))));
  const made = await Promise.all(asks);
  const ok = made.filter((m): m is Awaited<ReturnType<Rest['create']>> => 'object' in m);
  const ips = ok.map((m) => spec(m.object).clusterIP);
  const ports = ok.map((m) => spec(m.object).ports[0]!.nodePort);
  t.equal(new Set(ips).size, ips.length, `no address twice: ${ips.join(' ')}`);
  t.equal(new Set(ports).size, ports.length, `no NodePort twice: ${ports.join(' ')}`);
  t.equal(ok.length, 4, 'as many as the ports allow');
  for (const m of made) if (!('object' in m)) t.match(m, { code: 422, message: /range is full/ }, 'the rest: the range is full, as a full range is answered elsewhere');
  // The same address asked for by both at once: one gets it, the other is told it is taken.
  await one.rest.delete(SVC, 'default', 's0-0').catch(() => two.rest.delete(SVC, 'default', 's1-0'));
  await Promise.all([one.cache.fresh(), two.cache.fresh()]);
  const free = ['10.96.0.2', '10.96.0.3', '10.96.0.4', '10.96.0.5', '10.96.0.6'].find((ip) => !one.cache.get(`${IP_ADDRESSES}//${ip}`))!;
  const race = await Promise.all([one, two].map((s, i) => s.rest.create(SVC, 'default', svc(`want-${i}`, { clusterIP: free })).catch((e: unknown) => statusOf(e))));
  const won = race.filter((m) => 'object' in m);
  t.equal(won.length, 1, `one of two gets ${free}`);
  t.match(race.find((m) => !('object' in m)), { code: 422, message: /provided IP is already allocated/ });
});

t.test('the repair makes the objects a store written before them lacks, and drops objects no Service holds', async (t) => {
  const storage = new MemoryStorage();
  // A store as a version before allocation objects left it: a Service with an address and a NodePort, no objects.
  await storage.create('services/default/old', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'old', namespace: 'default' }, spec: { type: 'NodePort', clusterIP: '10.96.0.9', clusterIPs: ['10.96.0.9'], ports: [{ port: 80, nodePort: 30009 }] } });
  await storage.create(`${IP_ADDRESSES}//10.96.0.77`, { kind: 'IPAddress', metadata: { name: '10.96.0.77' }, spec: { parentRef: { group: '', resource: 'services', namespace: 'default', name: 'gone' } } });
  const { cache } = await server(t, storage, { cidr: '10.96.0.0/24' });
  t.same(parent(cache.get(`${IP_ADDRESSES}//10.96.0.9`))?.['name'], 'old', 'the address got its object');
  t.same(parent(cache.get(`${NODE_PORTS}//30009`))?.['name'], 'old', 'the NodePort too');
  t.equal(cache.get(`${IP_ADDRESSES}//10.96.0.77`), undefined, 'the orphan is gone');
});

t.test('the repair works on one snapshot: a Service created by another API server while it runs keeps its objects', async (t) => {
  const storage = new MemoryStorage();
  await storage.create('namespaces//default', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  // A Service without its object, so that the repair has a write to make (and awaits it).
  await storage.create('services/default/old', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'old', namespace: 'default' }, spec: { clusterIP: '10.96.0.9', clusterIPs: ['10.96.0.9'], ports: [{ port: 80 }] } });
  const other = await server(t, storage, { cidr: '10.96.0.0/24' }); // another API server, its repair done
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const cache = new WatchCache({ storage, clock });
  await cache.start();
  const alloc = new ServiceAllocator({ serviceCIDR: '10.96.0.0/24' });
  alloc.start(cache);
  t.teardown(() => { alloc.stop(); cache.close(); });
  // Put the old Service back without its object, then race: while this repair writes, the other server creates one.
  await storage.delete(`${IP_ADDRESSES}//10.96.0.9`);
  await cache.fresh();
  let made: string | undefined;
  const racing: Storage = Object.assign(Object.create(storage) as Storage, {
    create: async (key: string, obj: KObject) => {
      const r = await storage.create(key, obj);
      if (!made) {
        made = spec((await other.rest.create(SVC, 'default', svc('new'))).object).clusterIP;
        await cache.fresh();
      }
      return r;
    },
  });
  await alloc.repair(cache, racing);
  t.ok(made, 'the other server created a Service during the repair');
  t.same(parent(await storage.get(`${IP_ADDRESSES}//${made}`))?.['name'], 'new', 'its IPAddress is still there');
  t.same(parent(await storage.get(`${IP_ADDRESSES}//10.96.0.9`))?.['name'], 'old', 'and the repair made the old Service\'s');
});
