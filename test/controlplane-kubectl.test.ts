/**
 * The real kubectl (the one on PATH; its dispatcher picks 1.32 from the
 * server's /version) against `nodenet control-plane` on loopback, over TLS
 * with the generated CA and bearer token. No root needed.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

const env = testControlPlane(t, 'nn-cp-kubectl-', { nodes: ['n1'] });
const { dir, kubectl, ok } = env;

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const SVC = `apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
`;
const SVC2 = `${SVC}  - {name: https, port: 443, targetPort: 8443}
`;

t.test('version and api-resources: the kinds with their short names and verbs', async (t) => {
  t.match(await ok(['version']), /Server Version: v1\.32\.\d+/);
  const res = await ok(['api-resources', '-o', 'wide']);
  for (const re of [
    /^services\s+svc\s+v1\s+true\s+Service\s+create,delete,deletecollection,get,list,patch,update,watch\s+all$/m,
    /^pods\s+po\s+v1\s+true\s+Pod\s/m,
    /^nodes\s+no\s+v1\s+false\s+Node\s/m,
    /^namespaces\s+ns\s+v1\s+false\s+Namespace\s/m,
    /^events\s+ev\s+v1\s+true\s+Event\s/m,
    /^endpointslices\s+discovery\.k8s\.io\/v1\s+true\s+EndpointSlice\s/m,
    /^deployments\s+deploy\s+apps\/v1\s+true\s+Deployment\s/m,
    /^replicasets\s+rs\s+apps\/v1\s+true\s+ReplicaSet\s/m,
    /^leases\s+coordination\.k8s\.io\/v1\s+true\s+Lease\s/m,
  ]) t.match(res, re);
  t.match(await ok(['get', 'ns', '-o', 'name']), /namespace\/default\nnamespace\/kube-node-lease\nnamespace\/kube-public\nnamespace\/kube-system/);
});

t.test('apply twice: created, then a second port added by strategic merge keeps the first', async (t) => {
  t.match(await ok(['apply', '-f', file('svc.yaml', SVC)]), /service\/web created/);
  const first = JSON.parse(await ok(['get', 'svc', 'web', '-o', 'json'])) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  t.equal(first.metadata['generation'], undefined, 'Services have no generation (as upstream)');
  t.match(first.spec, { type: 'ClusterIP', sessionAffinity: 'None', ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] }, 'defaults as kube-apiserver sets them');

  const diff = await kubectl(['diff', '-f', file('svc2.yaml', SVC2)]);
  t.equal(diff.code, 1, 'diff exits 1 when there is a difference');
  t.match(diff.out, /\+ {2}- name: https\n\+ {4}port: 443/);
  t.match(await ok(['apply', '-f', file('svc2.yaml', SVC2)]), /service\/web configured/);
  const svc = JSON.parse(await ok(['get', 'svc', 'web', '-o', 'json'])) as { metadata: Record<string, unknown>; spec: { ports: unknown[] } };
  t.match(svc.spec.ports, [{ name: 'http', port: 80, targetPort: 8080 }, { name: 'https', port: 443, targetPort: 8443 }], 'both ports remain');
  t.equal(svc.spec.ports.length, 2);
  t.equal((await kubectl(['diff', '-f', file('svc2.yaml', SVC2)])).code, 0, 'nothing left to diff');
  t.match(await ok(['apply', '-f', file('svc2.yaml', SVC2)]), /service\/web unchanged/);
});

t.test('get: -o yaml, -o wide, -l, --field-selector, -A', async (t) => {
  await ok(['create', 'namespace', 'other']).catch(() => ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n' }));
  await ok(['apply', '-n', 'other', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: db, labels: {app: db}}\nspec: {ports: [{port: 5432}]}\n' });
  const y = await ok(['get', 'svc', 'web', '-o', 'yaml']);
  t.match(y, /^apiVersion: v1\nkind: Service\nmetadata:\n/);
  t.match(y, /resourceVersion: "\d+"/);
  t.match(y, /uid: [0-9a-f-]{36}/);
  const wide = await ok(['get', 'svc', '-o', 'wide']);
  t.match(wide, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\s+SELECTOR\n/);
  t.match(wide, /^web\s+ClusterIP\s+10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+\s+<none>\s+80\/TCP,443\/TCP\s+\d+s\s+app=web\n/m);
  t.match(await ok(['get', 'svc', '-l', 'tier=front', '-o', 'name']), /^service\/web\n$/);
  t.equal((await kubectl(['get', 'svc', '-l', 'tier in (back)', '-o', 'name'])).out, '', 'a set-based selector that matches nothing');
  t.match(await ok(['get', 'svc', '-A', '--field-selector', 'metadata.namespace=other']), /^NAMESPACE\s+NAME\s+TYPE.*\nother\s+db\s+ClusterIP/);
  const all = await ok(['get', 'svc', '-A', '-o', 'name']);
  t.match(all, /service\/db/);
  t.match(all, /service\/web/);
  t.match(await ok(['get', 'svc', '-A', '--field-selector', 'spec.type=ClusterIP,metadata.name!=db,metadata.name!=kubernetes,metadata.namespace!=kube-system', '-o', 'name']), /^service\/web\n$/, 'spec.type is selectable on Services, as upstream');
  const bad = await kubectl(['get', 'svc', '--field-selector', 'spec.selector=x']);
  t.equal(bad.code, 1);
  t.match(bad.err, /field label not supported: spec\.selector/);
  const badLabel = await kubectl(['get', 'svc', '-l', 'a b c']);
  t.equal(badLabel.code, 1);
  t.match(badLabel.err, /unable to parse requirement|found 'b', expected/);
});

t.test('ClusterIPs and NodePorts are allocated in the create path; a taken one is refused naming the field', async (t) => {
  t.equal(await ok(['get', 'svc', 'kubernetes', '-o', 'jsonpath={.spec.clusterIP}']), '10.96.0.1', 'the kubernetes Service has the first address');
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: np}\nspec: {type: NodePort, ports: [{port: 80}]}\n' });
  const port = Number(await ok(['get', 'svc', 'np', '-o', 'jsonpath={.spec.ports[0].nodePort}']));
  t.ok(port >= 30000 && port <= 32767, `NodePort ${port} in 30000-32767`);
  t.match(await ok(['get', 'svc', 'np']), new RegExp(`^np\\s+NodePort\\s+10\\.\\S+\\s+<none>\\s+80:${port}/TCP`, 'm'));
  const dup = await kubectl(['apply', '-f', '-'], { input: `apiVersion: v1\nkind: Service\nmetadata: {name: np2}\nspec: {type: NodePort, ports: [{port: 80, nodePort: ${port}}]}\n` });
  t.equal(dup.code, 1);
  t.match(dup.err, new RegExp(`The Service "np2" is invalid: spec.ports\\[0\\].nodePort: Invalid value: ${port}: provided port is already allocated`));
  t.equal(await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: np}\nspec: {type: NodePort, ports: [{port: 80}]}\n' }), 'service/np unchanged\n', 'a second apply keeps the NodePort');
  const npIP = await ok(['get', 'svc', 'np', '-o', 'jsonpath={.spec.clusterIP}']);

  // Each ClusterIP is an IPAddress object (KEP-1880), served for reading as upstream serves it.
  t.match(await ok(['api-resources', '-o', 'wide']), /^ipaddresses\s+networking\.k8s\.io\/v1\s+false\s+IPAddress\s+get,list,watch\s*$/m);
  const ips = await ok(['get', 'ipaddresses']);
  t.match(ips, /^NAME\s+PARENTREF\s+AGE\n/);
  t.match(ips, /^10\.96\.0\.1\s+services\/default\/kubernetes\s+\d+[sm]$/m, 'the kubernetes Service\'s address');
  t.match(ips, new RegExp(`^${npIP.replaceAll('.', '\\.')}\\s+services/default/np\\s`, 'm'));
  const one = JSON.parse(await ok(['get', 'ipaddress', npIP, '-o', 'json'])) as { apiVersion: string; kind: string; metadata: { uid?: string; resourceVersion?: string; labels?: Record<string, string> }; spec: unknown };
  t.match(one, { apiVersion: 'networking.k8s.io/v1', kind: 'IPAddress', metadata: { labels: { 'ipaddress.kubernetes.io/managed-by': 'ipallocator.k8s.io' } }, spec: { parentRef: { group: '', resource: 'services', namespace: 'default', name: 'np' } } });
  t.match(one.metadata.uid, /^[0-9a-f-]{36}$/);
  const del = await kubectl(['delete', 'ipaddress', npIP]);
  t.equal(del.code, 1, 'the allocator alone writes them');
  t.match(del.err, /MethodNotAllowed|does not allow this method/);
  await ok(['delete', 'svc', 'np']);
  await waitFor(async () => !(await ok(['get', 'ipaddresses', '-o', 'name'])).includes(npIP), 'the IPAddress to go with its Service');
});

t.test('node IPAM: a Node gets a pod CIDR of its own', async (t) => {
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Node\nmetadata: {name: worker-1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: worker-2}\n' });
  let cidrs: string[] = [];
  await waitFor(async () => {
    cidrs = (await ok(['get', 'nodes', '-o', 'jsonpath={.items[*].spec.podCIDR}'])).trim().split(/\s+/).filter(Boolean);
    return cidrs.length === 2;
  }, 'both pod CIDRs');
  t.ok(cidrs.every((c) => /^10\.244\.\d+\.0\/24$/.test(c)), cidrs.join(' '));
  t.not(cidrs[0], cidrs[1]);
  await ok(['delete', 'node', 'worker-1', 'worker-2']);
});

t.test('EndpointSlices follow the Pods a Service selects', async (t) => {
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: eps-demo}\nspec: {selector: {app: eps-demo}, ports: [{port: 80, targetPort: 8080}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: eps-demo-1, labels: {app: eps-demo}}\nspec: {containers: [{name: c, image: none}]}\n' });
  await ok(['patch', 'pod', 'eps-demo-1', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Running', podIP: '10.244.1.42', conditions: [{ type: 'Ready', status: 'True' }] } })]);
  let got = '';
  await waitFor(async () => (got = await ok(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=eps-demo', '-o', 'jsonpath={.items[*].endpoints[*].addresses[0]} {.items[*].endpoints[*].conditions.ready} {.items[*].ports[*].port}'])) === '10.244.1.42 true 8080', 'the endpoint', { timeoutMs: 5000 });
  t.equal(got, '10.244.1.42 true 8080');
  t.match(await ok(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=eps-demo']), /^eps-demo-\w+\s+IPv4\s+8080\s+10\.244\.1\.42\s+/m, 'kubectl get shows it');
  await ok(['delete', 'pod', 'eps-demo-1']);
  await waitFor(async () => (await ok(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=eps-demo', '-o', 'jsonpath={.items[*].endpoints[*].addresses[0]}'])) === '', 'the endpoint gone with the Pod');
  await ok(['delete', 'svc', 'eps-demo']);
  await waitFor(async () => (await ok(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=eps-demo', '-o', 'name'])) === '', 'the slices gone with the Service');
});

t.test('a ReplicaSet keeps its Pods: a deleted one comes back (self-healing), scale moves the count', async (t) => {
  await ok(['apply', '-f', '-'], { input: 'apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: heal}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: heal}}\n  template:\n    metadata: {labels: {app: heal}}\n    spec: {containers: [{name: c, image: none}]}\n' });
  const names = async () => (await ok(['get', 'pods', '-l', 'app=heal', '-o', 'jsonpath={.items[*].metadata.name}'])).split(' ').filter(Boolean).sort();
  await waitFor(async () => (await names()).length === 2, 'two Pods');
  const before = await names();
  t.ok(before.every((n) => /^heal-\w{5}$/.test(n)), before.join(' '));
  await ok(['delete', 'pod', before[0]!]);
  await waitFor(async () => {
    const now = await names();
    return now.length === 2 && !now.includes(before[0]!);
  }, 'a replacement');
  t.pass('the deleted Pod was replaced');
  await ok(['scale', 'rs', 'heal', '--replicas=4']);
  await waitFor(async () => (await names()).length === 4, 'four Pods');
  t.equal(await ok(['get', 'rs', 'heal', '-o', 'jsonpath={.status.replicas}']), '4');
  await ok(['delete', 'rs', 'heal']);
  await waitFor(async () => (await names()).length === 0, 'the Pods gone with it');
});

t.test('a Deployment rolls out: kubectl rollout status, a new template, rollout history and undo', async (t) => {
  const y = (image: string) => `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: roll}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: roll}}\n  template:\n    metadata: {labels: {app: roll}}\n    spec: {containers: [{name: c, image: ${image}}]}\n`;
  // Stands in for the kubelet (the next issue): every new Pod becomes Running and Ready.
  let kubelet = true;
  const readyLoop = (async () => {
    while (kubelet) {
      const pods = JSON.parse(await ok(['get', 'pods', '-l', 'app=roll', '-o', 'json'])) as { items: { metadata: { name: string; deletionTimestamp?: string }; status?: { phase?: string } }[] };
      for (const p of pods.items) {
        if (p.status?.phase === 'Running' || p.metadata.deletionTimestamp) continue;
        await kubectl(['patch', 'pod', p.metadata.name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Running', podIP: '10.244.1.50', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } })]);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    await ok(['apply', '-f', '-'], { input: y('v1') });
    t.match(await ok(['rollout', 'status', 'deploy/roll', '--timeout=30s']), /deployment "roll" successfully rolled out/);
    t.match(await ok(['get', 'deploy', 'roll']), /^roll\s+2\/2\s+2\s+2\s+/m, 'READY 2/2, UP-TO-DATE 2, AVAILABLE 2');
    await ok(['apply', '-f', '-'], { input: y('v2') });
    t.match(await ok(['rollout', 'status', 'deploy/roll', '--timeout=30s']), /successfully rolled out/);
    t.equal(await ok(['get', 'rs', '-l', 'app=roll', '-o', 'jsonpath={.items[*].spec.replicas}']), '2 0', 'the new ReplicaSet has the Pods, the old one none');
    t.match(await ok(['rollout', 'history', 'deploy/roll']), /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/);
    t.match(await ok(['rollout', 'undo', 'deploy/roll']), /deployment.apps\/roll rolled back/);
    t.match(await ok(['rollout', 'status', 'deploy/roll', '--timeout=30s']), /successfully rolled out/);
    t.equal(await ok(['get', 'deploy', 'roll', '-o', 'jsonpath={.spec.template.spec.containers[0].image}']), 'v1');
  } finally {
    kubelet = false;
    await readyLoop;
    await ok(['delete', 'deploy', 'roll']);
  }
});

t.test('get -w: the list, then the changes as they happen', async (t) => {
  const w = execa('kubectl', ['get', 'svc', '-w', '--output-watch-events', '-o', 'custom-columns=EVENT:.type,NAME:.object.metadata.name'], { env: { KUBECONFIG: env.cp.kubeconfig }, reject: false, buffer: true });
  let out = '';
  w.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await waitFor(() => /ADDED\s+web/.test(out), 'the initial list');
    await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: watched}\nspec: {ports: [{port: 81}]}\n' });
    await waitFor(() => /ADDED\s+watched/.test(out), 'the new Service');
    await ok(['label', 'svc', 'watched', 'x=y']);
    await waitFor(() => /MODIFIED\s+watched/.test(out), 'the change');
    await ok(['delete', 'svc', 'watched']);
    await waitFor(() => /DELETED\s+watched/.test(out), 'the deletion');
    t.pass('ADDED, MODIFIED and DELETED arrived in order');
    t.ok(out.indexOf('ADDED') < out.lastIndexOf('MODIFIED') && out.lastIndexOf('MODIFIED') < out.lastIndexOf('DELETED'));
  } finally {
    w.kill('SIGTERM');
    await w;
  }
});

const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, labels: {app: api}}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - {name: api, image: none, command: [nodenet, serve]}
`;

t.test('apply --server-side, scale, describe', async (t) => {
  t.match(await ok(['apply', '--server-side', '-f', file('dep.yaml', DEPLOY)]), /deployment\.apps\/api serverside-applied/);
  const d = JSON.parse(await ok(['get', 'deploy', 'api', '-o', 'json', '--show-managed-fields'])) as { spec: Record<string, unknown>; metadata: { managedFields?: { manager: string; operation: string }[] } };
  t.match(d.spec, { replicas: 2, revisionHistoryLimit: 10, progressDeadlineSeconds: 600, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } } });
  t.ok(d.metadata.managedFields?.some((e) => e.manager === 'kubectl' && e.operation === 'Apply'), 'kubectl\'s Apply entry (beside the controllers\' own)');
  t.match(await ok(['apply', '--server-side', '-f', file('dep.yaml', DEPLOY.replace('replicas: 2', 'replicas: 4'))]), /serverside-applied/);
  t.equal(await ok(['get', 'deploy', 'api', '-o', 'jsonpath={.spec.replicas}']), '4');
  t.match(await ok(['scale', 'deploy', 'api', '--replicas=3']), /deployment\.apps\/api scaled/);
  t.equal(await ok(['get', 'deploy', 'api', '-o', 'jsonpath={.spec.replicas}']), '3');
  const bad = await kubectl(['scale', 'deploy', 'api', '--replicas=-1']);
  t.not(bad.code, 0);

  const uid = await ok(['get', 'svc', 'web', '-o', 'jsonpath={.metadata.uid}']);
  await ok(['apply', '-f', '-'], {
    input: `apiVersion: v1
kind: Event
metadata: {name: web.1}
involvedObject: {kind: Service, name: web, namespace: default, apiVersion: v1, uid: ${uid}}
reason: Tested
message: an event for describe
type: Normal
source: {component: nodenet-test}
count: 1
`,
  });
  await ok(['apply', '-f', '-'], {
    input: `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}, {name: https, port: 8443, protocol: TCP}]
endpoints: [{addresses: [10.244.1.5], conditions: {ready: true}}]
`,
  });
  const desc = await ok(['describe', 'svc', 'web']);
  t.match(desc, /^Endpoints:\s+10\.244\.1\.5:8080$/m, 'the Service\'s EndpointSlices, found by the kubernetes.io/service-name label');
  t.match(desc, /^Name:\s+web\n/m);
  t.match(desc, /^Selector:\s+app=web$/m);
  t.match(desc, /^Port:\s+https\s+443\/TCP$/m);
  t.match(desc, /^Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n.*\n\s+Normal\s+Tested\s+.*nodenet-test\s+an event for describe/m, 'the Service\'s Events, found by involvedObject field selectors');
});

t.test('explain reads the served OpenAPI schema', async (t) => {
  const e = await ok(['explain', 'svc.spec.ports']);
  t.match(e, /FIELD: ports <\[\]ServicePort>/);
  t.match(e, /^ {2}port\t<integer>\n {4}The port that will be exposed by this service\./m);
  t.match(await ok(['explain', 'deployment.spec.strategy']), /rollingUpdate\s+<RollingUpdateDeployment>/);
});

t.test('an invalid manifest: "is invalid:" naming the field, nothing stored', async (t) => {
  const r = await kubectl(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: bad}\nspec: {ports: [{port: 70000}]}\n' });
  t.equal(r.code, 1);
  t.match(r.err, /The Service "bad" is invalid: .*spec\.ports\[0\]\.port: Invalid value: 70000: must be between 1 and 65535, inclusive/s);
  t.match((await kubectl(['get', 'svc', 'bad'])).err, /services "bad" not found/);
  const unknown = await kubectl(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: typo}\nspec: {portz: [{port: 80}]}\n' });
  t.equal(unknown.code, 1);
  t.match(unknown.err, /strict decoding error: unknown field "spec\.portz"/);
  t.match((await kubectl(['get', 'svc', 'typo'])).err, /not found/);
  const name = await kubectl(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Service\nmetadata: {name: Bad_Name}\nspec: {ports: [{port: 80}]}\n' });
  t.match(name.err, /metadata\.name: Invalid value: "Bad_Name"/);
});

t.test('delete cascades through ownerReferences: background, foreground, orphan', async (t) => {
  for (const cascade of ['background', 'foreground', 'orphan'] as const) {
    const dep = `api-${cascade}`;
    await ok(['apply', '-f', '-'], { input: DEPLOY.replace('name: api, labels', `name: ${dep}, labels`).replace(/app: api/g, `app: ${dep}`).replace('replicas: 2', 'replicas: 1') });
    // The Deployment controller makes its ReplicaSet, whose controller makes the Pod.
    let podName = '';
    await waitFor(async () => (podName = (await ok(['get', 'pods', '-l', `app=${dep}`, '-o', 'jsonpath={.items[*].metadata.name}'])).trim()) !== '', `${dep}'s Pod`);
    const rsName = (await ok(['get', 'rs', '-l', `app=${dep}`, '-o', 'jsonpath={.items[*].metadata.name}'])).trim();
    t.match(rsName, new RegExp(`^${dep}-[0-9a-z]{10}$`));
    t.match(podName, new RegExp(`^${rsName}-\\w{5}$`));
    t.match(await ok(['delete', 'deploy', dep, `--cascade=${cascade}`]), new RegExp(`deployment.apps "${dep}" deleted`));
    await waitFor(async () => (await kubectl(['get', 'deploy', dep])).code !== 0, `${dep} gone`);
    if (cascade === 'orphan') {
      await waitFor(async () => (await ok(['get', 'rs', rsName, '-o', 'jsonpath={.metadata.ownerReferences}'])) === '', 'the orphan loses its owner reference');
      t.equal((await kubectl(['get', 'pod', podName])).code, 0, `${cascade}: the pod stays`);
      await ok(['delete', 'rs', rsName]);
      await waitFor(async () => (await kubectl(['get', 'pod', podName])).code !== 0, 'the pod goes with its ReplicaSet');
    } else {
      await waitFor(async () => (await kubectl(['get', 'rs', rsName])).code !== 0 && (await kubectl(['get', 'pod', podName])).code !== 0, `${cascade}: the ReplicaSet and the Pod go`);
    }
    t.pass(`--cascade=${cascade}`);
  }
});

t.test('deleting a namespace deletes what is in it', async (t) => {
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Namespace\nmetadata: {name: doomed}\n' });
  await ok(['apply', '-n', 'doomed', '-f', file('dep2.yaml', DEPLOY)]);
  await ok(['apply', '-n', 'doomed', '-f', file('svc3.yaml', SVC)]);
  t.match(await ok(['delete', 'ns', 'doomed']), /namespace "doomed" deleted/);
  await waitFor(async () => (await kubectl(['get', 'ns', 'doomed'])).code !== 0, 'the namespace gone', { timeoutMs: 20_000 });
  t.equal(await ok(['get', 'all', '-n', 'doomed', '-o', 'name']), '', 'nothing left in it');

  // A namespace finalizer of someone else's holds it Terminating until that someone calls finalize.
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Namespace\nmetadata: {name: held}\nspec: {finalizers: [kubernetes, example.com/hold]}\n' });
  await ok(['delete', 'ns', 'held', '--wait=false']);
  await waitFor(async () => (await ok(['get', 'ns', 'held', '-o', 'jsonpath={.status.phase} {.spec.finalizers}'])) === 'Terminating ["example.com/hold"]', 'the kubernetes finalizer done, the other left');
  const refused = await kubectl(['apply', '-n', 'held', '-f', file('svc4.yaml', SVC)]);
  t.match(refused.err, /unable to create new content in namespace held because it is being terminated/);
  await ok(['replace', '--raw', '/api/v1/namespaces/held/finalize', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'held' }, spec: { finalizers: [] } }) });
  await waitFor(async () => (await kubectl(['get', 'ns', 'held'])).code !== 0, 'the namespace gone after finalize');
});

t.test('tokens: none or a wrong one is 401; a node token may not write Services (403)', async (t) => {
  const noTok = file('notoken.kubeconfig', (await import('node:fs')).readFileSync(env.cp.kubeconfig, 'utf8').replace(/token: .*/, 'token: wrong'));
  const r = await kubectl(['get', 'svc'], { kubeconfig: noTok });
  t.equal(r.code, 1);
  t.match(r.err, /Unauthorized|must be logged in/);
  const nodeKc = env.cp.nodeKubeconfig('n1');
  t.match(await ok(['get', 'svc', '-o', 'name'], { kubeconfig: nodeKc }), /service\/web/, 'a node reads');
  const w = await kubectl(['delete', 'svc', 'web'], { kubeconfig: nodeKc });
  t.equal(w.code, 1);
  t.match(w.err, /services "web" is forbidden: User "system:node:n1" cannot delete resource "services" in API group "" in the namespace "default"/);
  t.match(await ok(['get', '--raw', '/metrics']), /apiserver_request_total\{verb="LIST",group="",version="v1",resource="services"/);
  t.match(await ok(['get', '--raw', '/readyz']), /^ok/);
});

