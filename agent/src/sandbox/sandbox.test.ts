/**
 * The sandbox on the validating fakes, without root: ADD unwinds completely
 * when any step fails, DEL is idempotent and best-effort, CHECK names the
 * first mismatch, GC keeps exactly the valid attachments.
 */
import t from 'tap';
import { Ipam } from '../ipam/ipam.js';
import { FakeStore } from '../ipam/store.fake.js';
import { silentLogger } from '../../../lib/log/log.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { FakeNetlinkKernel } from '../netlink/netlink.fake.js';
import type { NetlinkOps } from '../netlink/ops.js';
import { FakeSysctl } from '../netns/sysctl.fake.js';
import type { NetnsPath } from '../netns/netns.js';
import type { AttachmentStore, Masquerade, NetOps, SandboxDeps, SandboxIpam } from './deps.js';
import { IpamAdapter } from './ipam-adapter.js';
import { MASQ_TABLE, NftMasquerade } from './masquerade.js';
import { MemoryAttachmentStore } from './record-store.js';
import { hostVethName, Sandbox, type AttachRequest } from './sandbox.js';

/** Counts the mutating calls made through it and fails the n-th (0: never). */
class Failer {
  calls = 0;
  failAt = 0;
  readonly log: string[] = [];
  wrap<T extends object>(name: string, target: T, mutating: readonly string[]): T {
    return new Proxy(target, {
      get: (obj, prop, recv) => {
        const v = Reflect.get(obj, prop, recv) as unknown;
        if (typeof v !== 'function' || !mutating.includes(String(prop))) return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(obj) : v;
        return async (...args: unknown[]) => {
          this.calls++;
          this.log.push(`${name}.${String(prop)}`);
          if (this.calls === this.failAt) throw new Error(`injected failure in ${name}.${String(prop)}`);
          return (v as (...a: unknown[]) => Promise<unknown>).apply(obj, args);
        };
      },
    });
  }
}

const NET_MUT = ['ensureBridge', 'createVeth', 'setMaster', 'setUp', 'setHairpin', 'deleteLink', 'addAddress', 'delAddress', 'addRoute'];

async function setup(opts: { failer?: Failer } = {}) {
  const kernel = new FakeNetlinkKernel();
  const store = new FakeStore();
  const nft = new NftFake();
  const masq = new NftMasquerade({ nft, sets: nft, log: silentLogger() });
  await masq.setup();
  const records = new MemoryAttachmentStore();
  const sysctl = new FakeSysctl();
  const f = opts.failer ?? new Failer();
  const node = f.wrap('node', kernel.open() as NetlinkOps, NET_MUT) as NetOps;
  const deps: SandboxDeps = {
    node,
    openPod: (p: NetnsPath) => f.wrap('pod', kernel.open(p) as NetlinkOps, NET_MUT) as NetOps,
    resolveNetns: (p) => kernel.netnsPath(p),
    ipam: f.wrap('ipam', new IpamAdapter(new Ipam({ storeFor: () => store, networks: () => ['net1'] }), '10.244.1.0/24') as SandboxIpam, ['add', 'del']),
    masq: f.wrap('masq', masq as Masquerade, ['add', 'del']),
    sysctl,
    records: f.wrap('records', records as AttachmentStore, ['put', 'delete']),
    bridgeMac: () => '02:00:00:00:00:01',
    log: silentLogger(),
  };
  return { kernel, store, nft, records, sysctl, f, sandbox: new Sandbox(deps) };
}

const req = (netns: string, over: Partial<AttachRequest> = {}): AttachRequest => ({
  containerId: 'c1', ifName: 'eth0', netns, network: 'net1', bridge: 'cbr0', isGateway: true, isDefaultGateway: true, forceAddress: false,
  ipMasq: true, hairpinMode: true, promiscMode: false, ipam: { type: 'host-local' }, requestedIPs: [], ...over,
});

