/**
 * The demo's checks that need no root and no lab (test/demo.priv.test.ts
 * runs the whole story): its up-front IPVS refusal, its manifests, what it
 * keeps of `kubectl describe pod`, and how it finds a Pod's network
 * namespace in the kubelet's records. createLab is
 * the first thing the demo makes; here it throws a marker, so a test sees
 * whether the demo got that far, and nothing is ever built.
 */
import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { FakeRunner } from '../exec/runner.fake.js';
import { SpawnRunner, type Runner } from '../exec/runner.js';
import { IPVS_PROC_FILE } from '../netfilter/ipvs/ipvs-probe.js';
import { NO_IPVS_MESSAGE } from '../netfilter/ipvs/ipvs-types.js';
import { BIG_CPU_REQUEST, bigManifest, demoManifest, describePending, podNetns, runDemo, type DemoDeps } from './demo.js';
import { AGENT_JS, LAB_NODE_CAPACITY } from './lab.js';

const MARK = 'createLab reached';
const NOT_FOUND = 'modprobe: FATAL: Module ip_vs not found in directory /lib/modules/6.18.0\n';

function deps(runner: Runner, labs: string[], out: string[], ipvsExists?: (p: string) => boolean): DemoDeps {
  return {
    runner,
    createLab: async (prefix) => {
      labs.push(prefix);
      throw new Error(MARK);
    },
    readNetwork: async () => {
      throw new Error('not reached');
    },
    stdout: (s) => void out.push(s),
    ...(ipvsExists ? { ipvsExists } : {}),
  };
}

const modprobe = (exitCode: number, stderr: string) =>
  new FakeRunner().on((argv) => (argv.join(' ') === 'modprobe ip_vs' ? { stdout: '', stderr, exitCode } : undefined));

t.test('ipvs without IPVS: refused before the lab is made', async (t) => {
  const runner = modprobe(1, NOT_FOUND);
  const labs: string[] = [];
  const out: string[] = [];
  await t.rejects(runDemo({ mode: 'ipvs', keep: false }, deps(runner, labs, out, () => false)), {
    name: 'NodenetError',
    code: ErrorCode.NotAvailable,
    message: `demo --proxy-mode ipvs: ${NO_IPVS_MESSAGE}; no /proc/net/ip_vs, and modprobe ip_vs exited 1: ${NOT_FOUND.trim()}`,
  });
  t.same(labs, [], 'no lab');
  t.same(out, [], 'nothing printed: the story did not start');
  t.same(runner.calls.map((c) => c.argv.join(' ')), ['modprobe ip_vs']);
});

t.test('ipvs with IPVS: the demo goes on to make its lab', async (t) => {
  const runner = modprobe(1, NOT_FOUND);
  const labs: string[] = [];
  await t.rejects(runDemo({ mode: 'ipvs', keep: true }, deps(runner, labs, [], () => true)), new RegExp(MARK));
  t.same(labs, ['demo']);
  t.same(runner.calls, [], '/proc/net/ip_vs was there: no modprobe');
});

t.test('iptables and nftables: no IPVS probe', async (t) => {
  for (const mode of ['iptables', 'nftables'] as const) {
    const runner = new FakeRunner();
    const labs: string[] = [];
    let looked = false;
    await t.rejects(runDemo({ mode, keep: false }, deps(runner, labs, [], () => (looked = true))), new RegExp(MARK), mode);
    t.same(labs, ['demo']);
    t.equal(looked, false);
    t.same(runner.calls, []);
  }
});

const HAS_IPVS = existsSync(IPVS_PROC_FILE) && `this kernel has IPVS (${IPVS_PROC_FILE} exists): the refusal cannot be checked here`;

t.test('ipvs on this host, for real: refused (this kernel has no IPVS)', { skip: HAS_IPVS }, async (t) => {
  const real = new SpawnRunner();
  const runner: Runner = {
    run: async (argv, opts) => {
      if (argv[0] !== 'modprobe') throw new Error(`the demo went on to ${argv.join(' ')}`);
      return real.run(argv, opts);
    },
  };
  const labs: string[] = [];
  await t.rejects(runDemo({ mode: 'ipvs', keep: false }, deps(runner, labs, [])), { code: ErrorCode.NotAvailable, message: /^demo --proxy-mode ipvs: this kernel has no IPVS/ });
  t.same(labs, []);
});