// kubectl create <generator> sends protobuf bodies (client-go's default for built-in kinds); the server decodes them into
// the JSON they stand for, which then goes the JSON path. run, expose, create -f, label, annotate, patch, scale, edit,
// replace, set and rollout restart send JSON (checked with kubectl -v=8).
t.test('kubectl create deployment|namespace|service: protobuf bodies, stored as their JSON would be', async (t) => {
  t.match(await ok(['create', 'namespace', 'pb-proto']), /^namespace\/pb-proto created$/m);
  t.match(await ok(['create', 'namespace', 'pb-json', '--dry-run=client', '-o', 'json']).then((j) => ok(['create', '-f', '-'], { input: j })), /namespace\/pb-json created/);
  t.equal(await ok(['get', 'ns', 'pb-proto', '-o', 'jsonpath={.status.phase} {.spec.finalizers}']), 'Active ["kubernetes"]');
  type Obj = { metadata: { labels?: unknown; managedFields?: { manager: string }[] }; spec: Record<string, unknown> };
  const get = async (kind: string, ns: string, name: string) => JSON.parse(await ok(['get', kind, name, '-n', ns, '-o', 'json', '--show-managed-fields'])) as Obj;

  // The same generator twice: once as protobuf, once as its --dry-run=client JSON through create -f.
  const gens: [string, string[]][] = [
    ['deployment', ['deployment', 'web', '--image=nodenet/host', '--', 'sleep', '1000']],
    ['deployment', ['deployment', 'w3', '--image=nodenet/host', '--replicas=3', '--port=8080']],
    ['service', ['service', 'clusterip', 'c1', '--tcp=80:8080', '--tcp=443']],
    ['service', ['service', 'nodeport', 'n1', '--tcp=80:8080']],
    ['service', ['service', 'loadbalancer', 'lb1', '--tcp=80:8080']],
    ['service', ['service', 'externalname', 'x1', '--external-name=x.example.com']],
  ];
  for (const [kind, args] of gens) {
    const name = kind === 'deployment' ? args[1]! : args[2]!;
    t.match(await ok(['create', '-n', 'pb-proto', ...args]), new RegExp(`^${kind === 'deployment' ? 'deployment\\.apps' : 'service'}/${name} created$`, 'm'), `create ${args.join(' ')}`);
    const json = await ok(['create', '-n', 'pb-json', '--dry-run=client', '-o', 'json', ...args]);
    await ok(['create', '-f', '-'], { input: json });
    const [a, b] = [await get(kind, 'pb-proto', name), await get(kind, 'pb-json', name)];
    // Allocated per object: the ClusterIPs and NodePorts differ; everything else must be the same.
    const norm = (o: Obj) => JSON.parse(JSON.stringify(o.spec).replace(/"clusterIPs?":(\["[^"]*"\]|"[^"]*")/g, '"clusterIP":"-"').replace(/"nodePort":\d+/g, '"nodePort":0')) as unknown;
    t.strictSame(norm(a), norm(b), `${kind} ${name}: the protobuf body's spec is the JSON body's`);
    t.strictSame(a.metadata.labels, b.metadata.labels, `${kind} ${name}: labels`);
    t.ok(a.metadata.managedFields?.some((m) => m.manager === 'kubectl-create'), `${kind} ${name}: kubectl-create's managed fields`);
  }
  const w3 = await get('deployment', 'pb-proto', 'w3');
  t.match(w3.spec, { replicas: 3, template: { spec: { containers: [{ name: 'host', image: 'nodenet/host', ports: [{ containerPort: 8080, protocol: 'TCP' }] }] } }, strategy: { type: 'RollingUpdate' } }, 'defaults applied');
  t.match(await ok(['get', 'svc', 'c1', '-n', 'pb-proto', '-o', 'jsonpath={.spec.clusterIP} {.spec.ports[*].targetPort}']), /^10\.\d+\.\d+\.\d+ 8080 443$/, 'a ClusterIP allocated; the targetPort defaulted to the port');
  const np = Number(await ok(['get', 'svc', 'n1', '-n', 'pb-proto', '-o', 'jsonpath={.spec.ports[0].nodePort}']));
  t.ok(np >= 30000 && np <= 32767, `NodePort ${np}`);
  t.equal(await ok(['get', 'svc', 'x1', '-n', 'pb-proto', '-o', 'jsonpath={.spec.type} {.spec.externalName}']), 'ExternalName x.example.com');

  // Errors come back as from a JSON body; a server-side dry run stores nothing.
  const taken = await kubectl(['create', 'service', 'nodeport', 'n2', '-n', 'pb-proto', '--tcp=80', `--node-port=${np}`]);
  t.equal(taken.code, 1);
  t.match(taken.err, new RegExp(`spec.ports\\[0\\].nodePort: Invalid value: ${np}: provided port is already allocated`));
  t.match(await ok(['create', 'deployment', 'dry', '-n', 'pb-proto', '--image=a', '--dry-run=server']), /deployment\.apps\/dry created \(server dry run\)/);
  t.match((await kubectl(['get', 'deploy', 'dry', '-n', 'pb-proto'])).err, /not found/);
  const dup = await kubectl(['create', 'namespace', 'pb-proto']);
  t.match(dup.err, /namespaces "pb-proto" already exists/);

  await ok(['delete', 'ns', 'pb-proto', 'pb-json']);
  await waitFor(async () => (await kubectl(['get', 'ns', 'pb-proto'])).code !== 0 && (await kubectl(['get', 'ns', 'pb-json'])).code !== 0, 'the namespaces gone', { timeoutMs: 20_000 });
});
