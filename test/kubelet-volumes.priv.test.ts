/**
 * Pods that talk to the API, end to end: `nodenet control-plane` in a lab,
 * one agent with the VXLAN overlay (its masquerade takes the Pods' traffic to
 * the API server), the iptables proxy and the embedded kubelet, the real
 * kubectl. Real processes in real mount namespaces:
 * (a) a Pod reads its mounted ConfigMap and sees it change after
 *     `kubectl apply`, in place;
 * (b) a Pod reads a Secret key through env; a missing key leaves the
 *     container in CreateContainerConfigError, in the kubelet's words;
 * (c) a Pod runs a Node script with @kubernetes/client-node's
 *     KubeConfig.loadFromCluster(), unchanged: it reaches the API server
 *     through KUBERNETES_SERVICE_HOST (the kubernetes Service's ClusterIP,
 *     DNATed by the node's proxy to the API server's advertise address),
 *     with the projected token, CA and namespace, lists what its Role allows
 *     and is refused the rest (403).
 * The node keeps nothing of it: no mountPath made on the node's filesystem,
 * no mount in its mount namespace, the Pods' directories gone with them.
 */
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Lab, LabControlPlane, VNode } from '../agent/src/lab/lab.js';
import { REPO } from '../agent/src/lab/lab.js';
import { newLab, shOk, NO_DNS } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

let lab: Lab;
let cp: LabControlPlane;
let n1: VNode;
const scratch = mkdtempSync('/tmp/nn-kv-');
const client = `${scratch}/client.mjs`;
const mountsBefore = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => / nodenet-(stage|overlay|emptydir) /.test(l) || l.includes('/secrets/kubernetes.io') || l.includes(' /etc/app '));

async function kubectl(...args: string[]): Promise<string> {
  const r = await cp.kubectl(args, true);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
async function apply(...objs: Record<string, unknown>[]): Promise<void> {
  const r = await cp.kubectl(['apply', '-f', '-'], true, objs.map((o) => JSON.stringify(o)).join('\n'));
  if (r.exitCode !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
}
const jp = async (pod: string, path: string) => (await cp.kubectl(['get', 'pod', pod, '-o', `jsonpath=${path}`], true)).stdout.trim();
const logs = async (pod: string) => (await cp.kubectl(['logs', pod], true)).stdout;

async function waitPod(pod: string, path: string, want: RegExp, what: string, timeoutMs = 60_000): Promise<string> {
  let last = '';
  try {
    await waitFor(async () => want.test((last = await jp(pod, path))), what, { timeoutMs, intervalMs: 250 });
  } catch (e) {
    const all = (await cp.kubectl(['get', 'pod', pod, '-o', 'json'], true)).stdout;
    const ev = (await cp.kubectl(['get', 'events', '--field-selector', `involvedObject.name=${pod}`], true)).stdout;
    const log = (await shOk(['tail', '-n', '40', n1.logFile])).stdout;
    throw new Error(`${(e as Error).message}: last ${JSON.stringify(last)}\n${all.slice(0, 3000)}\nevents:\n${ev}\nagent log:\n${log}`);
  }
  return last;
}
async function waitLogs(pod: string, want: RegExp, what: string): Promise<string> {
  let last = '';
  try {
    await waitFor(async () => want.test((last = await logs(pod))), what, { timeoutMs: 60_000, intervalMs: 250 });
  } catch (e) {
    throw new Error(`${(e as Error).message}: logs ${JSON.stringify(last)}`);
  }
  return last;
}

/** The projected volume the ServiceAccount admission plugin injects (upstream's kube-api-access-<5 chars>), given explicitly. */
const KUBE_API_ACCESS = { name: 'kube-api-access-x7k2q', projected: { defaultMode: 420, sources: [
  { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
  { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
  { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
] } };
const SA_MOUNT = { name: 'kube-api-access-x7k2q', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };
const pod = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 2, ...spec } });
const host = (name: string, command: string[], extra: Record<string, unknown> = {}) => ({ name, image: 'nodenet/host', command, ...extra });

t.before(async () => {
  writeFileSync(client, [
    `import { CoreV1Api, KubeConfig } from ${JSON.stringify(`${REPO}node_modules/@kubernetes/client-node/dist/index.js`)};`,
    'const kc = new KubeConfig();',
    'kc.loadFromCluster();',
    'const core = kc.makeApiClient(CoreV1Api);',
    'console.log(`server ${kc.getCurrentCluster().server} namespace ${kc.getContextObject(kc.getCurrentContext()).namespace}`);',
    "const pods = await core.listNamespacedPod({ namespace: 'default' });",
    "console.log(`pods ${pods.items.map((p) => p.metadata.name).sort().join(',')}`);",
    "try { await core.listNamespacedSecret({ namespace: 'default' }); console.log('secrets listed'); } catch (e) { console.log(`secrets ${e.code} ${JSON.parse(e.body).message}`); }",
  ].join('\n'));
  lab = await newLab('kv');
  cp = await lab.startControlPlane({ nodes: ['n1'], args: NO_DNS });
  n1 = await lab.addNode('n1', { clusterCIDR: '10.244.0.0/16', config: { overlay: 'vxlan', runPods: true, proxyMode: 'iptables', proxyMinSyncMs: 100 } });
  await n1.startAgent();
  await waitFor(async () => (await cp.kubectl(['get', 'nodes', 'n1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'], true)).stdout === 'True', 'n1 Ready', { timeoutMs: 60_000 });
  await apply(
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { greeting: 'hello' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: 's3cret' } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'reader' } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'pod-reader' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'reader-reads-pods' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' }, subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'default' }] },
  );
  await apply(
    pod('cfg', { volumes: [{ name: 'config', configMap: { name: 'app-config' } }], containers: [host('cfg', ['sh', '-c', 'echo "password=$PASSWORD"; last=; while :; do g=$(cat /etc/app/greeting); [ "$g" != "$last" ] && echo "greeting=$g"; last=$g; sleep 0.2; done'], {
      volumeMounts: [{ name: 'config', mountPath: '/etc/app', readOnly: true }],
      env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } }],
    })] }),
    pod('nokey', { containers: [host('nokey', ['sleep', '100'], { env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'nokey' } } }] })] }),
    pod('client', { serviceAccountName: 'reader', restartPolicy: 'Never', volumes: [KUBE_API_ACCESS], containers: [host('client', ['sh', '-c', `echo "env $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; exec ${process.execPath} ${client}`], { volumeMounts: [SA_MOUNT] })] }),
  );
});
t.teardown(async () => {
  await lab?.destroy();
  rmSync(scratch, { recursive: true, force: true });
});