t.test('the manifest: a Deployment of 3 `nodenet serve`, the two Services, the client pinned to node1', async (t) => {
  const docs = demoManifest().split(/^---$/m).map((d) => parseYaml(d) as { kind: string; metadata: { name: string }; spec: Record<string, unknown> });
  t.same(docs.map((d) => `${d.kind}/${d.metadata.name}`), ['Deployment/web', 'Service/web', 'Service/web-nodeport', 'Pod/client']);
  const deploy = docs[0]!.spec as { replicas: number; template: { spec: { containers: { command: string[] }[] } } };
  t.equal(deploy.replicas, 3);
  t.same(deploy.template.spec.containers[0]!.command, [process.execPath, AGENT_JS, 'serve', '--http', '8080', '--tcp', '9000']);
  t.match(docs[2]!.spec, { type: 'NodePort', ports: [{ nodePort: 30080 }] });
  t.match(docs[3]!.spec, { nodeSelector: { 'kubernetes.io/hostname': 'node1' } });
});

t.test('podNetns: the Pod\'s netns from the kubelet\'s records; none without a live sandbox', async (t) => {
  const runDir = mkdtempSync(join(tmpdir(), 'nn-demo-test-'));
  t.teardown(() => rmSync(runDir, { recursive: true, force: true }));
  mkdirSync(`${runDir}/kubelet`);
  const record = (file: string, r: unknown) => writeFileSync(`${runDir}/kubelet/${file}`, JSON.stringify(r));
  record('a.json', { namespace: 'default', name: 'web-1', sandbox: { netns: '/run/netns/nn-x-web-1' } });
  record('b.json', { namespace: 'other', name: 'client', sandbox: { netns: '/run/netns/nn-x-other' } });
  record('c.json', { namespace: 'default', name: 'gone', sandbox: null });
  record('d.json', { namespace: 'default', name: 'client', sandbox: { netns: '/run/netns/nn-x-client' } });
  writeFileSync(`${runDir}/kubelet/notes.txt`, 'not a record');
  const node = { name: 'node1', runDir };
  t.equal(podNetns(node, 'default', 'client'), '/run/netns/nn-x-client', 'the namespace and the name both match');
  t.equal(podNetns(node, 'default', 'web-1'), '/run/netns/nn-x-web-1');
  t.throws(() => podNetns(node, 'default', 'gone'), /demo: no kubelet record of default\/gone on node1/, 'a record without a sandbox');
  t.throws(() => podNetns(node, 'default', 'nobody'), /no kubelet record of default\/nobody/);
});

t.test('step 9\'s Deployment: 3 replicas, one per lab node fits by its cpu request, the third does not', async (t) => {
  const d = parseYaml(bigManifest()) as { kind: string; spec: { replicas: number; template: { spec: { containers: { resources: { requests: { cpu: string } } }[] } } } };
  t.equal(d.kind, 'Deployment');
  t.equal(d.spec.replicas, 3);
  t.equal(d.spec.template.spec.containers[0]!.resources.requests.cpu, BIG_CPU_REQUEST);
  const milli = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
  const cpu = milli(/cpu=([^,]+)/.exec(LAB_NODE_CAPACITY)![1]!);
  const request = milli(BIG_CPU_REQUEST);
  t.equal(Math.floor(cpu / request), 1, `a lab node (cpu ${cpu}m) takes one replica of ${request}m, not two`);
});

t.test('describePending: name, status, node, requests, PodScheduled and the events of kubectl describe pod', async (t) => {
  // kubectl 1.32's describe of a Pending Pod (the lines the demo leaves out are in it too).
  const describe = `Name:             big-6d5f7-x2x9q
Namespace:        default
Priority:         0
Service Account:  default
Node:             <none>
Labels:           app=big
Status:           Pending
IP:
Controlled By:    ReplicaSet/big-6d5f7
Containers:
  work:
    Image:      nodenet/host
    Command:
      sleep
      infinity
    Requests:
      cpu:        1200m
    Environment:  <none>
Conditions:
  Type           Status
  PodScheduled   False 
Volumes:          <none>
QoS Class:        Burstable
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  1s    default-scheduler  0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.

`;
  t.equal(describePending(describe), `Name:             big-6d5f7-x2x9q
Node:             <none>
Status:           Pending
    Requests:
      cpu:        1200m
  PodScheduled   False
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  1s    default-scheduler  0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.`);
  t.equal(describePending('Name: x\nStatus: Pending\n'), 'Name: x\nStatus: Pending', 'no Events section: the head alone');
});
