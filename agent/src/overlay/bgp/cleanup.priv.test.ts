/**
 * The bgp backend's cleanup in a real namespace (root): stopBird's flush and the backend's remove() take the
 * proto bird routes inside the cluster CIDR (what nodenet's BIRD imports) and leave a proto bird route outside
 * it, as a user's own BIRD on a real machine writes them, and a proto bird route wider than the cluster CIDR.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseCidr } from '../../../../lib/net/ip.js';
import type { Runner } from '../../exec/runner.js';
import type { Lab, VNode } from '../../lab/lab.js';
import { openNetlink } from '../../netlink/netlink.js';
import { toNetnsPath } from '../../netns/netns.js';
import { newLab, runner, sh } from '../../testing/lab.js';
import { BGP, bgpBackendType } from './backend.js';
import { birdPaths, stopBird } from './bird.js';

const CLUSTER = parseCidr('10.244.0.0/16').cidr;
const OURS = ['10.244.2.0/24', '10.244.3.0/24'];
const USERS = ['10.0.0.0/8', '198.51.100.0/24'];

let lab: Lab;
let node: VNode;
t.before(async () => {
  lab = await newLab('bgc');
  node = await lab.addNode('n1', {});
});
t.teardown(async () => { await lab?.destroy(); });

const inNs = (n: VNode): Runner => ({ run: (argv, opts) => runner.run(argv, { ...opts, netns: n.nsPath }) });
const birdRoutes = async () => (await sh(['ip', '-n', node.ns, 'route', 'show', 'proto', 'bird'])).stdout.split('\n').map((l) => l.trim().split(' ')[0]!).filter(Boolean).sort();
async function addRoutes(): Promise<void> {
  await sh(['ip', '-n', node.ns, '-batch', '-'], [...OURS, ...USERS].map((d) => `route replace ${d} via 192.168.77.1 dev eth0 proto bird\n`).join(''));
}
/** A BIRD that ran here and is gone (a killed one: its routes left in the kernel). */
function deadBirdRecord(): void {
  const p = birdPaths(node.runDir);
  mkdirSync(p.dir, { recursive: true });
  writeFileSync(p.record, JSON.stringify({ pid: 1, startTime: 'not init\'s' }));
}

t.test('stopBird flushes the cluster CIDR\'s proto bird routes, a user\'s BIRD routes stay', async (t) => {
  await addRoutes();
  deadBirdRecord();
  t.same(await birdRoutes(), [...OURS, ...USERS].sort(), 'set up');
  t.equal(await stopBird(node.runDir, { nodeRunner: inNs(node), clusterCIDR: CLUSTER, graceMs: 0 }), null, 'no BIRD was running');
  t.same(await birdRoutes(), USERS, 'only the routes outside the cluster CIDR are left');
  deadBirdRecord();
  await stopBird(node.runDir, { nodeRunner: inNs(node), graceMs: 0 });
  t.same(await birdRoutes(), USERS, 'no cluster CIDR: nothing flushed');
});

t.test('the backend\'s remove() (agent cleanup, a switch to another backend) and the registry entry\'s', async (t) => {
  const nl = openNetlink(toNetnsPath(node.nsPath));
  t.teardown(() => nl.close());
  await addRoutes();
  deadBirdRecord();
  await bgpBackendType({ runDir: node.runDir, clusterCIDR: CLUSTER, runner: inNs(node) }).remove(nl);
  t.same(await birdRoutes(), USERS, 'bgpBackendType(...).remove: the user\'s BIRD routes stay');
  await addRoutes();
  await BGP.remove(nl, { clusterCIDR: CLUSTER });
  t.same(await birdRoutes(), USERS, 'BGP.remove with the cluster CIDR: the same');
  await addRoutes();
  await BGP.remove(nl);
  t.same(await birdRoutes(), [...OURS, ...USERS].sort(), 'BGP.remove without one: nothing');
});