t.test('(a) a mounted ConfigMap is read, and seen changed after kubectl apply; (b) a Secret key through env', async (t) => {
  await waitPod('cfg', '{.status.phase}', /^Running$/, 'cfg Running');
  await waitLogs('cfg', /greeting=hello/, 'cfg read its ConfigMap');
  t.match(await logs('cfg'), /^password=s3cret\ngreeting=hello\n/, 'the Secret key through env, the ConfigMap through the volume');
  t.notOk(existsSync('/etc/app'), 'the mountPath was not made on the node');
  await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { greeting: 'bonjour' } });
  await waitLogs('cfg', /greeting=bonjour/, 'cfg saw the new greeting');
  t.equal(await jp('cfg', '{.status.containerStatuses[0].restartCount}'), '0', 'in place, no restart');
  t.match(await logs('cfg'), /^password=s3cret\n/, 'env as it was');
});

t.test('(b) a missing key: CreateContainerConfigError with the kubelet\'s message', async (t) => {
  const state = await waitPod('nokey', '{.status.containerStatuses[0].state.waiting.reason}', /^CreateContainerConfigError$/, 'nokey waits');
  t.equal(state, 'CreateContainerConfigError');
  t.equal(await jp('nokey', '{.status.containerStatuses[0].state.waiting.message}'), "couldn't find key nokey in Secret default/creds");
  const ev = await kubectl('get', 'events', '--field-selector', 'involvedObject.name=nokey', '-o', 'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}');
  t.match(ev, /Failed: Error: couldn't find key nokey in Secret default\/creds/);
});

t.test('(c) client-node\'s loadFromCluster() in a Pod: through the kubernetes Service, its Role\'s reads allowed, the rest forbidden', async (t) => {
  await waitPod('client', '{.status.phase}', /^(Succeeded|Failed)$/, 'client done', 90_000);
  const out = await logs('client');
  t.match(out, /^env 10\.96\.0\.1:443\n/, 'KUBERNETES_SERVICE_HOST and _PORT from the kubernetes Service');
  t.match(out, /\nserver https:\/\/10\.96\.0\.1:443 namespace default\n/, 'loadFromCluster: the ClusterIP, the projected namespace');
  t.match(out, /\npods [^\n]*\bclient\b[^\n]*\bcfg\b|\npods [^\n]*\bcfg\b[^\n]*\bclient\b/, 'its Role lets it list Pods');
  t.match(out, /\nsecrets 403 secrets is forbidden: User "system:serviceaccount:default:reader" cannot list resource "secrets" in API group "" in the namespace "default"\n/, 'and nothing else');
  t.equal(await jp('client', '{.status.phase}'), 'Succeeded', out);
});

t.test('the node keeps nothing: no mount in its namespace, no mountPath, the Pods\' directories gone with them', async (t) => {
  t.same(mountsBefore(), [], 'no stage, overlay, tmpfs or volume mount in the node\'s mount namespace');
  t.notOk(existsSync('/run/secrets/kubernetes.io'), 'no ServiceAccount directory on the node');
  const uids = await Promise.all(['cfg', 'client'].map((p) => jp(p, '{.metadata.uid}')));
  t.ok(uids.every((u) => existsSync(`${n1.runDir}/kubelet/${u}/.volumes`)), 'the Pods with volumes have them on the node while they exist');
  await kubectl('delete', 'pod', 'cfg', 'nokey', 'client', '--timeout=60s');
  t.same(uids.filter((u) => existsSync(`${n1.runDir}/kubelet/${u}`)), [], 'and none once deleted');
  t.same(mountsBefore(), []);
});