t.test('ADD: a failure at any step leaves no veth, no pod interface, no IP, no masquerade element and no record', async (t) => {
  // A successful ADD first, to count its mutating steps.
  const ok = await setup();
  const ns0 = ok.kernel.createNetns('p');
  await ok.sandbox.add(req(ns0));
  const steps = ok.f.calls;
  t.ok(steps >= 10, `a full ADD makes ${steps} changes: ${ok.f.log.join(', ')}`);
  for (let n = 1; n <= steps; n++) {
    const f = new Failer();
    f.failAt = n;
    const s = await setup({ failer: f });
    const ns = s.kernel.createNetns('p');
    await t.rejects(s.sandbox.add(req(ns)), /injected failure/, `step ${n} (${ok.f.log[n - 1]}) fails`);
    const nodeLinks = (await s.kernel.open().listLinks()).map((l) => l.name);
    t.notOk(nodeLinks.includes(hostVethName('c1', 'eth0')), `step ${n}: no host veth`);
    t.equal(await s.kernel.open(ns).getLink('eth0'), null, `step ${n}: no pod interface`);
    t.same(await s.store.listAll(), [], `step ${n}: no IP held`);
    t.equal(s.nft.table('ip', MASQ_TABLE)!.sets.get('masq-pods')!.elements.size, 0, `step ${n}: no masquerade element`);
    t.same(await s.records.list(), [], `step ${n}: no record`);
    // And the same ADD then succeeds: nothing left in its way.
    f.failAt = 0;
    t.match((await s.sandbox.add(req(ns))).ips[0]!.address, /^10\.244\.1\.\d+\/24$/, `step ${n}: the retried ADD succeeds`);
  }
});

t.test('DEL: idempotent; a missing netns, link or record is success; the IP is released', async (t) => {
  const s = await setup();
  const ns = s.kernel.createNetns('p');
  await s.sandbox.add(req(ns));
  const del = { containerId: 'c1', ifName: 'eth0', netns: ns, network: 'net1', ipam: { type: 'host-local' }, ipMasq: true };
  await s.sandbox.del(del);
  await s.sandbox.del(del);
  t.same(await s.store.listAll(), []);
  t.same(await s.records.list(), []);
  t.equal(s.nft.table('ip', MASQ_TABLE)!.sets.get('masq-exempt')!.elements.size, 0);

  const ns2 = s.kernel.createNetns('p2');
  await s.sandbox.add(req(ns2, { containerId: 'c2' }));
  s.kernel.deleteNetns(ns2 as NetnsPath);
  await s.sandbox.del({ ...del, containerId: 'c2', netns: ns2 });
  t.same(await s.store.listAll(), [], 'netns gone: still released');
  t.equal(await s.kernel.open().getLink(hostVethName('c2', 'eth0')), null);

  const ns3 = s.kernel.createNetns('p3');
  await s.sandbox.add(req(ns3, { containerId: 'c3' }));
  await s.sandbox.del({ ...del, containerId: 'c3', netns: '' });
  t.same(await s.store.listAll(), [], 'empty CNI_NETNS (containerd\'s second DEL): released, host veth removed');
  t.equal(await s.kernel.open().getLink(hostVethName('c3', 'eth0')), null);

  await s.sandbox.del({ containerId: 'never', ifName: 'eth0', netns: '', network: '', ipam: undefined, ipMasq: undefined });
  t.pass('DEL of an attachment nobody knows, with no network: success');
});

t.test('CHECK: passes on what ADD made; names the first mismatch', async (t) => {
  const s = await setup();
  const ns = s.kernel.createNetns('p');
  const r = await s.sandbox.add(req(ns));
  await s.sandbox.check(req(ns), r);
  await s.kernel.open(ns).setDown('eth0');
  await t.rejects(s.sandbox.check(req(ns), r), /interface eth0 is down/);
  await s.kernel.open(ns).setUp('eth0');
  await t.rejects(s.sandbox.check(req(ns), { ...r, ips: [{ address: '10.244.1.99/24', interface: 2 }] }), /address 10\.244\.1\.99\/24 is not on eth0/);
  await s.kernel.open().deleteLink(hostVethName('c1', 'eth0'));
  await t.rejects(s.sandbox.check(req(ns), r), /interface eth0 is missing|host interface/);
});

