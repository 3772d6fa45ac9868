import t from 'tap';
import { execFileSync } from 'node:child_process';
import { makeScratchNetns, rootNetFingerprint } from '../netns/scratch-netns.js';
import { openNetlink } from './netlink.js';
import { netlinkContract } from './netlink.contract.js';

const rootBefore = rootNetFingerprint();
t.teardown(() => {
  if (rootNetFingerprint() !== rootBefore) throw new Error('the root namespace links or routes changed during the test');
});

let envCount = 0;
netlinkContract(t, async (t) => {
  const n = ++envCount;
  const nodeNs = makeScratchNetns(t, `cn${n}`);
  const podNs = makeScratchNetns(t, `cp${n}`);
  const node = openNetlink(nodeNs.path);
  const pod = openNetlink(podNs.path);
  t.teardown(() => { node.close(); pod.close(); });
  return { node, pod, podNetns: podNs.path };
});

t.test('two pods on one bridge ping each other and the gateway; hairpin in sysfs', async (t) => {
  const nodeNs = makeScratchNetns(t, 'node');
  const pods = [makeScratchNetns(t, 'pa'), makeScratchNetns(t, 'pb')];
  const node = openNetlink(nodeNs.path);
  t.teardown(() => node.close());

  await node.ensureBridge('cbr0', { mtu: 1450 });
  await node.addAddress('cbr0', '10.244.1.1/24');
  for (const [i, p] of pods.entries()) {
    const host = `veth${i}`;
    await node.createVeth({ name: host, peerName: 'eth0', peerNetns: p.path, mtu: 1450 });
    await node.setMaster(host, 'cbr0');
    await node.setHairpin(host, true);
    await node.setUp(host);
    const pod = openNetlink(p.path);
    try {
      await pod.setUp('lo');
      await pod.addAddress('eth0', `10.244.1.${10 + i}/24`);
      await pod.setUp('eth0');
      await pod.addRoute({ dst: 'default', gw: '10.244.1.1' });
    } finally {
      pod.close();
    }
    t.equal(nodeNs.exec(['cat', `/sys/class/net/${host}/brport/hairpin_mode`]).trim(), '1', `${host} hairpin in sysfs`);
  }
  const [pa, pb] = pods as [typeof pods[0], typeof pods[0]];
  const ipJson = JSON.parse(pa.exec(['ip', '-j', '-d', 'link', 'show', 'eth0'])) as { mtu: number; operstate: string }[];
  t.equal(ipJson[0]?.mtu, 1450, 'pod eth0 mtu as ip sees it');
  const routeJson = JSON.parse(pa.exec(['ip', '-j', 'route', 'show', 'default'])) as { gateway?: string; dev?: string }[];
  t.same(routeJson.map((r) => [r.gateway, r.dev]), [['10.244.1.1', 'eth0']], 'default route as ip sees it');

  t.equal(pa.tryExec(['ping', '-c1', '-W1', '10.244.1.11']).code, 0, 'pod a -> pod b');
  t.equal(pb.tryExec(['ping', '-c1', '-W1', '10.244.1.10']).code, 0, 'pod b -> pod a');
  t.equal(pa.tryExec(['ping', '-c1', '-W1', '10.244.1.1']).code, 0, 'pod a -> gateway');
  t.not(pa.tryExec(['ping', '-c1', '-W1', '10.244.1.99']).code, 0, 'a missing address does not answer (the ping check can fail)');

  await node.deleteLink('veth1');
  t.not(pa.tryExec(['ping', '-c1', '-W1', '10.244.1.11']).code, 0, 'pod b unreachable after its veth is deleted');
  t.equal(pb.exec(['ip', '-br', 'link']).includes('eth0'), false, 'and its eth0 went with it');
});

t.test('concurrent calls on one handle are serialised (two dumps at once)', async (t) => {
  const ns = makeScratchNetns(t, 'conc');
  const h = openNetlink(ns.path);
  t.teardown(() => h.close());
  await h.ensureBridge('cbr0');
  const results = await Promise.all([h.listLinks(), h.listRoutes(), h.listAddresses(), h.listLinks(), h.listNeighs()]);
  t.equal(results[0].length, 2);
  t.same(results[0], results[3]);
});

t.test('costs: open in a netns, veth create', async (t) => {
  const nodeNs = makeScratchNetns(t, 'cost');
  const podNs = makeScratchNetns(t, 'costp');
  const n = 50;
  let t0 = performance.now();
  for (let i = 0; i < n; i++) openNetlink(podNs.path).close();
  const openMs = (performance.now() - t0) / n;

  const node = openNetlink(nodeNs.path);
  t.teardown(() => node.close());
  await node.ensureBridge('cbr0');
  t0 = performance.now();
  for (let i = 0; i < n; i++) {
    await node.createVeth({ name: `vc${i}`, peerName: `e${i}`, peerNetns: podNs.path, mtu: 1450 });
  }
  const vethMs = (performance.now() - t0) / n;
  t0 = performance.now();
  for (let i = 0; i < n; i++) {
    await node.setMaster(`vc${i}`, 'cbr0');
    await node.setUp(`vc${i}`);
  }
  const plugMs = (performance.now() - t0) / n;
  t0 = performance.now();
  for (let i = 0; i < n; i++) await node.deleteLink(`vc${i}`);
  const delMs = (performance.now() - t0) / n;
  const count = execFileSync('ip', ['netns', 'exec', podNs.name, 'ip', '-br', 'link'], { encoding: 'utf8' }).trim().split('\n').length;
  t.equal(count, 1, 'only lo left in the pod namespace after deleting the host sides');
  t.comment(`openNetlink(netns)+close: ${openMs.toFixed(3)} ms; createVeth (peer in netns): ${vethMs.toFixed(2)} ms; setMaster+setUp: ${plugMs.toFixed(2)} ms; deleteLink: ${delMs.toFixed(2)} ms (mean of ${n})`);
  t.ok(vethMs < 50, 'veth creation is far below a process spawn');
});
