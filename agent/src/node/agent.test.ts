/**
 * The whole agent (CNI server, sandbox, IPAM, masquerade, DEL replay,
 * Service proxy) on the validating fakes, without root: the kernel is
 * FakeNetlinkKernel, the firewall FakeIptables and NftFake, time a
 * FakeClock. Calls arrive over the real gRPC server on a unix socket in a
 * temp dir, sent by the shim's own client, as a runtime's would.
 */
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callAgent, writeDeletionRecord } from '../testing/cni-client.js';
import { deletionQueueDir, deletionRecordOf, type CniCallRequest, type CniCommand } from '../../../proto/cni/v1/contract.js';
import { startCniServer } from '../cniserver/server.js';
import { parseAgentConfig } from '../config/config.js';
import { Ipam } from '../ipam/ipam.js';
import { FakeStore } from '../ipam/store.fake.js';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeConntrack } from '../netfilter/conntrack/conntrack.fake.js';
import { FakeIptables } from '../netfilter/iptables/iptables.fake.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { FakeNetlinkKernel } from '../netlink/netlink.fake.js';
import { FakeSysctl } from '../netns/sysctl.fake.js';
import { IptablesBackend } from '../proxy/iptables/proxier.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { IpamAdapter } from '../sandbox/ipam-adapter.js';
import { MASQ_TABLE, NftMasquerade } from '../sandbox/masquerade.js';
import { MemoryAttachmentStore } from '../sandbox/record-store.js';
import { hostVethName } from '../sandbox/sandbox.js';
import { makeEndpointSlice, makeService } from '../testing/addresses.js';
import { ManifestSource } from '../watch/manifest-source.js';
import { Agent } from './agent.js';
import { bridgeMacFor } from './compose.js';
import { readProxyStatus } from './proxy-status.js';

interface World {
  agent: Agent;
  kernel: FakeNetlinkKernel;
  nft: NftFake;
  iptables: FakeIptables;
  sysctl: FakeSysctl;
  clock: FakeClock;
  dir: string;
  socket: string;
  call(cmd: CniCommand, req: Partial<CniCallRequest> & { conf?: Record<string, unknown> }): ReturnType<typeof callAgent>;
}

const CONF = { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0', isGateway: true, isDefaultGateway: true, ipam: { type: 'host-local' } };

async function world(t: Test, opts: { proxy?: boolean; store?: FakeStore } = {}): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'nn-agent-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  const config = parseAgentConfig({
    nodeName: 'node1', podCIDR: '10.244.1.0/24', clusterCIDR: '10.244.0.0/16', stateDir: `${dir}/state`, runDir: `${dir}/run`,
    proxyMode: opts.proxy ? 'iptables' : 'none', manifestsDir: `${dir}/manifests`, proxyMinSyncMs: 0,
  });
  const kernel = new FakeNetlinkKernel();
  const nft = new NftFake();
  const iptables = new FakeIptables();
  const sysctl = new FakeSysctl();
  const clock = new FakeClock();
  const log = silentLogger();
  const store = opts.store ?? new FakeStore();
  const nodeConfig = { nodeName: 'node1', nodeIPs: ['192.168.77.11' as never], clusterCIDR: config.clusterCIDR, prefix: 'KUBE', masqueradeBit: 14 };
  const masquerade = new NftMasquerade({ nft, sets: nft, log });
  const agent = new Agent({
    config,
    log,
    clock,
    sandbox: {
      node: kernel.open(),
      openPod: (p) => kernel.open(p),
      resolveNetns: (p) => kernel.netnsPath(p),
      ipam: new IpamAdapter(new Ipam({ storeFor: () => store, networks: () => ['nodenet'] }), config.podCIDR),
      masq: masquerade,
      sysctl,
      records: new MemoryAttachmentStore(),
      bridgeMac: (b) => bridgeMacFor('node1', b),
    },
    masquerade,
    serveCni: startCniServer,
    watchQueue: () => ({ close() {} }),
    proxy: opts.proxy
      ? {
          mode: 'iptables',
          nodeConfig,
          backend: new IptablesBackend({ iptables, nodeConfig, log }),
          conntrack: new FakeConntrack(),
          sysctl,
          removeOtherMode: async () => false,
          startSource: async (h) => {
            const src = new ManifestSource({ dir: `${dir}/manifests`, services: h.services, slices: h.slices, log, onScan: h.onScan, clock });
            await src.start();
            return src;
          },
          statusFile: `${dir}/run/proxy-status.json`,
          minSyncIntervalMs: 0,
        }
      : null,
  });
  // The directory goes after the agent has stopped: stopping writes the proxy's status file into it.
  try {
    await agent.start();
  } catch (e) {
    await agent.stop();
    removeDir();
    throw e;
  }
  t.teardown(async () => {
    await agent.stop();
    removeDir();
  });
  const socket = config.cniSocket;
  return {
    agent, kernel, nft, iptables, sysctl, clock, dir, socket,
    call: (cmd, r) =>
      callAgent(socket, cmd, {
        containerId: r.containerId ?? '', netns: r.netns ?? '', ifName: r.ifName ?? '', args: r.args ?? '', path: '/opt/cni/bin',
        config: new TextEncoder().encode(JSON.stringify(r.conf ?? CONF)),
      }, 5000),
  };
}

