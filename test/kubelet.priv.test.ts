/**
 * The embedded kubelet end to end: `nodenet control-plane` in a lab, two
 * agents with runPods, the real kubectl. Pods are real processes from the
 * node's filesystem (sh, socat) in their own namespaces, wired by the
 * agent's own CNI code; the test sends real packets to their IPs from the
 * node's namespace. Last, the lab's destroy (the agents SIGKILLed, as
 * every lab teardown does) leaves no cgroup of its nodes.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Lab, LabControlPlane, VNode } from '../agent/src/lab/lab.js';
import { readNodeAgent, type LabNodeAgent } from '../agent/src/lab/node-cgroups.js';
import { labNodeCgroupDirs, labPodCgroupDirs } from '../agent/src/testing/cgroups.js';
import { newLab, runner, shOk, NO_DNS } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

let lab: Lab;
let cp: LabControlPlane;
let n1: VNode;
const tag = `nnk${process.pid}`;
const marker = (what: string) => `/tmp/${tag}-${what}`;

async function kubectl(...args: string[]): Promise<string> {
  const r = await cp.kubectl(args, true);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const kubectlFail = async (...args: string[]) => cp.kubectl(args, true);
const jp = async (pod: string, path: string) => (await kubectlFail('get', 'pod', pod, '-o', `jsonpath=${path}`)).stdout.trim();

async function waitPod(pod: string, path: string, want: RegExp, what: string, timeoutMs = 30_000): Promise<string> {
  let last = '';
  try {
    await waitFor(async () => want.test((last = await jp(pod, path))), what, { timeoutMs, intervalMs: 200 });
  } catch (e) {
    const all = await kubectlFail('get', 'pod', pod, '-o', 'json');
    const log = (await shOk(['tail', '-n', '30', n1.logFile])).stdout;
    throw new Error(`${(e as Error).message}: last ${JSON.stringify(last)}\n${all.stdout.slice(0, 4000)}\nagent log:\n${log}`);
  }
  return last;
}

async function tcp(ip: string, port: number): Promise<string> {
  const r = await n1.exec(['socat', '-t2', '-T3', '-', `TCP4:${ip}:${port},connect-timeout=3`], true);
  return (r.exitCode === 0 ? r.stdout : r.stderr).trim();
}

function pod(name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 5, ...spec } };
}
const host = (name: string, command: string[], extra: Record<string, unknown> = {}) => ({ name, image: 'nodenet/host', command, ...extra });
const listen = (reply: string) => ['socat', '-t10', 'TCP4-LISTEN:8080,reuseaddr,fork', `SYSTEM:${reply}`];

async function apply(...objs: Record<string, unknown>[]): Promise<void> {
  const r = await cp.kubectl(['apply', '-f', '-'], true, objs.map((o) => JSON.stringify(o)).join('\n'));
  if (r.exitCode !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
}

/** The kubelet's record of a Pod on n1. */
function record(uid: string): { podIP: string; containers: { name: string; current: { pid: number } | null }[] } | null {
  const f = `${n1.runDir}/kubelet/${uid}.json`;
  return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')) : null;
}
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

