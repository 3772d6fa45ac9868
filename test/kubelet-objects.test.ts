/**
 * What the kubelet reads and asks, against the embedded control plane with
 * the node's own credentials (no root): its object watches
 * (pods/object-watch.ts) get the ConfigMaps and Secrets a Pod bound to the
 * node refers to, one watch each pinned by fieldSelector metadata.name, see
 * them change, and are refused (then time out in upstream's words) for one
 * no Pod of the node refers to; the Services; and TokenRequest
 * (kubelet-api.ts's requestToken) for a Pod's ServiceAccount, bound to it.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { realClock } from '../lib/reconcile/clock.js';
import { kubeletApi } from '../agent/src/pods/kubelet-api.js';
import { ObjectWatches } from '../agent/src/pods/object-watch.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { loadKubeConfig } from '../agent/src/watch/kube-source.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-kubelet-objects-'));
let cp: ControlPlane;
let core: CoreV1Api;
let watches: ObjectWatches;
t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1'] });
  core = loadKubeConfig(cp.kubeconfig).makeApiClient(CoreV1Api);
});
t.teardown(async () => {
  watches?.stop();
  try {
    await cp?.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t.test('the objects a Pod of the node refers to are watched one by one and seen changing; another is refused; the Services are listed', async (t) => {
  await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'cm1' }, data: { k: 'v1' } } });
  await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'unreferenced' }, data: { k: 'x' } } });
  await core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 's1' }, stringData: { password: 's3cret' } } });
  const pod = await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'p1' }, spec: { nodeName: 'n1', automountServiceAccountToken: false, volumes: [{ name: 'c', configMap: { name: 'cm1' } }, { name: 'm', configMap: { name: 'missing', optional: true } }], containers: [{ name: 'c', image: 'nodenet/host', command: ['x'], env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 's1', key: 'password' } } }] }] } } });
  watches = new ObjectWatches({ kubeconfig: loadKubeConfig(cp.nodeKubeconfig('n1')), clock: realClock, log: silentLogger(), syncTimeoutMs: 2000 });
  await watches.start();
  const changes: string[] = [];
  watches.onChange((kind, ns, name) => changes.push(`${kind} ${ns}/${name}`));
  const uid = pod.metadata!.uid!;
  watches.register(uid, 'default', { configMaps: ['cm1', 'missing'], secrets: ['s1'] });
  t.match(await watches.get('configMap', 'default', 'cm1'), { metadata: { name: 'cm1' }, data: { k: 'v1' } });
  const secret = await watches.get('secret', 'default', 's1');
  t.equal(Buffer.from((secret?.['data'] as Record<string, string>)['password']!, 'base64').toString(), 's3cret', 'a Secret, its data base64');
  t.equal(await watches.get('configMap', 'default', 'missing'), null, 'one that does not exist: null, once listed');
  await core.replaceNamespacedConfigMap({ namespace: 'default', name: 'cm1', body: { metadata: { name: 'cm1' }, data: { k: 'v2' } } });
  await waitFor(async () => ((await watches.get('configMap', 'default', 'cm1'))?.['data'] as Record<string, string> | undefined)?.['k'] === 'v2', 'the change through the watch');
  t.ok(changes.includes('configMap default/cm1'), 'announced');

  watches.register(uid, 'default', { configMaps: ['cm1', 'missing', 'unreferenced'], secrets: ['s1'] });
  await t.rejects(watches.get('configMap', 'default', 'unreferenced'), /^failed to sync configmaps cache: timed out waiting for the condition$/, 'the Node authorizer refuses it: never listed');
  await t.rejects(watches.get('configMap', 'default', 'other'), /no Pod of this node refers to it/, 'one never registered');

  const services = await watches.services();
  t.ok(services.some((s) => (s['metadata'] as Record<string, unknown>)['name'] === 'kubernetes'), 'the Services, the kubernetes one among them');
  t.same(watches.watched(), ['configMap default/cm1', 'configMap default/missing', 'configMap default/unreferenced', 'secret default/s1']);
  watches.unregister(uid);
  t.same(watches.watched(), [], 'the Pod gone: nothing watched');
});

t.test('TokenRequest with the node\'s credentials: a token for its Pod\'s ServiceAccount, bound to the Pod; refused for another', async (t) => {
  const api = kubeletApi(loadKubeConfig(cp.nodeKubeconfig('n1')));
  const pod = await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'p2' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nodenet/host', command: ['x'] }] } } });
  const before = Date.now();
  const tok = await api.requestToken({ serviceAccount: 'default', namespace: 'default', audiences: [], expirationSeconds: 3607, pod: { name: 'p2', uid: pod.metadata!.uid! } });
  t.match(tok.token, /^ey[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');
  t.ok(tok.expiresAt >= before + 3600_000 && tok.expiresAt <= Date.now() + 3608_000, 'expiring in about 3607 s');
  t.equal(tok.expirationSeconds, 3607);
  const claims = JSON.parse(Buffer.from(tok.token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
  t.match(claims, { sub: 'system:serviceaccount:default:default', 'kubernetes.io': { pod: { name: 'p2', uid: pod.metadata!.uid } } }, 'bound to the Pod');
  await t.rejects(api.requestToken({ serviceAccount: 'default', namespace: 'default', audiences: [], expirationSeconds: 3607, pod: { name: 'p2', uid: 'not-its-uid' } }), /: 409 /, 'not for another uid (upstream\'s Conflict)');
  await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'other' } } });
  await t.rejects(api.requestToken({ serviceAccount: 'other', namespace: 'default', audiences: [], expirationSeconds: 3607, pod: { name: 'p2', uid: pod.metadata!.uid! } }), /403/, 'not for a ServiceAccount the Pod does not run as');
});