const result = (r: Awaited<ReturnType<typeof callAgent>>): { interfaces: { name: string; mac: string }[]; ips: { address: string; gateway: string }[] } => {
  if (r.kind !== 'ok') throw new Error(`not ok: ${JSON.stringify(r)}`);
  return JSON.parse(new TextDecoder().decode(r.result)) as never;
};

t.test('ADD over gRPC makes the veth, address, routes; the bridge MAC is the pinned one and reported; DEL undoes it', async (t) => {
  const w = await world(t);
  t.ok(existsSync(`${w.dir}/run/agent.ready`), 'ready marker');
  const ns = w.kernel.createNetns('pod1');
  const add = result(await w.call('ADD', { containerId: 'c1', netns: ns, ifName: 'eth0' }));
  t.equal(add.ips[0]!.address, '10.244.1.2/24');
  t.equal(add.interfaces[0]!.name, 'cbr0');
  t.equal(add.interfaces[0]!.mac, bridgeMacFor('node1', 'cbr0'), 'the result reports the bridge\'s real, pinned MAC');
  t.not(add.interfaces[0]!.mac, '00:00:00:00:00:00');
  const pod = w.kernel.open(ns);
  t.ok(await pod.getLink('eth0'), 'eth0 in the pod');
  t.same((await pod.listAddresses('eth0')).map((a) => a.address), ['10.244.1.2/24']);
  t.ok((await pod.listRoutes()).some((r) => r.dst === 'default' || r.dst === '0.0.0.0/0'), 'default route');
  t.equal(await w.sysctl.get('net.ipv4.ip_forward'), '1', 'isGateway turned forwarding on (through the Sysctl, not a spawn)');
  t.equal((await w.call('DEL', { containerId: 'c1', netns: ns, ifName: 'eth0' })).kind, 'ok');
  t.equal(await pod.getLink('eth0'), null);
  t.equal((await w.call('DEL', { containerId: 'c1', netns: ns, ifName: 'eth0' })).kind, 'ok', 'DEL twice');
});

t.test('CNI_ARGS MAC= sets the pod interface MAC; a malformed one is code 7 naming CNI_ARGS and allocates nothing', async (t) => {
  const w = await world(t);
  const ns = w.kernel.createNetns('pod1');
  const add = result(await w.call('ADD', { containerId: 'c1', netns: ns, ifName: 'eth0', args: 'IgnoreUnknown=1;MAC=0a:58:0a:f4:01:09' }));
  t.equal(add.interfaces[2]!.mac, '0a:58:0a:f4:01:09');
  t.equal((await w.kernel.open(ns).getLink('eth0'))!.mac, '0a:58:0a:f4:01:09');
  const ns2 = w.kernel.createNetns('pod2');
  const bad = await w.call('ADD', { containerId: 'c2', netns: ns2, ifName: 'eth0', args: 'MAC=ff:ff:ff:ff:ff:ff' });
  t.match(bad, { kind: 'cni-error', code: 7, msg: /^CNI_ARGS MAC: not a unicast/ });
  t.equal(await w.kernel.open(ns2).getLink('eth0'), null, 'no interface');
});