t.before(async () => {
  for (const m of ['ready', 'alive', 'term']) rmSync(marker(m), { force: true });
  lab = await newLab('kl');
  cp = await lab.startControlPlane({ nodes: ['n1', 'n2'], args: NO_DNS });
  const cfg = { runPods: true, proxyMode: 'iptables', proxyMinSyncMs: 100 };
  n1 = await lab.addNode('n1', { clusterCIDR: '10.244.0.0/16', config: cfg });
  const n2 = await lab.addNode('n2', { clusterCIDR: '10.244.0.0/16', config: cfg });
  await n1.startAgent();
  await n2.startAgent();
  writeFileSync(marker('ready'), 'ok');
  writeFileSync(marker('alive'), 'ok');
  const env = [
    { name: 'MY_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'MY_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: 'MY_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
    { name: 'GREETING', value: 'hello-$(MY_NAME)' },
  ];
  await apply(
    pod('web', { containers: [host('web', ['sh', '-c', 'echo started $MY_NAME in $(pwd); echo to-stderr >&2; exec socat -t10 TCP4-LISTEN:8080,reuseaddr,fork SYSTEM:"echo \\$MY_NAME \\$MY_NS \\$MY_IP \\$NODE \\$HOST_IP \\$GREETING"'], { env, workingDir: '/tmp', readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 } })] }),
    pod('crash', { restartPolicy: 'Always', containers: [host('crash', ['sh', '-c', 'echo run $(date +%s%N); exit 3'])] }),
    pod('once', { restartPolicy: 'Never', containers: [host('once', ['sh', '-c', 'exit 0'])] }),
    pod('rd', { containers: [host('rd', listen('echo rd'), { readinessProbe: { exec: { command: ['test', '-f', marker('ready')] }, periodSeconds: 1 } })] }, { app: 'rd' }),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'rd' }, spec: { selector: { app: 'rd' }, ports: [{ port: 80, targetPort: 8080 }] } },
    pod('live', { containers: [host('live', listen('echo live'), { livenessProbe: { exec: { command: ['sh', '-c', `hostname | grep -qx live && test -f ${marker('alive')}`] }, periodSeconds: 1, failureThreshold: 1 } })] }),
    pod('term', { terminationGracePeriodSeconds: 20, containers: [host('term', ['sh', '-c', `trap "echo got-term > ${marker('term')}; exit 0" TERM; while :; do echo tick; sleep 0.2; done`])] }),
    pod('stubborn', { terminationGracePeriodSeconds: 2, containers: [host('stubborn', ['sh', '-c', 'trap "" TERM; while :; do sleep 0.2; done'])] }),
    pod('bad', { volumes: [{ name: 'v', hostPath: { path: '/tmp' } }], containers: [host('bad', ['sleep', '100'], { volumeMounts: [{ name: 'v', mountPath: '/v', mountPropagation: 'HostToContainer' }] })] }),
    pod('pull', { containers: [{ name: 'pull', image: 'busybox', command: ['sleep', '100'] }] }),
  );
});
t.teardown(async () => {
  for (const m of ['ready', 'alive', 'term']) rmSync(marker(m), { force: true });
  await lab?.destroy();
});

t.test('a Pod runs, with its IP, env and working directory, answers on its IP, and its logs are served', async (t) => {
  await waitPod('web', '{.status.phase} {.status.conditions[?(@.type=="Ready")].status}', /^Running True$/, 'web Running and Ready');
  const ip = await jp('web', '{.status.podIP}');
  t.match(ip, /^10\.244\.\d+\.\d+$/, 'podIP from the node\'s pod CIDR');
  t.equal(await jp('web', '{.status.hostIP}'), n1.underlayIP.split('/')[0], 'hostIP is the node\'s');
  t.equal(await tcp(ip, 8080), `web default ${ip} n1 ${n1.underlayIP.split('/')[0]} hello-web`, 'the process answers on the Pod IP with its env');
  t.equal(await jp('web', '{.status.containerStatuses[0].ready} {.status.containerStatuses[0].started} {.status.containerStatuses[0].restartCount}'), 'true true 0');
  t.equal(await kubectl('logs', 'web'), 'started web in /tmp\nto-stderr\n', 'kubectl logs: stdout and stderr');
  t.equal(await kubectl('logs', 'web', '-c', 'web', '--tail=1'), 'to-stderr\n', '--tail');
  const ts = await kubectlFail('logs', 'web', '--timestamps');
  t.match(ts.stderr, /timestamps/, '--timestamps is refused with a reason');
  const node = await runner.run(['nsenter', `--net=/var/run/netns/${lab.ul}`, '--', 'kubectl', '--kubeconfig', cp.nodeKubeconfig('n2'), 'logs', 'web'], { allowFailure: true });
  t.match(node.stderr, /forbidden/i, 'a node cannot read Pods\' logs');
  const missing = await kubectlFail('logs', 'nosuch');
  t.match(missing.stderr, /not found/, 'a missing Pod is NotFound');
  const wrong = await kubectlFail('logs', 'web', '-c', 'other');
  t.match(wrong.stderr, /container other is not valid/, 'a missing container is named');
});

