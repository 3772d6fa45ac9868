/**
 * Pods on one node, for real: the agent in a virtual node namespace, pods added
 * through the bundled nodenet-cni shim exactly as a runtime calls it (env +
 * config on stdin), real packets between real namespaces. Root only.
 */
import t from 'tap';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { newLab, sh } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

type Result = { ips: { address: string; gateway?: string }[]; interfaces: { name: string; mac: string; sandbox?: string }[]; routes: { dst: string; gw?: string }[] };

let lab: Lab;
let node: VNode;

t.before(async () => {
  lab = await newLab('cn');
  node = await lab.addNode('n1', { podCIDR: '10.244.1.0/24' });
  await node.startAgent();
});
t.teardown(async () => { await lab.destroy(); });

const ipOf = (r: unknown) => (r as Result).ips[0]!.address.split('/')[0]!;
const ipamFiles = () => {
  const d = `${node.stateDir}/ipam/nodenet`;
  return existsSync(d) ? readdirSync(d).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : [];
};
async function podNs(name: string) { return lab.addNetns(name); }
async function inPod(ns: string, argv: string[]) { return sh(['ip', 'netns', 'exec', ns, ...argv]).catch((e: Error) => ({ exitCode: 1, stdout: '', stderr: e.message })); }

t.test('ADD gives distinct IPs; pods reach each other and the gateway', async (t) => {
  const a = await podNs('a'), b = await podNs('b');
  const ra = await node.cni('ADD', { containerId: 'ctr-a', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  const rb = await node.cni('ADD', { containerId: 'ctr-b', netns: b.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(ra.exitCode, 0, ra.stdout + ra.stderr);
  t.equal(rb.exitCode, 0, rb.stdout + rb.stderr);
  const res = ra.json as Result & { cniVersion: string };
  t.equal(res.cniVersion, '1.1.0');
  t.equal(res.ips[0]!.gateway, '10.244.1.1');
  t.match(res.ips[0]!.address, /^10\.244\.1\.\d+\/24$/);
  t.same(res.interfaces.map((i) => i.name), ['cbr0', res.interfaces[1]!.name, 'eth0']);
  t.equal(res.interfaces[2]!.sandbox, a.path);
  t.not(ipOf(ra.json), ipOf(rb.json));
  t.ok(res.routes.some((r) => r.dst === '0.0.0.0/0' && r.gw === '10.244.1.1'), 'default route via the gateway');
  t.equal((await inPod(a.name, ['ping', '-c1', '-W2', ipOf(rb.json)])).exitCode, 0, 'a pings b');
  t.equal((await inPod(b.name, ['ping', '-c1', '-W2', '10.244.1.1'])).exitCode, 0, 'b pings the gateway');
  const hair = await node.exec(['cat', `/sys/class/net/${res.interfaces[1]!.name}/brport/hairpin_mode`]);
  t.equal(hair.stdout.trim(), '1', 'hairpin on the bridge port');

  // CHECK against the ADD's result passes, and fails once the pod's address is gone.
  const prevConf = node.cniConfig({ prevResult: ra.json });
  const ok = await node.cni('CHECK', { containerId: 'ctr-a', netns: a.path, ifName: 'eth0' }, prevConf);
  t.equal(ok.exitCode, 0, ok.stdout);
  await sh(['ip', '-n', a.name, 'addr', 'flush', 'dev', 'eth0']);
  const bad = await node.cni('CHECK', { containerId: 'ctr-a', netns: a.path, ifName: 'eth0' }, prevConf);
  t.equal(bad.exitCode, 1);
  t.match(bad.json, { code: 999, msg: /address 10\.244\.1\.\d+\/24 is not on eth0/ });

  // DEL twice succeeds; the IP goes back to the pool.
  for (let i = 0; i < 2; i++) {
    const d = await node.cni('DEL', { containerId: 'ctr-a', netns: a.path, ifName: 'eth0' }, node.cniConfig());
    t.equal(d.exitCode, 0, `DEL #${i + 1}: ${d.stdout}`);
  }
  t.notOk(ipamFiles().includes(ipOf(ra.json)), 'IP of a released');
  t.equal((await sh(['ip', '-n', a.name, '-br', 'link'])).stdout.includes('eth0'), false, 'eth0 gone from the pod');
  const d = await node.cni('DEL', { containerId: 'ctr-b', netns: b.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(d.exitCode, 0);
});

t.test('MTU: pod interface and path MTU follow the config', async (t) => {
  const a = await podNs('ma'), b = await podNs('mb');
  const conf = node.cniConfig({ mtu: 1400 });
  const ra = await node.cni('ADD', { containerId: 'ctr-ma', netns: a.path, ifName: 'eth0' }, conf);
  const rb = await node.cni('ADD', { containerId: 'ctr-mb', netns: b.path, ifName: 'eth0' }, conf);
  t.equal(ra.exitCode + rb.exitCode, 0, ra.stdout + rb.stdout);
  t.match((await sh(['ip', '-n', a.name, 'link', 'show', 'eth0'])).stdout, /mtu 1400/);
  t.equal((await inPod(a.name, ['ping', '-c1', '-W2', '-M', 'do', '-s', '1372', ipOf(rb.json)])).exitCode, 0, '1400-byte DF packet passes');
  t.not((await inPod(a.name, ['ping', '-c1', '-W2', '-M', 'do', '-s', '1373', ipOf(rb.json)])).exitCode, 0, '1401-byte DF packet does not');
  for (const [id, ns] of [['ctr-ma', a], ['ctr-mb', b]] as const) await node.cni('DEL', { containerId: id, netns: ns.path, ifName: 'eth0' }, conf);
});

t.test('DEL after the netns is gone, and with an empty CNI_NETNS, releases the IP', async (t) => {
  const a = await podNs('ga');
  const ra = await node.cni('ADD', { containerId: 'ctr-ga', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(ra.exitCode, 0);
  t.ok(ipamFiles().includes(ipOf(ra.json)));
  await sh(['ip', 'netns', 'del', a.name]);
  const d1 = await node.cni('DEL', { containerId: 'ctr-ga', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(d1.exitCode, 0, d1.stdout);
  t.notOk(ipamFiles().includes(ipOf(ra.json)));

  const b = await podNs('gb');
  const rb = await node.cni('ADD', { containerId: 'ctr-gb', netns: b.path, ifName: 'eth0' }, node.cniConfig());
  const d2 = await node.cni('DEL', { containerId: 'ctr-gb', netns: '', ifName: 'eth0' }, node.cniConfig());
  t.equal(d2.exitCode, 0, d2.stdout);
  t.notOk(ipamFiles().includes(ipOf(rb.json)), 'released with CNI_NETNS empty (containerd\'s second DEL)');
});

t.test('bad input gets its CNI error code and allocates nothing', async (t) => {
  const a = await podNs('bad');
  const before = ipamFiles().length;
  const cases: [string, unknown, number][] = [
    ['unsupported version', { ...node.cniConfig(), cniVersion: '9.9.9' }, 1],
    ['bad mtu', node.cniConfig({ mtu: 'big' }), 7],
    ['bad ipam range', node.cniConfig({ ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.1.0/33' }]] } }), 7],
    ['unsupported field', node.cniConfig({ vlan: 5 }), 2],
  ];
  for (const [what, conf, code] of cases) {
    const r = await node.cni('ADD', { containerId: 'ctr-bad', netns: a.path, ifName: 'eth0' }, conf);
    t.equal(r.exitCode, 1, what);
    t.match(r.json, { code }, `${what}: code ${code} (${r.stdout.trim()})`);
  }
  const nx = await node.cni('ADD', { containerId: 'ctr-bad', netns: '/var/run/netns/nn-does-not-exist', ifName: 'eth0' }, node.cniConfig());
  t.match(nx.json, { code: 3 }, 'missing netns');
  t.equal(ipamFiles().length, before, 'nothing allocated');
  t.equal((await sh(['ip', '-n', a.name, '-br', 'link'])).stdout.includes('eth0'), false, 'no interface left');
});

t.test('100 concurrent ADDs: 100 distinct IPs; 100 DELs empty the pool', async (t) => {
  const n = 100;
  const names = Array.from({ length: n }, (_, i) => `c${i}`);
  await sh(['ip', '-batch', '-'], names.map((x) => `netns add nn-${lab.tag}-${x}`).join('\n') + '\n');
  const paths = names.map((x) => `/var/run/netns/nn-${lab.tag}-${x}`);
  t.teardown(async () => { await sh(['ip', '-batch', '-'], names.map((x) => `netns del nn-${lab.tag}-${x}`).join('\n') + '\n').catch(() => undefined); });
  const adds = await Promise.all(paths.map((p, i) => node.cni('ADD', { containerId: `bulk-${i}`, netns: p, ifName: 'eth0' }, node.cniConfig())));
  const failed = adds.filter((r) => r.exitCode !== 0);
  t.equal(failed.length, 0, failed[0]?.stdout ?? '');
  const ips = adds.map((r) => ipOf(r.json));
  t.equal(new Set(ips).size, n, 'distinct');
  t.equal(ipamFiles().length, n);
  const dels = await Promise.all(paths.map((p, i) => node.cni('DEL', { containerId: `bulk-${i}`, netns: p, ifName: 'eth0' }, node.cniConfig())));
  t.equal(dels.filter((r) => r.exitCode !== 0).length, 0);
  t.equal(ipamFiles().length, 0, 'pool empty');
  const veths = (await node.exec(['ip', '-br', 'link'])).stdout.split('\n').filter((l) => l.startsWith('veth'));
  t.equal(veths.length, 0, 'no host veth left');
});

t.test('agent down: ADD says try again later (11); DEL succeeds and is replayed at start', async (t) => {
  const a = await podNs('dn');
  const ra = await node.cni('ADD', { containerId: 'ctr-dn', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(ra.exitCode, 0);
  await node.stopAgent('SIGTERM');
  const b = await podNs('dn2');
  const rb = await node.cni('ADD', { containerId: 'ctr-dn2', netns: b.path, ifName: 'eth0' }, node.cniConfig());
  t.match(rb.json, { code: 11 });
  const d = await node.cni('DEL', { containerId: 'ctr-dn', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(d.exitCode, 0, 'DEL with the agent down succeeds');
  t.ok(ipamFiles().includes(ipOf(ra.json)), 'not yet released');
  await node.startAgent();
  t.notOk(ipamFiles().includes(ipOf(ra.json)), 'the queued DEL was replayed at start');
  t.equal((await sh(['ip', '-n', a.name, '-br', 'link'])).stdout.includes('eth0'), false);
});

t.test('kill -9 during concurrent ADDs, restart, DELs: no leaked and no duplicate IP', async (t) => {
  const n = 40;
  const names = Array.from({ length: n }, (_, i) => `k${i}`);
  await sh(['ip', '-batch', '-'], names.map((x) => `netns add nn-${lab.tag}-${x}`).join('\n') + '\n');
  const paths = names.map((x) => `/var/run/netns/nn-${lab.tag}-${x}`);
  t.teardown(async () => { await sh(['ip', '-batch', '-'], names.map((x) => `netns del nn-${lab.tag}-${x}`).join('\n') + '\n').catch(() => undefined); });
  const adds = Promise.all(paths.map((p, i) => node.cni('ADD', { containerId: `kill-${i}`, netns: p, ifName: 'eth0' }, node.cniConfig())));
  // Kill once the agent is mid-way: some IPs reserved on disk, most ADDs still in flight.
  for (let i = 0; i < 400 && ipamFiles().length < 8; i++) await sleep(25);
  t.ok(ipamFiles().length > 0, 'the agent was killed with ADDs in progress');
  await node.stopAgent('SIGKILL');
  const results = await adds;
  await node.startAgent();
  const ok = results.map((r, i) => ({ r, i })).filter((x) => x.r.exitCode === 0);
  t.comment(`${ok.length}/${n} ADDs completed before the kill`);
  const okIps = ok.map((x) => ipOf(x.r.json));
  t.equal(new Set(okIps).size, okIps.length, 'no duplicate among successful ADDs');
  // Pods whose ADD succeeded hold their IP on their eth0; a retried ADD of a failed one converges.
  for (const x of results.map((r, i) => ({ r, i })).filter((y) => y.r.exitCode !== 0)) {
    await node.cni('DEL', { containerId: `kill-${x.i}`, netns: paths[x.i]!, ifName: 'eth0' }, node.cniConfig());
    const again = await node.cni('ADD', { containerId: `kill-${x.i}`, netns: paths[x.i]!, ifName: 'eth0' }, node.cniConfig());
    t.equal(again.exitCode, 0, `retried ADD kill-${x.i}: ${again.stdout}`);
    if (again.exitCode === 0) okIps.push(ipOf(again.json));
  }
  t.equal(new Set(okIps).size, n, 'all distinct after retries');
  t.equal(ipamFiles().length, n, 'exactly one IP per pod on disk');
  await Promise.all(paths.map((p, i) => node.cni('DEL', { containerId: `kill-${i}`, netns: p, ifName: 'eth0' }, node.cniConfig())));
  t.equal(ipamFiles().length, 0, 'nothing leaked');
});

t.test('a restarted agent does not disturb running pods: a TCP stream keeps flowing', async (t) => {
  const s = await podNs('ts'), c = await podNs('tc');
  const rs = await node.cni('ADD', { containerId: 'ctr-ts', netns: s.path, ifName: 'eth0' }, node.cniConfig());
  const rc = await node.cni('ADD', { containerId: 'ctr-tc', netns: c.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(rs.exitCode + rc.exitCode, 0);
  const server = spawn('ip', ['netns', 'exec', s.name, 'socat', '-u', 'TCP-LISTEN:9000,reuseaddr', 'STDOUT'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let received = 0;
  server.stdout.on('data', (b: Buffer) => { received += b.length; });
  await waitFor(async () => /:9000\b/.test((await sh(['ip', 'netns', 'exec', s.name, 'ss', '-Hltn'])).stdout), 'the server to listen on :9000');
  // A client that writes a line every 20 ms over one TCP connection.
  const client = spawn('ip', ['netns', 'exec', c.name, 'sh', '-c', `while :; do echo 0123456789; sleep 0.02; done | socat -u STDIN TCP:${ipOf(rs.json)}:9000`], { stdio: 'ignore' });
  t.teardown(() => { client.kill('SIGKILL'); server.kill('SIGKILL'); });
  await waitFor(() => received > 200, 'the stream to flow');
  const before = received;
  t.ok(before > 0, 'stream flowing');
  await node.stopAgent('SIGKILL');
  await node.startAgent();
  await waitFor(() => received > before + 100, 'more bytes after the restart').catch(() => undefined);
  const after = received;
  t.ok(after > before + 100, `stream kept flowing through the restart (${before} → ${after} bytes)`);
  t.equal(client.exitCode, null, 'client connection still open');
  client.kill('SIGKILL'); server.kill('SIGKILL');
  await node.cni('DEL', { containerId: 'ctr-ts', netns: s.path, ifName: 'eth0' }, node.cniConfig());
  await node.cni('DEL', { containerId: 'ctr-tc', netns: c.path, ifName: 'eth0' }, node.cniConfig());
});

t.test('GC releases attachments absent from cni.dev/valid-attachments', async (t) => {
  const a = await podNs('gc1'), b = await podNs('gc2');
  const ra = await node.cni('ADD', { containerId: 'ctr-gc1', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  const rb = await node.cni('ADD', { containerId: 'ctr-gc2', netns: b.path, ifName: 'eth0' }, node.cniConfig());
  const g = await node.cni('GC', {}, node.cniConfig({ 'cni.dev/valid-attachments': [{ containerID: 'ctr-gc1', ifname: 'eth0' }] }));
  t.equal(g.exitCode, 0, g.stdout);
  t.ok(ipamFiles().includes(ipOf(ra.json)), 'valid attachment kept');
  t.notOk(ipamFiles().includes(ipOf(rb.json)), 'stale attachment released');
  t.equal((await sh(['ip', '-n', b.name, '-br', 'link'])).stdout.includes('eth0'), false, 'its interface removed');
  const st = await node.cni('STATUS', {}, node.cniConfig());
  t.equal(st.exitCode, 0, 'STATUS ok');
  await node.cni('DEL', { containerId: 'ctr-gc1', netns: a.path, ifName: 'eth0' }, node.cniConfig());
});

t.test('ipMasq, with real packets: leaving the pod subnet a pod appears as the node; inside it, and without ipMasq, it keeps its address', async (t) => {
  // A host outside the cluster, on the underlay, that records the source address of every datagram it receives.
  const ext = await lab.addUnderlayHost('mqx', '192.168.77.201/24');
  const seen = `${lab.runRoot}/mqx-seen.txt`;
  const listener = spawn('ip', ['netns', 'exec', ext.name, process.execPath, '-e',
    `const fs=require('fs');require('dgram').createSocket('udp4').on('message',(m,r)=>fs.appendFileSync(${JSON.stringify(seen)},m+' '+r.address+'\\n')).bind(9999)`], { stdio: 'ignore' });
  t.teardown(() => { listener.kill('SIGKILL'); });
  const masq = await podNs('mq'), plain = await podNs('mqp'), peer = await podNs('mqc');
  const rm = await node.cni('ADD', { containerId: 'ctr-mq', netns: masq.path, ifName: 'eth0' }, node.cniConfig({ ipMasq: true }));
  const rp = await node.cni('ADD', { containerId: 'ctr-mqp', netns: plain.path, ifName: 'eth0' }, node.cniConfig());
  const rc = await node.cni('ADD', { containerId: 'ctr-mqc', netns: peer.path, ifName: 'eth0' }, node.cniConfig({ ipMasq: true }));
  for (const r of [rm, rp, rc]) t.equal(r.exitCode, 0, r.stdout);
  const send = (ns: string, to: string, port: number, text: string) =>
    inPod(ns, [process.execPath, '-e', `const s=require('dgram').createSocket('udp4');s.send(${JSON.stringify(text)},${port},${JSON.stringify(to)},()=>s.close())`]);
  const sources = (): Map<string, string> => {
    const out = new Map<string, string>();
    for (const line of (existsSync(seen) ? readFileSync(seen, 'utf8') : '').split('\n').filter(Boolean)) {
      const [what, from] = line.split(' ');
      out.set(what!, from!);
    }
    return out;
  };
  for (let i = 0; i < 50 && sources().size < 2; i++) {
    await send(masq.name, '192.168.77.201', 9999, 'masq');
    await send(plain.name, '192.168.77.201', 9999, 'plain');
    await sleep(100);
  }
  t.equal(sources().get('masq'), '192.168.77.11', 'the ipMasq pod leaves the cluster as the node (192.168.77.11)');
  t.equal(sources().get('plain'), ipOf(rp.json), 'the pod without ipMasq keeps its own address');

  // Pod to pod in the subnet: never masqueraded.
  const podSeen = `${lab.runRoot}/mqc-seen.txt`;
  const podListener = spawn('ip', ['netns', 'exec', peer.name, process.execPath, '-e',
    `require('dgram').createSocket('udp4').on('message',(m,r)=>require('fs').appendFileSync(${JSON.stringify(podSeen)},r.address+'\\n')).bind(9998)`], { stdio: 'ignore' });
  t.teardown(() => { podListener.kill('SIGKILL'); });
  for (let i = 0; i < 50 && !existsSync(podSeen); i++) {
    await send(masq.name, ipOf(rc.json), 9998, 'to-peer');
    await sleep(100);
  }
  t.equal(readFileSync(podSeen, 'utf8').split('\n')[0], ipOf(rm.json), 'pod-to-pod inside the subnet keeps the source');

  const set = async (name: string) => (await node.exec(['nft', 'list', 'set', 'ip', 'nodenet-cni', name])).stdout;
  t.match(await set('masq-pods'), new RegExp(`elements = \\{ [^}]*${ipOf(rm.json).replace(/\./g, '\\.')}`));
  t.equal((await node.cni('DEL', { containerId: 'ctr-mq', netns: masq.path, ifName: 'eth0' }, node.cniConfig({ ipMasq: true }))).exitCode, 0);
  t.notMatch(await set('masq-pods'), new RegExp(ipOf(rm.json).replace(/\./g, '\\.')), 'DEL removed the pod from the set');
  t.notMatch(await set('masq-exempt'), new RegExp(`${ipOf(rm.json).replace(/\./g, '\\.')} \\.`));
  await node.cni('DEL', { containerId: 'ctr-mqp', netns: plain.path, ifName: 'eth0' }, node.cniConfig());
  await node.cni('DEL', { containerId: 'ctr-mqc', netns: peer.path, ifName: 'eth0' }, node.cniConfig({ ipMasq: true }));
});

t.test('the gateway MAC is pinned: deleting the pod whose veth had the lowest MAC costs the others no ping', async (t) => {
  const names = ['gwa', 'gwb', 'gwc'];
  const pods = await Promise.all(names.map((n) => podNs(n)));
  const results: Awaited<ReturnType<VNode['cni']>>[] = [];
  for (const [i, p] of pods.entries()) results.push(await node.cni('ADD', { containerId: `ctr-${names[i]}`, netns: p.path, ifName: 'eth0' }, node.cniConfig()));
  const bridgeMac = (await node.exec(['cat', '/sys/class/net/cbr0/address'])).stdout.trim();
  for (const r of results) t.equal((r.json as Result).interfaces[0]!.mac, bridgeMac, 'the ADD result reports the bridge\'s real MAC');
  t.not(bridgeMac, '00:00:00:00:00:00');
  const hostMac = async (r: typeof results[number]) => (await node.exec(['cat', `/sys/class/net/${(r.json as Result).interfaces[1]!.name}/address`])).stdout.trim();
  const macs = await Promise.all(results.map(hostMac));
  const lowest = macs.indexOf([...macs].sort()[0]!);
  // The survivors learn the gateway's MAC now; after the DEL they must keep reaching it with that entry.
  const survivors = pods.filter((_p, i) => i !== lowest);
  for (const p of survivors) t.equal((await inPod(p.name, ['ping', '-c1', '-W2', '10.244.1.1'])).exitCode, 0);
  t.equal((await node.cni('DEL', { containerId: `ctr-${names[lowest]}`, netns: pods[lowest]!.path, ifName: 'eth0' }, node.cniConfig())).exitCode, 0);
  t.equal((await node.exec(['cat', '/sys/class/net/cbr0/address'])).stdout.trim(), bridgeMac, 'the bridge kept its MAC');
  for (const p of survivors) {
    const ping = await inPod(p.name, ['ping', '-c', '10', '-i', '0.2', '-W', '1', '10.244.1.1']);
    t.match(ping.stdout, / 0% packet loss/, `${p.name}: no loss to the gateway after the DEL`);
  }
  for (const [i, p] of pods.entries()) if (i !== lowest) await node.cni('DEL', { containerId: `ctr-${names[i]}`, netns: p.path, ifName: 'eth0' }, node.cniConfig());
});

t.test('ipam.type other than host-local is refused with code 7 naming ipam.type; nothing is allocated', async (t) => {
  const a = await podNs('dh');
  const before = ipamFiles().length;
  const r = await node.cni('ADD', { containerId: 'ctr-dh', netns: a.path, ifName: 'eth0' }, node.cniConfig({ ipam: { type: 'dhcp' } }));
  t.equal(r.exitCode, 1);
  t.match(r.json, { code: 7, msg: /^ipam\.type: "dhcp" is not supported/ });
  t.equal(ipamFiles().length, before);
  t.equal((await sh(['ip', '-n', a.name, '-br', 'link'])).stdout.includes('eth0'), false, 'no interface left');
});

t.test('a DEL whose config no longer parses, with no attachment record, succeeds and releases the IP', async (t) => {
  const a = await podNs('np');
  const r = await node.cni('ADD', { containerId: 'ctr-np', netns: a.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(r.exitCode, 0);
  const ip = ipOf(r.json);
  t.ok(ipamFiles().includes(ip));
  // The record is gone (state from before records existed, a wiped dir), and the runtime's config is one the agent now rejects.
  rmSync(`${node.stateDir}/attachments`, { recursive: true, force: true });
  const d = await node.cni('DEL', { containerId: 'ctr-np', netns: a.path, ifName: 'eth0' }, { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', agentSocket: node.socket, mtu: 'huge' });
  t.equal(d.exitCode, 0, d.stdout);
  t.notOk(ipamFiles().includes(ip), 'the IP is free');
  t.equal((await sh(['ip', '-n', a.name, '-br', 'link'])).stdout.includes('eth0'), false, 'the interface is gone');
});

t.test('DELs fired across an agent restart are all replayed with the agent up: every IP released', async (t) => {
  const n = 30;
  const pods = await Promise.all(Array.from({ length: n }, (_x, i) => podNs(`rr${i}`)));
  for (const [i, p] of pods.entries()) t.equal((await node.cni('ADD', { containerId: `ctr-rr${i}`, netns: p.path, ifName: 'eth0' }, node.cniConfig())).exitCode, 0);
  const ips = new Set(ipamFiles());
  await node.stopAgent('SIGTERM');
  // DELs start while the agent is down and go on while it comes up: some are queued before its start-up replay,
  // some after it (the bug: those waited for the next restart), some reach it directly.
  const dels = pods.map(async (p, i) => {
    await sleep(i * 15);
    return node.cni('DEL', { containerId: `ctr-rr${i}`, netns: p.path, ifName: 'eth0' }, node.cniConfig({ agentTimeoutMs: 2000 }));
  });
  await sleep(60);
  const started = node.startAgent();
  const results = await Promise.all(dels);
  await started;
  for (const r of results) t.equal(r.exitCode, 0, r.stderr.slice(-300));
  const queued = results.filter((r) => /DEL queued/.test(r.stderr)).length;
  t.comment(`${queued} of ${n} DELs were queued by the shim, the rest reached the agent`);
  const held = () => ipamFiles().filter((ip) => ips.has(ip)).length;
  for (let i = 0; i < 100 && held() > 0; i++) await sleep(50);
  t.equal(held(), 0, 'every IP released, with the agent running (no further restart)');
  t.same(readdirSync(`${node.runDir}/del-queue`).filter((f) => f.endsWith('.json')), [], 'the queue is empty');
});
