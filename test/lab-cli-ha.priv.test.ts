/**
 * `nodenet lab up --etcd-members 3` as a user runs it: the HA control plane, broken and healed with the lab's
 * fault commands, then removed, leaving nothing (its own file since every lab runs the cluster's DNS replicas:
 * beside lab-cli.priv.test.ts's labs it passed tap's 300 s per file).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { readProcesses } from '../agent/src/lab/owner.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { assertGone, dirOf, kubectl, namespacesOf, nodeAgents, nodenet, readyNodes } from './lab-cli-shared.js';

const base = `t${process.pid.toString(36)}`;
const H = `${base}h`;
t.teardown(async () => {
  await nodenet('lab', 'down', '--name', H);
});

t.test('lab up --etcd-members 3: the HA control plane, broken and healed with the lab\'s fault commands, then removed', async (t) => {
  const even = await nodenet('lab', 'up', '--name', H, '--etcd-members', '2');
  t.equal(even.exitCode, 2, 'an even etcd is a usage error');
  t.match(even.stderr, /--etcd-members 2: an etcd cluster has an odd number of members .*two are worse than one/);
  t.same(await namespacesOf(H), [], 'refused before anything is made');
  const up = await nodenet('lab', 'up', '--name', H, '--nodes', '1', '--run-pods', 'false', '--etcd-members', '3', '--api-servers', '2');
  t.equal(up.exitCode, 0, `${up.stdout}${up.stderr}`);
  t.match(up.stdout, /control plane: 3 etcd member\(s\), 2 API server\(s\) behind HAProxy/);
  const kc = `${dirOf(H)}/kubeconfig`;
  t.same(await readyNodes(kc), ['n1']);
  t.same((await namespacesOf(H)).sort(), [`nn-${H}-api1`, `nn-${H}-api2`, `nn-${H}-etcd1`, `nn-${H}-etcd2`, `nn-${H}-etcd3`, `nn-${H}-n1`, `nn-${H}-ul`], 'a namespace per member and per API server');
  const st = await nodenet('lab', 'status', '--name', H);
  t.match(st.stdout, /control plane: etcd members 1 2 3, leader [123]; API servers 1 2 behind HAProxy; kube-controller-manager on API server [12]/);
  const kill = await nodenet('lab', 'kill', '--name', H, 'leader:etcd');
  t.equal(kill.exitCode, 0, kill.stderr);
  const killed = Number(/killed etcd member (\d)/.exec(kill.stdout)?.[1]);
  t.ok(killed >= 1, kill.stdout.trim());
  t.same(await readyNodes(kc), ['n1'], 'kubectl goes on with two members');
  t.match((await nodenet('lab', 'status', '--name', H)).stdout, new RegExp(`etcd members .*${killed} \\(dead\\)`), 'status shows the dead member');
  t.match((await nodenet('lab', 'start', '--name', H, `etcd:${killed}`)).stdout, new RegExp(`started etcd member ${killed}`));
  t.match((await nodenet('lab', 'partition', '--name', H, 'api-server:1')).stdout, /its underlay port a\S+1 is down/);
  await waitFor(async () => (await kubectl(kc, 'get', 'ns', 'default', '-o', 'name')).exitCode === 0, 'kubectl through HAProxy with API server 1 cut off', { timeoutMs: 20_000, intervalMs: 250 });
  t.pass('HAProxy sends kubectl to the other API server');
  t.match((await nodenet('lab', 'heal', '--name', H, 'api-server:1')).stdout, /is up/);
  const bad = await nodenet('lab', 'kill', '--name', H, 'etcd:9');
  t.equal(bad.exitCode, 1);
  t.match(bad.stderr, /etcd:9: this lab has etcd members 1..3/);
  const recorded = readProcesses(dirOf(H));
  t.ok(recorded.some((p) => p.role === 'haproxy') && recorded.some((p) => p.role === 'etcd 1') && recorded.some((p) => p.role === 'api-server 2'), 'every part recorded');
  const port = Number(/127\.0\.0\.1:(\d+)/.exec(readFileSync(kc, 'utf8'))![1]);
  const nodes = nodeAgents(H);
  t.equal((await nodenet('lab', 'down', '--name', H)).exitCode, 0);
  await assertGone(t, H, recorded, port, nodes);
});
