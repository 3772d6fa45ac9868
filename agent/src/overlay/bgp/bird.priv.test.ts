/**
 * The BIRD process manager with Debian's bird2 (root): two lab namespaces on one underlay, a BIRD each started
 * through Bird.ensure() (in the namespace, as the agent is), the session Established and the routes proto bird,
 * a config change re-read (configure) without a restart, a second manager adopting the running BIRD (an agent
 * restart), a killed BIRD started again with graceful restart recovery (the peer keeps the routes), stopBird's
 * clean shutdown taking the routes away on both sides.
 */
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { silentLogger } from '../../../../lib/log/log.js';
import type { Runner } from '../../exec/runner.js';
import type { Lab, VNode } from '../../lab/lab.js';
import { newLab, runner, sh } from '../../testing/lab.js';
import { waitFor } from '../../testing/wait.js';
import { isAlive } from '../../netns/proc.js';
import { Bird, stopBird } from './bird.js';
import { birdConfig, type BgpNode } from './config.js';

let lab: Lab;
const nodes: VNode[] = [];
t.before(async () => {
  lab = await newLab('bird');
  for (const n of ['n1', 'n2']) nodes.push(await lab.addNode(n, {}));
});
t.teardown(async () => { for (const n of nodes) await stopBird(n.runDir, { graceMs: 0 }); await lab?.destroy(); });

const ip = (n: VNode) => parseIPv4(n.underlayIP.split('/')[0]!);
const inNs = (n: VNode): Runner => ({ run: (argv, opts) => runner.run(argv, { ...opts, netns: n.nsPath }) });
const conf = (n: VNode, others: readonly VNode[], holdS = 240) => birdConfig({
  nodeName: n.name, routerId: ip(n), asn: 64512, podCIDR: parseCidr(`10.244.${n.index}.0/24`).cidr, clusterCIDR: parseCidr('10.244.0.0/16').cidr,
  routeReflector: false, nodes: others.map((o): BgpNode => ({ node: o.name, ip: ip(o), routeReflector: false })), holdS,
});
const routes = async (n: VNode) => (await sh(['ip', '-n', n.ns, 'route', 'show', 'proto', 'bird'])).stdout.trim();

t.test('start, configure, adopt, restart after a kill, stop', async (t) => {
  const [a, b] = [nodes[0]!, nodes[1]!];
  for (const n of [a, b]) mkdirSync(n.runDir, { recursive: true });
  const ba = new Bird({ runDir: a.runDir, runner: inNs(a), log: silentLogger() });
  const bb = new Bird({ runDir: b.runDir, runner: inNs(b), log: silentLogger() });
  t.equal(await ba.ensure(conf(a, [b])), 'started');
  t.equal(await bb.ensure(conf(b, [a])), 'started');
  await waitFor(async () => (await ba.sessions()).some((s) => s.established), 'a: session to b Established', { timeoutMs: 15_000 });
  await waitFor(async () => (await routes(a)) === `10.244.2.0/24 via ${ip(b)} dev eth0 metric 32`, 'a: b\'s block, proto bird', { timeoutMs: 10_000 });
  t.equal(await routes(b), `10.244.1.0/24 via ${ip(a)} dev eth0 metric 32`, 'b: a\'s block; never its own');
  t.equal(await ba.ensure(conf(a, [b])), 'kept', 'the same text: nothing done');
  const pid = ba.pid!;
  t.equal(await ba.ensure(conf(a, [b], 90)), 'reconfigured');
  t.equal(ba.pid, pid, 'the same BIRD re-read its file');
  const again = new Bird({ runDir: a.runDir, runner: inNs(a), log: silentLogger() });
  t.equal(await again.ensure(conf(a, [b], 90)), 'adopted', 'a new agent adopts the running BIRD');
  t.equal(again.pid, pid);
  // The new hold time restarted the session: wait until the routes flow again before the kill.
  await waitFor(async () => (await routes(b)) !== '' && (await routes(a)) !== '', 'the routes back after the reconfiguration', { timeoutMs: 15_000 });
  // Killed: its kernel routes stay (no clean shutdown); b keeps a's routes (graceful restart); -R takes over.
  process.kill(pid, 'SIGKILL');
  await waitFor(async () => !isAlive(pid), 'the BIRD gone', { timeoutMs: 5_000 });
  t.equal(await routes(b), `10.244.1.0/24 via ${ip(a)} dev eth0 metric 32`, 'b keeps a\'s route while a restarts');
  t.equal(await again.ensure(conf(a, [b], 90)), 'restarted');
  t.not(again.pid, pid);
  t.equal(await routes(a), `10.244.2.0/24 via ${ip(b)} dev eth0 metric 32`, 'a kept b\'s route through its restart');
  await waitFor(async () => (await again.sessions()).some((s) => s.established), 'a: session back', { timeoutMs: 15_000 });
  t.equal(await routes(b), `10.244.1.0/24 via ${ip(a)} dev eth0 metric 32`, 'b still has a\'s route');
  // A clean stop: the peer drops a's block at once, and a's own kernel routes go with it.
  const restarted = again.pid;
  t.equal(await stopBird(a.runDir, { nodeRunner: inNs(a), clusterCIDR: parseCidr('10.244.0.0/16').cidr }), restarted);
  await waitFor(async () => (await routes(b)) === '', 'b drops a\'s block', { timeoutMs: 5_000 });
  t.equal(await routes(a), '', 'a\'s kernel routes gone');
  t.equal(await stopBird(a.runDir, { nodeRunner: inNs(a), clusterCIDR: parseCidr('10.244.0.0/16').cidr }), null, 'idempotent');
});