t.test('ipMasq: one table set up at start, two set elements per pod, no rule per pod; DEL removes them', async (t) => {
  const w = await world(t);
  const scripts = w.nft.applied.length;
  t.equal(scripts, 1, 'the table was written once, at start');
  const ns = w.kernel.createNetns('pod1');
  result(await w.call('ADD', { containerId: 'c1', netns: ns, ifName: 'eth0', conf: { ...CONF, ipMasq: true } }));
  const table = w.nft.table('ip', MASQ_TABLE)!;
  t.same([...table.sets.get('masq-pods')!.elements.keys()], ['10.244.1.2']);
  t.same([...table.sets.get('masq-exempt')!.elements.keys()], ['10.244.1.2 . 10.244.1.0/24']);
  t.equal(w.nft.applied.length, scripts, 'no nft script on the ADD path');
  t.equal(table.chains.get('postrouting')!.rules.length, 2, 'the rules do not grow with the pods');
  t.equal((await w.call('DEL', { containerId: 'c1', netns: ns, ifName: 'eth0', conf: { ...CONF, ipMasq: true } })).kind, 'ok');
  const after = w.nft.table('ip', MASQ_TABLE)!;
  t.equal(after.sets.get('masq-pods')!.elements.size, 0);
  t.equal(after.sets.get('masq-exempt')!.elements.size, 0);
});

t.test('bug: the gateway MAC must not change when the pod whose veth had the lowest MAC goes', async (t) => {
  const w = await world(t);
  const ids = ['c0', 'c1', 'c2'];
  const nss = new Map(ids.map((id) => [id, w.kernel.createNetns(id)]));
  for (const id of ids) result(await w.call('ADD', { containerId: id, netns: nss.get(id)!, ifName: 'eth0' }));
  const node = w.kernel.open();
  const before = (await node.getLink('cbr0'))!.mac;
  t.equal(before, bridgeMacFor('node1', 'cbr0'));
  // The kernel would have given an unpinned bridge the lowest port MAC: delete that pod first.
  const macOf = new Map(await Promise.all(ids.map(async (id) => [id, (await node.getLink(hostVethName(id, 'eth0')))!.mac] as const)));
  const order = [...ids].sort((a, b) => macOf.get(a)!.localeCompare(macOf.get(b)!));
  for (const id of order) {
    await w.call('DEL', { containerId: id, netns: nss.get(id)!, ifName: 'eth0' });
    t.equal((await node.getLink('cbr0'))!.mac, before, `after DEL of ${id}, the bridge still has ${before}`);
  }
});

t.test('bug: a DEL queued after the start-up replay is replayed while the agent runs, and its IP is released', async (t) => {
  const store = new FakeStore();
  const w = await world(t, { store });
  const ns = w.kernel.createNetns('pod1');
  result(await w.call('ADD', { containerId: 'late', netns: ns, ifName: 'eth0' }));
  t.equal((await store.listAll()).length, 1);
  const req: CniCallRequest = { containerId: 'late', netns: ns, ifName: 'eth0', args: '', path: '', config: new TextEncoder().encode(JSON.stringify(CONF)) };
  writeDeletionRecord(deletionQueueDir(w.socket), deletionRecordOf(req, new Date()));
  await w.clock.advance(10_000); // the periodic rescan (the watch is a no-op in this test)
  for (let i = 0; i < 100 && (await store.listAll()).length; i++) await new Promise((r) => setTimeout(r, 10));
  t.same(await store.listAll(), [], 'the IP was released with the agent running');
  t.same(readdirSync(deletionQueueDir(w.socket)), [], 'the record is gone');
});

