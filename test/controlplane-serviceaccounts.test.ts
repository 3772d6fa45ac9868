/**
 * ServiceAccounts and their tokens through the real kubectl (issue 27): a default ServiceAccount and the
 * kube-root-ca.crt ConfigMap in every namespace, made again when deleted; `kubectl create token` (audience, duration,
 * bound to a Pod); the token as kubectl's credentials (whoami, refused until a RoleBinding names the ServiceAccount);
 * TokenReview; and the bad cases: a token for another audience, one whose Pod is gone, a forged one, an expired one, a duration under
 * 10 minutes, a ServiceAccount that does not exist. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { startControlPlane } from '../controlplane/control-plane.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-sa-'));
const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, nodes: ['n1'] });
t.teardown(async () => {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});

const kubectl = async (args: string[], o: { token?: string; input?: string } = {}) => {
  const r = await execa('kubectl', ['--kubeconfig', cp.kubeconfig, ...(o.token ? ['--token', o.token] : []), ...args], { reject: false, timeout: 60_000, ...(o.input !== undefined ? { input: o.input } : {}) });
  return { code: r.exitCode ?? -1, out: String(r.stdout), err: String(r.stderr) };
};
const ok = async (args: string[], o: { token?: string; input?: string } = {}) => {
  const r = await kubectl(args, o);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.err}`);
  return r.out;
};
const waitFor = async (what: string, f: () => Promise<boolean>) => {
  for (let i = 0; i < 100; i++) {
    if (await f()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
};

t.test('every namespace has a default ServiceAccount and kube-root-ca.crt, made again when deleted', async (t) => {
  await ok(['create', 'namespace', 'team']);
  await waitFor('the default ServiceAccount in team', async () => (await kubectl(['get', 'sa', 'default', '-n', 'team'])).code === 0);
  await waitFor('kube-root-ca.crt in team', async () => (await kubectl(['get', 'cm', 'kube-root-ca.crt', '-n', 'team'])).code === 0);
  const cm = JSON.parse(await ok(['get', 'cm', 'kube-root-ca.crt', '-n', 'team', '-o', 'json'])) as { data: Record<string, string> };
  t.match(cm.data['ca.crt'], /^-----BEGIN CERTIFICATE-----/);
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) t.equal((await kubectl(['get', 'sa', 'default', '-n', ns])).code, 0, ns);
  const uid = (await ok(['get', 'sa', 'default', '-n', 'team', '-o', 'jsonpath={.metadata.uid}'])).trim();
  await ok(['delete', 'sa', 'default', '-n', 'team']);
  await waitFor('made again', async () => {
    const r = await kubectl(['get', 'sa', 'default', '-n', 'team', '-o', 'jsonpath={.metadata.uid}']);
    return r.code === 0 && r.out.trim() !== uid;
  });
  t.pass('deleted, and back with another uid');
  t.match(await ok(['get', 'sa', '-n', 'team']), /NAME\s+SECRETS\s+AGE\ndefault\s+0\s+/);
});

t.test('kubectl create token: the token is that ServiceAccount, under RBAC', async (t) => {
  await ok(['create', 'serviceaccount', 'robot']);
  const token = (await ok(['create', 'token', 'robot', '--duration', '15m'])).trim();
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number; iat: number; sub: string; aud: string[] };
  t.equal(claims.exp - claims.iat, 900, '--duration 15m');
  t.same(claims.aud, ['https://kubernetes.default.svc.cluster.local']);
  const who = JSON.parse(await ok(['auth', 'whoami', '-o', 'json'], { token })) as { status: { userInfo: { username: string; groups: string[] } } };
  t.equal(who.status.userInfo.username, 'system:serviceaccount:default:robot');
  t.same(who.status.userInfo.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']);
  const denied = await kubectl(['get', 'pods'], { token });
  t.match(denied.err, /pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default"/);
  await ok(['create', 'rolebinding', 'robot-view', '--clusterrole=view', '--serviceaccount=default:robot']);
  await waitFor('robot may list pods', async () => (await kubectl(['get', 'pods'], { token })).code === 0);
  t.pass('allowed after the RoleBinding');
});

t.test('a token bound to a Pod dies with the Pod', async (t) => {
  await ok(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'holder' }, spec: { containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '100'] }] } }) });
  const token = (await ok(['create', 'token', 'robot', '--bound-object-kind', 'Pod', '--bound-object-name', 'holder'])).trim();
  t.equal((await kubectl(['auth', 'whoami'], { token })).code, 0, 'valid while the Pod is there');
  const who = JSON.parse(await ok(['auth', 'whoami', '-o', 'json'], { token })) as { status: { userInfo: { extra: Record<string, string[]> } } };
  t.same(who.status.userInfo.extra['authentication.kubernetes.io/pod-name'], ['holder'], 'the Pod in the user\'s extra');
  await ok(['delete', 'pod', 'holder', '--grace-period=0', '--force']);
  await waitFor('the token refused', async () => (await kubectl(['auth', 'whoami'], { token })).code !== 0);
  t.match((await kubectl(['get', 'pods'], { token })).err, /Unauthorized|must be logged in/);
  const gone = await kubectl(['create', 'token', 'robot', '--bound-object-kind', 'Pod', '--bound-object-name', 'holder']);
  t.match(gone.err, /pods "holder" not found/, 'no token for a Pod that is not there');
});

t.test('audiences: refused by the API server, accepted by a TokenReview for that audience', async (t) => {
  const token = (await ok(['create', 'token', 'robot', '--audience', 'vault'])).trim();
  t.match((await kubectl(['get', 'pods'], { token })).err, /Unauthorized|must be logged in/, 'not the API server\'s audience');
  const review = (audiences: string[]) => ok(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences } }) });
  const yes = JSON.parse(await review(['vault'])) as { status: { authenticated: boolean; user: { username: string }; audiences: string[] } };
  t.equal(yes.status.authenticated, true);
  t.equal(yes.status.user.username, 'system:serviceaccount:default:robot');
  t.same(yes.status.audiences, ['vault']);
  const no = JSON.parse(await review([])) as { status: { authenticated?: boolean } };
  t.notOk(no.status.authenticated, 'not for the API server\'s audience');
});

t.test('bad input: a forged token, a short duration, a missing ServiceAccount; nothing changes', async (t) => {
  const token = (await ok(['create', 'token', 'robot'])).trim();
  const [h, p, s] = token.split('.');
  const forged = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'system:serviceaccount:kube-system:default' })).toString('base64url')}.${s}`;
  t.match((await kubectl(['get', 'pods'], { token: forged })).err, /Unauthorized|must be logged in/);
  // Expired: the same claims, signed with the cluster's own key (pki/sa.key) so that only the time is wrong.
  const { createSign } = await import('node:crypto');
  const { readFileSync } = await import('node:fs');
  const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
  const past = Math.floor(Date.now() / 1000) - 7200;
  const body = `${h}.${Buffer.from(JSON.stringify({ ...claims, iat: past, nbf: past, exp: past + 3600 })).toString('base64url')}`;
  const expired = `${body}.${createSign('RSA-SHA256').update(body).sign(readFileSync(join(dir, 'pki', 'sa.key'))).toString('base64url')}`;
  t.match((await kubectl(['get', 'pods'], { token: expired })).err, /Unauthorized|must be logged in/, 'an expired token, well signed');
  const review = JSON.parse(await ok(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: expired } }) })) as { status: { authenticated?: boolean; error?: string } };
  t.notOk(review.status.authenticated, `a TokenReview says so too: ${review.status.error ?? ''}`);
  const fresh = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  t.equal((await kubectl(['auth', 'whoami'], { token: `${fresh}.${createSign('RSA-SHA256').update(fresh).sign(readFileSync(join(dir, 'pki', 'sa.key'))).toString('base64url')}` })).code, 0, 'the same claims re-signed the same way and not expired are accepted (the test signs as the server does)');
  const short = await kubectl(['create', 'token', 'robot', '--duration', '5m']);
  t.match(short.err, /spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes/);
  const missing = await kubectl(['create', 'token', 'nobody']);
  t.match(missing.err, /serviceaccounts "nobody" not found/);
  t.equal((await kubectl(['get', 'sa', 'nobody'])).code, 1, 'no ServiceAccount was made');
});

t.test('a node (its kubelet) reads only what its Pods use, and asks tokens only for them', async (t) => {
  const node = (args: string[]) => execa('kubectl', ['--kubeconfig', cp.nodeKubeconfig('n1'), ...args], { reject: false, timeout: 60_000 }).then((r) => ({ code: r.exitCode ?? -1, out: String(r.stdout), err: String(r.stderr) }));
  for (const cm of ['used', 'other']) await ok(['create', 'configmap', cm, '--from-literal=k=v']);
  await ok(['create', 'secret', 'generic', 'pw', '--from-literal=p=1']);
  await ok(['apply', '-f', '-'], { input: JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'on-n1' },
    spec: {
      nodeName: 'n1', serviceAccountName: 'robot', volumes: [{ name: 'c', configMap: { name: 'used' } }],
      containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '100'], env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'pw', key: 'p' } } }] }],
    },
  }) });
  const uid = (await ok(['get', 'pod', 'on-n1', '-o', 'jsonpath={.metadata.uid}'])).trim();
  t.equal((await node(['get', 'configmap', 'used'])).code, 0, 'the ConfigMap its Pod mounts');
  t.equal((await node(['get', 'secret', 'pw'])).code, 0, 'the Secret its Pod reads in env');
  t.match((await node(['get', 'configmap', 'other'])).err, /configmaps "other" is forbidden: User "system:node:n1" cannot get resource "configmaps"/);
  t.match((await node(['get', 'configmaps'])).err, /cannot list resource "configmaps"/, 'not the list of them');
  t.equal((await node(['get', '--raw', '/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name=used'])).code, 0, 'a list pinned to that one by metadata.name (the kubelet\'s watch)');
  const tr = (sa: string, ref?: Record<string, string>) => execa('kubectl', ['--kubeconfig', cp.nodeKubeconfig('n1'), 'create', '--raw', `/api/v1/namespaces/default/serviceaccounts/${sa}/token`, '-f', '-'], { reject: false, input: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { ...(ref ? { boundObjectRef: ref } : {}) } }) });
  const good = await tr('robot', { apiVersion: 'v1', kind: 'Pod', name: 'on-n1', uid });
  t.equal(good.exitCode, 0, `a token for its Pod's ServiceAccount, bound to the Pod: ${String(good.stderr)}`);
  t.match(String((await tr('robot')).stderr), /node requested token not bound to a pod/);
  t.match(String((await tr('default', { apiVersion: 'v1', kind: 'Pod', name: 'on-n1', uid })).stderr), /serviceaccounts "default" is forbidden: User "system:node:n1" cannot create resource "serviceaccounts\/token"/, 'a ServiceAccount no Pod of its uses');
  await ok(['delete', 'pod', 'on-n1', '--grace-period=0', '--force']);
});

t.test('the serving certificate names what in-cluster clients dial: 10.96.0.1 and kubernetes.default.svc...', async (t) => {
  const { X509Certificate } = await import('node:crypto');
  const { readFileSync } = await import('node:fs');
  const x = new X509Certificate(readFileSync(join(dir, 'pki', 'apiserver.crt')));
  t.equal(x.checkIP('10.96.0.1'), '10.96.0.1');
  for (const h of ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']) t.equal(x.checkHost(h), h, h);
});