t.test('restartPolicy Always: a container that exits restarts, with back-off (CrashLoopBackOff)', async (t) => {
  await waitPod('crash', '{.status.containerStatuses[0].state.waiting.reason}', /^CrashLoopBackOff$/, 'crash in CrashLoopBackOff');
  t.equal(await jp('crash', '{.status.containerStatuses[0].lastState.terminated.exitCode}'), '3', 'the last exit code');
  t.equal(await jp('crash', '{.status.containerStatuses[0].restartCount}'), '1', 'restarted once at once');
  await waitPod('crash', '{.status.containerStatuses[0].restartCount}', /^[2-9]$/, 'a second restart after the back-off', 30_000);
  t.match(await kubectl('logs', 'crash', '--previous'), /^run \d+\n$/, '--previous: the run before');
  const ev = await kubectl('get', 'events', '--field-selector', 'involvedObject.name=crash', '-o', 'jsonpath={.items[*].reason}');
  t.match(ev, /BackOff/, 'a BackOff event');
  await waitPod('once', '{.status.phase}', /^Succeeded$/, 'restartPolicy Never, exit 0: Succeeded');
  t.equal(await jp('once', '{.status.containerStatuses[0].state.terminated.reason}'), 'Completed');
});

t.test('a failing readiness probe makes the Pod not Ready and its endpoint not ready', async (t) => {
  await waitPod('rd', '{.status.conditions[?(@.type=="Ready")].status}', /^True$/, 'rd Ready');
  const slice = () => kubectl('get', 'endpointslices', '-l', 'kubernetes.io/service-name=rd', '-o', 'jsonpath={.items[*].endpoints[*].conditions.ready}');
  await waitFor(async () => (await slice()).trim() === 'true', 'rd\'s endpoint ready', { timeoutMs: 15_000, intervalMs: 200 });
  rmSync(marker('ready'));
  await waitPod('rd', '{.status.conditions[?(@.type=="Ready")].status}', /^False$/, 'rd not Ready');
  await waitFor(async () => (await slice()).trim() !== 'true', 'rd\'s endpoint not ready', { timeoutMs: 15_000, intervalMs: 200 });
  t.equal(await jp('rd', '{.status.phase} {.status.containerStatuses[0].restartCount}'), 'Running 0', 'still running: readiness restarts nothing');
  writeFileSync(marker('ready'), 'ok');
  await waitPod('rd', '{.status.conditions[?(@.type=="Ready")].status}', /^True$/, 'rd Ready again');
});

t.test('a failing liveness probe (exec, inside the Pod\'s namespaces) restarts the container', async (t) => {
  await waitPod('live', '{.status.phase} {.status.containerStatuses[0].ready}', /^Running true$/, 'live running');
  const ip = await jp('live', '{.status.podIP}');
  rmSync(marker('alive'));
  await waitPod('live', '{.status.containerStatuses[0].restartCount}', /^[1-9]/, 'live restarted');
  writeFileSync(marker('alive'), 'ok');
  await waitPod('live', '{.status.containerStatuses[0].state.running.startedAt}', /./, 'live running again');
  t.equal(await jp('live', '{.status.podIP}'), ip, 'the same IP: the sandbox holds it');
  await waitFor(async () => (await tcp(ip, 8080)) === 'live', 'live answers again', { timeoutMs: 15_000, intervalMs: 200 });
  const ev = await kubectl('get', 'events', '--field-selector', 'involvedObject.name=live', '-o', 'jsonpath={.items[*].message}');
  t.match(ev, /Liveness probe failed/, 'an Unhealthy event');
});

t.test('unsupported fields are rejected with an Event; other images never pull', async (t) => {
  await waitPod('bad', '{.status.phase} {.status.reason}', /^Failed UnsupportedPodSpec$/, 'bad Failed');
  const ev = await kubectl('get', 'events', '--field-selector', 'involvedObject.name=bad');
  t.match(ev, /Warning\s+UnsupportedPodSpec/, 'a Warning event');
  t.match(ev, /spec\.volumes/, 'naming the field');
  t.match(ev, /spec\.containers\[0\]\.volumeMounts/, 'and the container\'s');
  await waitPod('pull', '{.status.containerStatuses[0].state.waiting.reason}', /^ErrImageNeverPull$/, 'pull waits');
  t.match(await jp('pull', '{.status.containerStatuses[0].state.waiting.message}'), /nodenet\/host/, 'the message says which image to use');
  const logs = await kubectlFail('logs', 'pull');
  t.match(logs.stderr, /waiting to start/, 'no logs for a container that never started');
});