t.test('bug: a DEL whose config does not parse and that has no record still succeeds and releases by attachment', async (t) => {
  const store = new FakeStore();
  const w = await world(t, { store });
  const ns = w.kernel.createNetns('pod1');
  result(await w.call('ADD', { containerId: 'c1', netns: ns, ifName: 'eth0' }));
  // The record is lost (a crash of an older version, a wiped state dir), and the config is one this agent rejects.
  await (w.agent as unknown as { deps: { sandbox: { records: MemoryAttachmentStore } } }).deps.sandbox.records.delete('c1', 'eth0');
  const bad = { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', mtu: 'huge' };
  t.equal((await w.call('DEL', { containerId: 'c1', netns: ns, ifName: 'eth0', conf: bad })).kind, 'ok', 'DEL succeeds');
  t.same(await store.listAll(), [], 'IP released');
  t.equal(await w.kernel.open(ns).getLink('eth0'), null, 'veth gone');
  const noName = { cniVersion: '1.1.0', type: 'nodenet-cni', name: 'bad name!' };
  result(await w.call('ADD', { containerId: 'c2', netns: w.kernel.createNetns('pod2'), ifName: 'eth0' }));
  await (w.agent as unknown as { deps: { sandbox: { records: MemoryAttachmentStore } } }).deps.sandbox.records.delete('c2', 'eth0');
  t.equal((await w.call('DEL', { containerId: 'c2', netns: '', ifName: 'eth0', conf: noName })).kind, 'ok', 'even without a usable network name');
  t.same(await store.listAll(), [], 'found by container ID and interface across the stores');
});

t.test('bug: ipam.type other than host-local is refused with code 7 naming ipam.type, and nothing is allocated', async (t) => {
  const store = new FakeStore();
  const w = await world(t, { store });
  const r = await w.call('ADD', { containerId: 'c1', netns: w.kernel.createNetns('p'), ifName: 'eth0', conf: { ...CONF, ipam: { type: 'dhcp' } } });
  t.match(r, { kind: 'cni-error', code: 7, msg: /^ipam\.type: "dhcp" is not supported/ });
  t.same(await store.listAll(), []);
  t.equal(await w.kernel.open().getLink('vethc1'), null);
});

t.test('the proxy in the agent: sysctls through the Sysctl, a manifest becomes rules after a sync', async (t) => {
  const w = await world(t, { proxy: true });
  t.equal(await w.sysctl.get('net.ipv4.conf.all.send_redirects'), '0');
  t.equal(await w.sysctl.get('net.bridge.bridge-nf-call-iptables'), '1');
  mkdirSync(`${w.dir}/manifests`, { recursive: true });
  writeFileSync(`${w.dir}/manifests/web.json`, JSON.stringify([
    makeService({ name: 'web', clusterIP: '10.96.0.10', ports: [{ port: 80, targetPort: 8080 }] }),
    makeEndpointSlice({ service: 'web', ports: [{ port: 8080 }], endpoints: [{ ip: '10.244.1.5', nodeName: 'node1' }] }),
  ]));
  for (let i = 0; i < 50 && !readProxyStatus(`${w.dir}/run/proxy-status.json`)?.applied['default/web']; i++) await w.clock.advance(2000);
  t.same(readProxyStatus(`${w.dir}/run/proxy-status.json`)?.applied['default/web'], ['10.244.1.5:8080']);
  t.match(await w.iptables.save('nat'), /-A KUBE-SERVICES -m comment --comment "default\/web cluster IP" -m tcp -p tcp -d 10\.96\.0\.10 --dport 80 -j KUBE-SVC-/);
});

/** An agent whose registration and overlay are recording fakes; the pod CIDR comes from the "Node". */
function listedAgent(t: Test, opts: { failCni?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'nn-agent-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = parseAgentConfig({ nodeName: 'node1', clusterCIDR: '10.244.0.0/16', stateDir: `${dir}/state`, runDir: `${dir}/run`, proxyMode: 'none', manifestsDir: `${dir}/manifests` });
  const kernel = new FakeNetlinkKernel();
  const nft = new NftFake();
  const log = silentLogger();
  const masquerade = new NftMasquerade({ nft, sets: nft, log });
  const calls: string[] = [];
  let overlayPodCIDR: string | null = null;
  const agent = new Agent({
    config, log, clock: new FakeClock(),
    sandbox: (c) => ({
      node: kernel.open(), openPod: (p) => kernel.open(p), resolveNetns: (p) => kernel.netnsPath(p),
      ipam: new IpamAdapter(new Ipam({ storeFor: () => new FakeStore(), networks: () => ['nodenet'] }), c.podCIDR),
      masq: masquerade, sysctl: new FakeSysctl(), records: new MemoryAttachmentStore(), bridgeMac: (b) => bridgeMacFor('node1', b),
    }),
    masquerade,
    serveCni: async (o) => {
      if (opts.failCni) throw new Error('socket taken');
      calls.push('cni start');
      const s = await startCniServer(o);
      return { ...s, close: async () => { calls.push('cni stop'); await s.close(); } };
    },
    watchQueue: () => ({ close() {} }),
    proxy: null,
    registration: {
      start: async () => void calls.push('registration start'),
      podCIDR: async () => '10.244.7.0/24',
      stop: () => void calls.push('registration stop'),
    },
    overlay: (c) => {
      overlayPodCIDR = c.podCIDR;
      return {
        start: async () => void calls.push('overlay start'),
        stop: async () => void calls.push('overlay stop'),
        mtu: 1400,
        rejectionCounts: () => [],
        foreignNodes: () => [],
      };
    },
    close: () => void calls.push('resources closed'),
  });
  return { agent, kernel, config, calls, overlayPodCIDR: () => overlayPodCIDR };
}

t.test('one list of components: the Node\'s pod CIDR reaches the overlay and IPAM, the overlay\'s MTU the pods; stop in reverse', async (t) => {
  const w = listedAgent(t);
  t.same(w.agent.componentNames, ['resources', 'dirs', 'node registration', 'overlay', 'ipMasq', 'CNI server', 'DEL replay', 'ready', 'ready marker']);
  await w.agent.start();
  t.equal(w.overlayPodCIDR(), '10.244.7.0/24', 'the overlay is made after the registration, with the Node\'s pod CIDR');
  const ns = w.kernel.createNetns('pod1');
  const r = await callAgent(w.config.cniSocket, 'ADD', {
    containerId: 'c1', netns: w.kernel.netnsPath(ns), ifName: 'eth0', args: '', path: '/opt/cni/bin', config: new TextEncoder().encode(JSON.stringify(CONF)),
  }, 5000);
  const res = result(r);
  t.match(res.ips[0]!.address, /^10\.244\.7\.\d+\/24$/, 'IPAM on the Node\'s pod CIDR');
  t.equal((await w.kernel.open(ns).getLink('eth0'))!.mtu, 1400, 'the pod\'s MTU is the overlay backend\'s');
  t.ok(existsSync(`${w.config.runDir}/agent.ready`));
  await w.agent.stop();
  t.same(w.calls, ['registration start', 'overlay start', 'cni start', 'cni stop', 'overlay stop', 'registration stop', 'resources closed']);
  t.notOk(existsSync(`${w.config.runDir}/agent.ready`), 'the ready marker goes first');
});

t.test('a failed start stops, in reverse, what had started, and closes what compose opened', async (t) => {
  const w = listedAgent(t, { failCni: true });
  await t.rejects(w.agent.start(), /socket taken/);
  t.same(w.calls, ['registration start', 'overlay start', 'overlay stop', 'registration stop', 'resources closed']);
  t.notOk(w.agent.isReady);
  await w.agent.stop();
  t.equal(w.calls.filter((c) => c === 'resources closed').length, 1, 'a stop after the failed start closes nothing twice');
});
