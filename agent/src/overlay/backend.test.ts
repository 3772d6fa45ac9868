/**
 * The backend slot: an overlay on a backend that is not VXLAN (a fake one
 * that plans one route per peer), so what the overlay owns (leases,
 * publication, the sync loop, a failed peer's skip, the report of a Node on
 * another backend) is shown apart from what VXLAN does.
 */
import t from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { parseCidr } from '../../../lib/net/ip.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { FakeEventRecorder } from '../../../lib/reconcile/event-recorder.fake.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { FakeNetlinkKernel } from '../netlink/netlink.fake.js';
import { BackendRegistry, type Backend, type BackendType } from './backend.js';
import { Overlay } from './overlay.js';
import { A_BACKEND_DATA, A_BACKEND_TYPE, A_PUBLIC_IP, subnetAnnotations, subnetLeaseFromNode, type LeaseReader } from './subnet.js';
import { VXLAN } from './vxlan/backend.js';
import { leaseAnnotations, vtepMacFor } from './vxlan/lease.js';

interface RouteOp { readonly node: string; readonly step: 'route' | 'check'; readonly dst: string }

const READER: LeaseReader<{ readonly table: number }> = {
  type: 'fake-routes',
  serves: 'route',
  readData: (d) => {
    const table = (d as { table?: unknown } | null)?.table;
    return typeof table === 'number' ? { data: { table } } : { skip: 'backend-data has no table', class: 'invalid' };
  },
};

function fakeType(applied: string[], failFor: Set<string>): BackendType {
  const backend: Backend<{ readonly table: number }, RouteOp> = {
    leases: READER,
    device: null,
    setup: async () => ({ mtu: 1500, publicIP: '192.168.77.11', backendData: { table: 7 }, message: 'routes ready', detail: {} }),
    plan: async (peers) => ({ ops: peers.flatMap((p) => [{ node: p.node, step: 'route' as const, dst: `${p.podCIDR} via ${p.publicIP} table ${p.data.table}` }, { node: p.node, step: 'check' as const, dst: p.podCIDR }]), repaired: [] }),
    apply: async (op) => {
      if (failFor.has(op.node)) throw new Error('EHOSTUNREACH');
      applied.push(`${op.step} ${op.dst}`);
    },
    describe: (op) => `${op.step} ${op.dst}`,
  };
  return { type: 'fake-routes', create: () => backend as Backend<unknown>, remove: async () => {} };
}

const node = (name: string, n: number, annotations: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, uid: `uid-${name}`, annotations }, spec: { podCIDR: `10.244.${n}.0/24` } });
const fakePeer = (name: string, n: number) => node(name, n, subnetAnnotations({ backendType: 'fake-routes', backendData: { table: n }, publicIP: `192.168.77.${10 + n}` }));

t.test('the subnet lease is the backend\'s reader of backend-data, beside what every backend has', async (t) => {
  t.same(subnetLeaseFromNode(fakePeer('n2', 2), READER), { lease: { node: 'n2', podCIDR: '10.244.2.0/24', publicIP: '192.168.77.12', data: { table: 2 } } });
  t.match(subnetLeaseFromNode(node('n2', 2, { ...subnetAnnotations({ backendType: 'fake-routes', backendData: {}, publicIP: '192.168.77.12' }) }), READER), { class: 'invalid', field: `metadata.annotations[${A_BACKEND_DATA}]`, skip: 'backend-data has no table' });
  t.match(subnetLeaseFromNode(fakePeer('n2', 2), { ...READER, type: 'vxlan' }), { class: 'elsewhere', foreign: 'fake-routes', field: `metadata.annotations[${A_BACKEND_TYPE}]` });
});

t.test('an overlay on another backend: its plan applied peer by peer, a failed peer\'s rest skipped and retried; a VXLAN Node reported', async (t) => {
  const applied: string[] = [];
  const failFor = new Set(['n3']);
  const clock = new FakeClock();
  const events = new FakeEventRecorder();
  const published: Record<string, string>[] = [];
  const type = fakeType(applied, failFor);
  const kernel = new FakeNetlinkKernel();
  const o = new Overlay({
    nodeName: 'n1', podCIDR: parseCidr('10.244.1.0/24').cidr, clusterCIDR: parseCidr('10.244.0.0/16').cidr, backend: type, registry: new BackendRegistry([type, VXLAN]),
    netlink: kernel.open(kernel.createNetns('n1')), nft: new NftFake(), underlayInterface: null, clock, log: silentLogger(), events,
    publish: async (a) => void published.push(a),
  });
  t.teardown(() => o.stop());
  await o.setup();
  t.equal(o.mtu, 1500);
  t.equal(o.backendType, 'fake-routes');
  o.handler.add(node('n1', 1, {}));
  o.handler.add(fakePeer('n2', 2));
  o.handler.add(fakePeer('n3', 3));
  o.handler.add(node('n4', 4, leaseAnnotations({ vtepMac: vtepMacFor('n4'), publicIP: '192.168.77.14' })));
  o.synced();
  await clock.advance(0);
  t.same(published, [subnetAnnotations({ backendType: 'fake-routes', backendData: { table: 7 }, publicIP: '192.168.77.11' })], 'own Node: the backend\'s type and data');
  t.equal(published[0]![A_PUBLIC_IP], '192.168.77.11');
  t.same(applied, ['route 10.244.2.0/24 via 192.168.77.12 table 2', 'check 10.244.2.0/24'], 'n3\'s route failed: its check was skipped');
  t.equal(o.failed, 1);
  t.same(o.foreignNodes(), [{ node: 'n4', backendType: 'vxlan', known: true }]);
  t.match(events.events, [{ involved: { kind: 'Node', name: 'n4' }, type: 'Warning', reason: 'OverlayBackendMismatch', message: /Node n4 runs the vxlan overlay backend and this node \(n1\) runs fake-routes: no route to its pods is made from here/ }]);

  failFor.clear();
  await clock.advance(1000);
  t.same(applied.slice(2), ['route 10.244.2.0/24 via 192.168.77.12 table 2', 'check 10.244.2.0/24', 'route 10.244.3.0/24 via 192.168.77.13 table 3', 'check 10.244.3.0/24'], 'retried a second later: the whole plan again, n3 too');
});
