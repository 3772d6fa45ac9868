/**
 * `nodenet lab up|add-node|status|exec|down` as a user runs them: the real
 * CLI from dist/ (npm run build first), the real kubectl with the KUBECONFIG
 * `up` prints. Two labs of different names run side by side; a running lab is
 * not built twice; a crashed one (its control plane and agents SIGKILLed)
 * is removed by the next `up` of its name; `add-node` adds a third node that
 * runs Pods like the others; `down` leaves nothing behind:
 * no namespace of the lab, no process it recorded (nor a pod's pause), no
 * cgroup of its nodes (the killed agents never stopped their Pods), no
 * run directory, no loopback listener. Lab names are unique to this run
 * (t<pid>a, t<pid>b), so a user's lab is never touched; teardown downs
 * both, also when a case fails.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { REPO } from '../agent/src/lab/lab.js';
import { readProcesses } from '../agent/src/lab/owner.js';
import { isAlive } from '../agent/src/netns/proc.js';
import { labPodCgroupDirs } from '../agent/src/testing/cgroups.js';
import { runner } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { assertGone, dirOf, kubectl, nodeAgents, nodenet, readyNodes } from './lab-cli-shared.js';

const base = `t${process.pid.toString(36)}`;
const A = `${base}a`;
const B = `${base}b`;
t.teardown(async () => {
  await nodenet('lab', 'down', '--name', A);
  await nodenet('lab', 'down', '--name', B);
});

let kcA = '';
let portA = 0;

t.test('lab up: a 2-node cluster, Ready, used with the printed KUBECONFIG', async (t) => {
  const up = await nodenet('lab', 'up', '--name', A, '--nodes', '2');
  t.equal(up.exitCode, 0, `${up.stdout}${up.stderr}`);
  const m = /export KUBECONFIG=(\S+)/.exec(up.stdout);
  t.ok(m, 'it prints the KUBECONFIG to use');
  kcA = m![1]!;
  t.equal(kcA, `${dirOf(A)}/kubeconfig`);
  t.match(readFileSync(kcA, 'utf8'), /server: https:\/\/127\.0\.0\.1:\d+/, 'on loopback');
  portA = Number(/127\.0\.0\.1:(\d+)/.exec(readFileSync(kcA, 'utf8'))![1]);
  t.same(await readyNodes(kcA), ['n1', 'n2'], 'kubectl get nodes: 2 Ready nodes');
  const again = await nodenet('lab', 'up', '--name', A);
  t.equal(again.exitCode, 1, 'a running lab is not built twice');
  t.match(again.stderr, new RegExp(`lab ${A} is already up`));
});

t.test('lab status and lab exec on a node; exit codes pass through', async (t) => {
  const st = await nodenet('lab', 'status', '--name', A);
  t.equal(st.exitCode, 0, st.stderr);
  t.match(st.stdout, /n1\s+192\.168\.77\.11\s+10\.244\.\d+\.0\/24\s+Ready\s+\d+ running/);
  t.match(st.stdout, /n2\s+192\.168\.77\.12\s+10\.244\.\d+\.0\/24\s+Ready\s+\d+ running/);
  const ex = await nodenet('lab', 'exec', '--name', A, 'n1', '--', 'ip', '-br', 'addr');
  t.equal(ex.exitCode, 0, ex.stderr);
  t.match(ex.stdout, /eth0\S*\s+UP\s+192\.168\.77\.11\/24/, "n1's own namespace");
  t.equal((await nodenet('lab', 'exec', '--name', A, 'n2', '--', 'sh', '-c', 'exit 7')).exitCode, 7);
  const none = await nodenet('lab', 'exec', '--name', A, 'n9/x', '--', 'true');
  t.equal(none.exitCode, 1);
  t.match(none.stderr, /no pod n9\/x/);
});

t.test('a pod run by the cluster: lab exec enters its namespaces, status lists it', async (t) => {
  const run = await kubectl(kcA, 'run', 'web', '--image=nodenet/host', '--command', '--', process.execPath, `${REPO}bin/nodenet.js`, 'serve', '--udp', '');
  t.equal(run.exitCode, 0, run.stderr);
  let ip = '';
  await waitFor(async () => {
    const r = await kubectl(kcA, 'get', 'pod', 'web', '-o', 'jsonpath={.status.phase} {.status.podIP}');
    [, ip = ''] = r.stdout.split(' ');
    return r.stdout.startsWith('Running ') && ip !== '';
  }, 'the pod web to run', { timeoutMs: 60_000, intervalMs: 250 });
  const ex = await nodenet('lab', 'exec', '--name', A, 'default/web', '--', 'hostname');
  t.equal(ex.exitCode, 0, ex.stderr);
  t.equal(ex.stdout.trim(), 'web', "the pod's UTS namespace");
  const addr = await nodenet('lab', 'exec', '--name', A, 'web', '--', 'ip', '-br', '-4', 'addr', 'show', 'eth0');
  t.match(addr.stdout, new RegExp(`${ip.replace(/\./g, '\\.')}/24`), "the pod's network namespace");
  t.match((await nodenet('lab', 'status', '--name', A)).stdout, new RegExp(`default/web\\s+n\\d\\s+${ip.replace(/\./g, '\\.')}\\s+Running`));
});

t.test('a second lab of another name runs beside the first; a crashed one is replaced by the next up', async (t) => {
  const up = await nodenet('lab', 'up', '--name', B, '--nodes', '1');
  t.equal(up.exitCode, 0, `${up.stdout}${up.stderr}`);
  const kcB = /export KUBECONFIG=(\S+)/.exec(up.stdout)![1]!;
  const portB = Number(/127\.0\.0\.1:(\d+)/.exec(readFileSync(kcB, 'utf8'))![1]);
  t.not(portB, portA, 'each lab has its own loopback port');
  t.same(await readyNodes(kcB), ['n1']);
  t.same(await readyNodes(kcA), ['n1', 'n2'], 'the first lab is untouched');
  const all = await nodenet('lab', 'status');
  t.match(all.stdout, new RegExp(`${A}\\s+running\\s+lab up\\s+2`));
  t.match(all.stdout, new RegExp(`${B}\\s+running\\s+lab up\\s+1`));

  // The crash: the control plane and the agent die at once; the relays and the namespaces stay behind.
  const before = readProcesses(dirOf(B));
  for (const p of before.filter((x) => x.role === 'control-plane' || x.role.startsWith('agent '))) process.kill(p.pid, 'SIGKILL');
  await waitFor(() => before.filter((x) => x.role === 'control-plane').every((p) => !isAlive(p.pid, p.startTime)), 'the control plane to die');
  t.match((await nodenet('lab', 'status', '--name', B)).stdout, new RegExp(`lab ${B}: crashed`));
  const again = await nodenet('lab', 'up', '--name', B, '--nodes', '1');
  t.equal(again.exitCode, 0, `${again.stdout}${again.stderr}`);
  t.match(again.stdout, new RegExp(`removed what the crashed lab ${B} left`), 'up says it removed the crashed lab');
  t.same(before.filter((p) => isAlive(p.pid, p.startTime)).map((p) => p.role), [], "the crashed lab's relays are gone too");
  t.same(await readyNodes(kcB), ['n1'], 'the new lab answers on the same kubeconfig path');
  t.same(await readyNodes(kcA), ['n1', 'n2']);

  const recordedB = readProcesses(dirOf(B));
  const newPortB = Number(/127\.0\.0\.1:(\d+)/.exec(readFileSync(kcB, 'utf8'))![1]);
  const nodesB = nodeAgents(B);
  const down = await nodenet('lab', 'down', '--name', B);
  t.equal(down.exitCode, 0, down.stderr);
  await assertGone(t, B, recordedB, newPortB, nodesB);
  t.same(await readyNodes(kcA), ['n1', 'n2'], 'downing one lab leaves the other');
});

t.test('lab add-node: a third node, configured as the others, Ready; status, exec and down know it', async (t) => {
  const add = await nodenet('lab', 'add-node', '--name', A);
  t.equal(add.exitCode, 0, `${add.stdout}${add.stderr}`);
  t.match(add.stdout, new RegExp(`node n3: nn-${A}-n3, eth0 192\\.168\\.77\\.13/24, agent starting`));
  t.match(add.stdout, new RegExp(`node n3 joined lab ${A}: 3 of 3 node\\(s\\) Ready`));
  t.same(await readyNodes(kcA), ['n1', 'n2', 'n3'], 'kubectl get nodes: 3 Ready nodes');
  t.match(readFileSync(`${dirOf(A)}/n3/agent.json`, 'utf8'), /"proxyMode": "iptables"[\s\S]*"backend": "vxlan"[\s\S]*"runPods": true/, 'the config of the others');
  t.ok(readProcesses(dirOf(A)).some((p) => p.role === 'agent n3' && isAlive(p.pid, p.startTime)), 'its agent is recorded in processes.json');
  const st = await nodenet('lab', 'status', '--name', A);
  t.match(st.stdout, /n3\s+192\.168\.77\.13\s+10\.244\.\d+\.0\/24\s+Ready\s+\d+ running/);
  const ex = await nodenet('lab', 'exec', '--name', A, 'n3', '--', 'ip', '-br', 'addr');
  t.match(ex.stdout, /eth0\S*\s+UP\s+192\.168\.77\.13\/24/, "n3's own namespace");
  // A Pod pinned to n3 runs there and is reached from n1 across the overlay.
  const run = await kubectl(kcA, 'run', 'on3', '--image=nodenet/host', '--overrides={"spec":{"nodeSelector":{"kubernetes.io/hostname":"n3"}}}', '--command', '--', 'sleep', 'infinity');
  t.equal(run.exitCode, 0, run.stderr);
  let ip = '';
  await waitFor(async () => {
    const r = await kubectl(kcA, 'get', 'pod', 'on3', '-o', 'jsonpath={.status.phase} {.status.podIP}');
    [, ip = ''] = r.stdout.split(' ');
    return r.stdout.startsWith('Running ') && ip !== '';
  }, 'the pod on3 to run', { timeoutMs: 60_000, intervalMs: 250 });
  await waitFor(async () => (await nodenet('lab', 'exec', '--name', A, 'n1', '--', 'ping', '-c1', '-W1', ip)).exitCode === 0, `n1 to reach ${ip} on n3`, { timeoutMs: 20_000, intervalMs: 250 });
  t.pass(`n1 reaches the pod on n3 (${ip}) over the overlay`);
  const again = await nodenet('lab', 'add-node', '--name', A, 'n3');
  t.equal(again.exitCode, 1);
  t.match(again.stderr, /the lab has a node n3 already \(n1, n2, n3\)/);
});

t.test('lab down removes every trace, pods included, and is idempotent', async (t) => {
  const recorded = readProcesses(dirOf(A));
  const pods = (await runner.run(['sh', '-c', `cat ${dirOf(A)}/*/run/kubelet/*.json 2>/dev/null || true`])).stdout;
  const pausePids = [...pods.matchAll(/"sandbox":\{"name":"[^"]+","pid":(\d+),"startTime":"(\d+)"/g)].map((m) => ({ role: 'pause', pid: Number(m[1]), startTime: m[2]! }));
  t.ok(pausePids.length >= 1, 'the pod web had a pause holder');
  const nodes = nodeAgents(A);
  t.same(nodes.map((n) => n.nodeName).sort(), ['n1', 'n2', 'n3']);
  t.ok(labPodCgroupDirs(nodes).length >= 2, `the pods web and on3 have cgroups: ${labPodCgroupDirs(nodes).join(' ')}`);
  const down = await nodenet('lab', 'down', '--name', A);
  t.equal(down.exitCode, 0, down.stderr);
  t.match(down.stdout, new RegExp(`lab ${A} removed`));
  t.match(down.stdout, /cgroups of node n\d \(\d director(y|ies)\)/, 'down says it removed the nodes\' cgroups');
  t.notMatch(down.stdout, /left behind/);
  await assertGone(t, A, [...recorded, ...pausePids], portA, nodes);
  const again = await nodenet('lab', 'down', '--name', A);
  t.equal(again.exitCode, 0);
  t.match(again.stdout, new RegExp(`no lab ${A}: nothing to remove`));
});