t.test('graceful deletion: SIGTERM honoured, SIGKILL after the grace period, the IP freed', async (t) => {
  await waitPod('term', '{.status.phase}', /^Running$/, 'term running');
  await waitPod('stubborn', '{.status.phase}', /^Running$/, 'stubborn running');
  // kubectl logs -f streams what the container writes.
  const follow = spawn('nsenter', [`--net=/var/run/netns/${lab.ul}`, '--', 'kubectl', '--kubeconfig', cp.kubeconfig, 'logs', '-f', 'term'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let got = '';
  follow.stdout.on('data', (d: Buffer) => (got += d.toString()));
  t.teardown(() => void follow.kill('SIGKILL'));
  const ticks = () => got.split('\n').filter((l) => l === 'tick').length;
  await waitFor(() => ticks() >= 1, 'kubectl logs -f output', { timeoutMs: 15_000 });
  const seen = ticks();
  await waitFor(() => ticks() > seen, 'more lines while following', { timeoutMs: 15_000 });
  follow.kill('SIGKILL');

  const uids = { term: await jp('term', '{.metadata.uid}'), stubborn: await jp('stubborn', '{.metadata.uid}') };
  const ips = { term: await jp('term', '{.status.podIP}'), stubborn: await jp('stubborn', '{.status.podIP}') };
  const pid = record(uids.stubborn)!.containers[0]!.current!.pid;
  t.ok(existsSync(`${n1.stateDir}/ipam/nodenet/${ips.term}`), 'term\'s IP is reserved');
  await kubectl('delete', 'pod', 'term', 'stubborn', '--wait=false');
  await waitFor(() => readFileSync(marker('term'), { encoding: 'utf8', flag: 'a+' }).trim() === 'got-term', 'term got SIGTERM', { timeoutMs: 15_000 });
  t.ok(alive(pid), 'stubborn ignores SIGTERM and still runs within its grace period');
  await waitFor(async () => (await kubectlFail('get', 'pod', 'term')).exitCode !== 0, 'term gone', { timeoutMs: 20_000, intervalMs: 200 });
  await waitFor(async () => (await kubectlFail('get', 'pod', 'stubborn')).exitCode !== 0, 'stubborn gone', { timeoutMs: 20_000, intervalMs: 200 });
  t.notOk(alive(pid), 'stubborn was SIGKILLed');
  t.notOk(existsSync(`${n1.stateDir}/ipam/nodenet/${ips.term}`), 'term\'s IP is free');
  t.notOk(existsSync(`${n1.stateDir}/ipam/nodenet/${ips.stubborn}`), 'stubborn\'s IP is free');
  t.equal(record(uids.term), null, 'no record left');
});

t.test('an agent killed with SIGKILL leaves its Pods running; the restarted one adopts them', async (t) => {
  const ip = await jp('web', '{.status.podIP}');
  const uid = await jp('web', '{.metadata.uid}');
  const pid = record(uid)!.containers[0]!.current!.pid;
  await n1.stopAgent('SIGKILL');
  t.equal(await tcp(ip, 8080), `web default ${ip} n1 ${n1.underlayIP.split('/')[0]} hello-web`, 'web answers with no agent');
  await n1.startAgent();
  await waitFor(() => readFileSync(n1.logFile, 'utf8').includes('adopted pod'), 'the agent adopted web', { timeoutMs: 15_000 });
  t.equal(record(uid)!.containers[0]!.current!.pid, pid, 'the same process');
  t.ok(alive(pid), 'still running');
  await waitPod('web', '{.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].restartCount}', /^Running True 0$/, 'web Running and Ready, not restarted');
  t.equal(await kubectl('logs', 'web', '--tail=1'), 'to-stderr\n', 'its logs are still served');
  await kubectl('delete', 'pod', 'web', '--timeout=30s');
  t.notOk(alive(pid), 'deleting it after the restart stops its process');
  t.notOk(existsSync(`${n1.stateDir}/ipam/nodenet/${ip}`), 'and frees its IP');
});

t.test('the lab\'s destroy, which SIGKILLs the agents, removes their Pods\' cgroups: no directory of its nodes is left', async (t) => {
  const nodes = lab.nodes.map((n) => readNodeAgent(n.dir)).filter((a): a is LabNodeAgent => a !== null);
  t.same(nodes.map((n) => n.nodeName), ['n1', 'n2']);
  t.ok(labPodCgroupDirs(nodes).length >= 1, `Pods still run in cgroups of their own: ${labPodCgroupDirs(nodes).join(' ')}`);
  t.same(await lab.destroy(), [], 'destroy reports nothing left behind');
  t.same(labNodeCgroupDirs(nodes), [], 'no directory of n1 or n2 under /sys/fs/cgroup/*/**/nodenet/');
});