t.test('GC: keeps the valid attachments, removes the rest with their veths and IPs', async (t) => {
  const s = await setup();
  const nss = ['a', 'b', 'c'].map((n) => s.kernel.createNetns(n));
  for (const [i, ns] of nss.entries()) await s.sandbox.add(req(ns, { containerId: `g${i}` }));
  const released = await s.sandbox.gc('net1', { type: 'host-local' }, [{ containerId: 'g1', ifName: 'eth0' }]);
  t.same([...released].sort(), ['10.244.1.2/24', '10.244.1.4/24']);
  t.same((await s.store.listAll()).map((r) => r.id), ['g1']);
  t.same((await s.records.list()).map((r) => r.containerId), ['g1']);
  t.ok(await s.kernel.open().getLink(hostVethName('g1', 'eth0')));
  t.equal(await s.kernel.open().getLink(hostVethName('g0', 'eth0')), null);
  t.same([...s.nft.table('ip', MASQ_TABLE)!.sets.get('masq-pods')!.elements.keys()], ['10.244.1.3']);
});

t.test('the bridge keeps the pinned MAC, and the result reports it', async (t) => {
  const s = await setup();
  const r = await s.sandbox.add(req(s.kernel.createNetns('p')));
  t.same(r.interfaces[0], { name: 'cbr0', mac: '02:00:00:00:00:01' });
  t.equal((await s.kernel.open().getLink('cbr0'))!.mac, '02:00:00:00:00:01');
});

t.test('the pod interface takes the MAC the runtime asked for; random ones otherwise', async (t) => {
  const s = await setup();
  const ns = s.kernel.createNetns('p');
  const r = await s.sandbox.add(req(ns, { mac: '0a:58:0a:f4:01:05' }));
  t.equal(r.interfaces[2]!.mac, '0a:58:0a:f4:01:05', 'reported');
  t.equal((await s.kernel.open(ns).getLink('eth0'))!.mac, '0a:58:0a:f4:01:05', 'and set');
  const ns2 = s.kernel.createNetns('p2');
  const r2 = await s.sandbox.add(req(ns2, { containerId: 'c2' }));
  t.not(r2.interfaces[2]!.mac, '0a:58:0a:f4:01:05');
  t.equal((await s.kernel.open(ns2).getLink('eth0'))!.mac, r2.interfaces[2]!.mac);
});

t.test('gateway address: another address of the bridge in the subnet is an error naming it, or replaced with forceAddress', async (t) => {
  const s = await setup();
  const node = s.kernel.open();
  await node.ensureBridge('cbr0', {});
  await node.addAddress('cbr0', '10.244.1.254/24');
  await node.addAddress('cbr0', '192.168.9.1/24');
  const ns = s.kernel.createNetns('p');
  await t.rejects(s.sandbox.add(req(ns)), { code: 'NN_ERR_INVALID_CONFIG', message: /bridge cbr0 already has address 10\.244\.1\.254\/24.*gateway 10\.244\.1\.1\/24.*forceAddress/ });
  t.same(await s.store.listAll(), [], 'the refused ADD holds no IP');
  t.same((await node.listAddresses('cbr0')).map((a) => a.address).sort(), ['10.244.1.254/24', '192.168.9.1/24'], 'and changed no address');

  const r = await s.sandbox.add(req(ns, { forceAddress: true }));
  t.equal(r.ips[0]!.gateway, '10.244.1.1');
  t.same((await node.listAddresses('cbr0')).map((a) => a.address).sort(), ['10.244.1.1/24', '192.168.9.1/24'], 'forceAddress replaced the overlapping address only');

  // Checked once: later ADDs re-add the gateway (so a removed one comes back) without listing the bridge.
  await node.delAddress('cbr0', '10.244.1.1/24');
  await s.sandbox.add(req(s.kernel.createNetns('p2'), { containerId: 'c2' }));
  t.ok((await node.listAddresses('cbr0')).some((a) => a.address === '10.244.1.1/24'), 'the gateway address is put back');
});
