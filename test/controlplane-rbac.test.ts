/**
 * RBAC through the real kubectl and the official Python client (issue 27): a user from `add-user` is refused, then
 * allowed after a RoleBinding; `auth can-i` (allowed, denied, --list), `auth whoami`, `--as` and `--as-group` with
 * the impersonate verb; the escalation check refusing a binding of rights the writer lacks (nothing changes); the
 * aggregation of a labelled ClusterRole into `view`; the bootstrap roles with upstream's names; and the Python client
 * as a user with a narrow Role: allowed calls, and the 403 Status upstream returns for the rest. No root needed.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:https';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { startControlPlane } from '../controlplane/control-plane.js';
import { addUser } from '../controlplane/users.js';
import { createLogger } from '../lib/log/log.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-rbac-'));
const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir });
t.teardown(async () => {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});

const kubectl = async (kubeconfig: string, args: string[], input?: string) => {
  const r = await execa('kubectl', ['--kubeconfig', kubeconfig, ...args], { reject: false, timeout: 60_000, ...(input !== undefined ? { input } : {}) });
  return { code: r.exitCode ?? -1, out: String(r.stdout), err: String(r.stderr) };
};
const admin = (...args: string[]) => kubectl(cp.kubeconfig, args);
const ok = async (kc: string, args: string[], input?: string) => {
  const r = await kubectl(kc, args, input);
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

const bob = addUser(dir, 'bob', ['dev']);

t.test('the bootstrap roles and bindings, with upstream\'s names', async (t) => {
  const roles = (await ok(cp.kubeconfig, ['get', 'clusterroles', '-o', 'name'])).trim().split('\n');
  for (const n of ['cluster-admin', 'admin', 'edit', 'view', 'system:basic-user', 'system:discovery', 'system:kube-scheduler', 'system:controller:replicaset-controller']) t.ok(roles.includes(`clusterrole.rbac.authorization.k8s.io/${n}`), n);
  const crb = JSON.parse(await ok(cp.kubeconfig, ['get', 'clusterrolebinding', 'cluster-admin', '-o', 'json'])) as { subjects: { kind: string; name: string }[] };
  t.same(crb.subjects.map((s) => `${s.kind}/${s.name}`), ['Group/system:masters']);
  await waitFor('view aggregated', async () => JSON.parse(await ok(cp.kubeconfig, ['get', 'clusterrole', 'view', '-o', 'json'])).rules?.length > 0);
  const edit = JSON.parse(await ok(cp.kubeconfig, ['get', 'clusterrole', 'edit', '-o', 'json'])) as { rules: { resources?: string[]; verbs: string[] }[] };
  t.ok(edit.rules.some((r) => r.resources?.includes('pods') && r.verbs.includes('create')), 'edit aggregates system:aggregate-to-edit');
  t.ok(edit.rules.some((r) => r.resources?.includes('pods') && r.verbs.includes('list')), 'and view\'s rules (view is labelled aggregate-to-edit)');
});

t.test('a user is refused, then allowed after a RoleBinding; can-i and whoami say so', async (t) => {
  const denied = await kubectl(bob, ['get', 'pods', '-n', 'default']);
  t.not(denied.code, 0);
  t.match(denied.err, /pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"/);
  t.equal((await kubectl(bob, ['auth', 'can-i', 'list', 'pods'])).out.trim(), 'no');
  const who = await ok(bob, ['auth', 'whoami', '-o', 'json']);
  t.same(JSON.parse(who).status.userInfo, { username: 'bob', groups: ['dev', 'system:authenticated'] }, 'whoami: the certificate\'s CN and O');
  await ok(cp.kubeconfig, ['create', 'rolebinding', 'bob-view', '--clusterrole=view', '--user=bob', '-n', 'default']);
  await waitFor('bob may list pods', async () => (await kubectl(bob, ['get', 'pods', '-n', 'default'])).code === 0);
  t.equal((await kubectl(bob, ['auth', 'can-i', 'list', 'pods'])).out.trim(), 'yes');
  t.equal((await kubectl(bob, ['auth', 'can-i', 'delete', 'pods'])).out.trim(), 'no');
  t.equal((await kubectl(bob, ['auth', 'can-i', 'list', 'pods', '-n', 'kube-system'])).out.trim(), 'no', 'only in the RoleBinding\'s namespace');
  const list = await ok(bob, ['auth', 'can-i', '--list', '-n', 'default']);
  t.match(list, /pods\s+\[\]\s+\[\]\s+\[get list watch\]/, `--list:\n${list}`);
  t.match(list, /selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]/);
  t.match(list, /\[\/api\/\*\]\s+\[\]\s+\[get\]/, 'the non-resource URLs of system:discovery');
  const rb = await ok(cp.kubeconfig, ['get', 'rolebinding', 'bob-view', '-n', 'default', '-o', 'wide']);
  t.match(rb, /bob-view\s+ClusterRole\/view\s+\S+\s+bob/, `the RoleBinding's table: ${rb}`);
});

t.test('--as and --as-group: applied for an admin, refused without the impersonate verb', async (t) => {
  t.equal((await admin('auth', 'can-i', 'list', 'pods', '--as', 'bob')).out.trim(), 'yes', 'an admin as bob');
  t.equal((await admin('auth', 'can-i', 'list', 'secrets', '--as', 'bob')).out.trim(), 'no');
  const who = JSON.parse(await ok(cp.kubeconfig, ['auth', 'whoami', '--as', 'carol', '--as-group', 'qa', '-o', 'json']));
  t.same(who.status.userInfo, { username: 'carol', groups: ['qa', 'system:authenticated'] });
  const r = await admin('get', 'pods', '--as', 'carol');
  t.match(r.err, /pods is forbidden: User "carol" cannot list resource "pods"/, 'the request runs as carol');
  const imp = await kubectl(bob, ['get', 'pods', '--as', 'carol']);
  t.match(imp.err, /users "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope/);
  const grp = await admin('get', 'ns', '--as', 'carol', '--as-group', 'system:masters');
  t.equal(grp.code, 0, 'an admin may impersonate system:masters (cluster-admin holds every verb)');
});

t.test('the escalation check: a binding of rights the writer lacks is refused and stores nothing', async (t) => {
  await ok(cp.kubeconfig, ['create', 'role', 'binder', '--verb=create,get,list', '--resource=rolebindings.rbac.authorization.k8s.io', '-n', 'default']);
  await ok(cp.kubeconfig, ['create', 'rolebinding', 'bob-binder', '--role=binder', '--user=bob', '-n', 'default']);
  await waitFor('bob may create rolebindings', async () => (await kubectl(bob, ['auth', 'can-i', 'create', 'rolebindings'])).out.trim() === 'yes');
  const esc = await kubectl(bob, ['create', 'rolebinding', 'carol-edit', '--clusterrole=edit', '--user=carol', '-n', 'default']);
  t.not(esc.code, 0);
  t.match(esc.err, /rolebindings.rbac.authorization.k8s.io "carol-edit" is forbidden: user "bob" \(groups=\["dev" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:/);
  t.match(esc.err, /\{APIGroups:\[""\], Resources:\["pods"\], Verbs:\["create"\]\}/);
  t.not((await admin('get', 'rolebinding', 'carol-edit', '-n', 'default')).code, 0, 'nothing stored');
  await ok(bob, ['create', 'rolebinding', 'carol-view', '--clusterrole=view', '--user=carol', '-n', 'default']);
  t.pass('binding view, which bob holds, is allowed');
  const role = await kubectl(bob, ['create', 'role', 'x', '--verb=get', '--resource=pods', '-n', 'default']);
  t.match(role.err, /roles.rbac.authorization.k8s.io is forbidden: User "bob" cannot create resource "roles"/, 'creating roles needs its own grant');
});

t.test('aggregation: a ClusterRole labelled aggregate-to-view joins view', async (t) => {
  const cr = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'widget-viewer', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } }, rules: [{ apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get', 'list'] }] };
  await ok(cp.kubeconfig, ['apply', '-f', '-'], JSON.stringify(cr));
  await waitFor('widgets in view', async () => (await ok(cp.kubeconfig, ['get', 'clusterrole', 'view', '-o', 'json'])).includes('widgets'));
  // (kubectl auth can-i sends a resource discovery does not know as it is typed, group and all in `resource`: a
  // review names the group itself.)
  const ssar = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { namespace: 'default', verb: 'list', group: 'example.com', resource: 'widgets' } } };
  const answer = JSON.parse(await ok(bob, ['create', '-f', '-', '-o', 'json'], JSON.stringify(ssar))) as { status: { allowed: boolean; reason?: string } };
  t.equal(answer.status.allowed, true, 'bob, bound to view, may list widgets');
  t.match(answer.status.reason, /RoleBinding "default\/bob-view" of ClusterRole "view" to User "bob"/);
  await ok(cp.kubeconfig, ['delete', 'clusterrole', 'widget-viewer']);
  await waitFor('widgets gone from view', async () => !(await ok(cp.kubeconfig, ['get', 'clusterrole', 'view', '-o', 'json'])).includes('widgets'));
  t.pass('and leaves it when deleted');
});

t.test('the Python client as a user with a narrow Role: allowed calls, and upstream\'s 403 Status for the rest', async (t) => {
  const py = addUser(dir, 'dana', []);
  await ok(cp.kubeconfig, ['create', 'role', 'cm-reader', '--verb=get,list', '--resource=configmaps', '-n', 'default']);
  await ok(cp.kubeconfig, ['create', 'rolebinding', 'dana-cm', '--role=cm-reader', '--user=dana', '-n', 'default']);
  await ok(cp.kubeconfig, ['create', 'configmap', 'settings', '--from-literal=a=b', '-n', 'default']);
  const script = `
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
out = {}
out["configmaps"] = [c.metadata.name for c in v1.list_namespaced_config_map("default").items]
out["get"] = v1.read_namespaced_config_map("settings", "default").data
for name, call in [("secrets", lambda: v1.list_namespaced_secret("default")), ("other-ns", lambda: v1.list_namespaced_config_map("kube-system")), ("write", lambda: v1.delete_namespaced_config_map("settings", "default"))]:
    try:
        call()
        out[name] = "allowed"
    except ApiException as e:
        out[name] = {"status": e.status, "body": json.loads(e.body)}
print(json.dumps(out))
`;
  const { stdout } = await promisify(execFile)('/usr/bin/python3', ['-c', script, py], { timeout: 60_000 });
  const r = JSON.parse(stdout) as Record<string, unknown>;
  t.same(r['configmaps'], ['kube-root-ca.crt', 'settings']);
  t.same(r['get'], { a: 'b' });
  t.match(r['secrets'], { status: 403, body: { kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message: 'secrets is forbidden: User "dana" cannot list resource "secrets" in API group "" in the namespace "default"', details: { kind: 'secrets' } } });
  t.match(r['other-ns'], { status: 403, body: { message: /in the namespace "kube-system"/ } });
  t.match(r['write'], { status: 403, body: { message: 'configmaps "settings" is forbidden: User "dana" cannot delete resource "configmaps" in API group "" in the namespace "default"', details: { name: 'settings', kind: 'configmaps' } } });
  t.equal((await admin('get', 'configmap', 'settings', '-n', 'default')).code, 0, 'the ConfigMap is still there');
});

t.test('anonymous requests: /version and the health endpoints, nothing else', async (t) => {
  const anon = (path: string) => new Promise<{ code: number; body: string }>((resolve, reject) => {
    const req = request(`${cp.url}${path}`, { rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal((await anon('/version')).code, 200);
  t.equal((await anon('/readyz')).code, 200);
  const api = await anon('/api/v1/namespaces');
  t.equal(api.code, 403);
  t.match(api.body, /namespaces is forbidden: User \\"system:anonymous\\" cannot list resource \\"namespaces\\"/);
  const disc = await anon('/apis');
  t.equal(disc.code, 403, 'discovery is for authenticated users (system:discovery)');
  t.match(disc.body, /forbidden: User \\"system:anonymous\\" cannot get path \\"\/apis\\"/);
  const dir3 = mkdtempSync(join(tmpdir(), 'nn-rbac-anon-'));
  const closed = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir3, anonymousAuth: false });
  t.teardown(async () => {
    await closed.stop();
    rmSync(dir3, { recursive: true, force: true });
  });
  const get = (path: string) => new Promise<number>((resolve, reject) => {
    request(`${closed.url}${path}`, { rejectUnauthorized: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on('error', reject).end();
  });
  t.equal(await get('/api/v1/namespaces'), 401, '--anonymous-auth=false: no credentials is a 401');
  t.equal(await get('/readyz'), 200, 'the health endpoints still answer');
});

t.test('the controllers write as their own ServiceAccounts, through RBAC: a controller whose binding is gone is refused', async (t) => {
  const logFile = join(dir, 'cp2.log');
  const dir2 = mkdtempSync(join(tmpdir(), 'nn-rbac-ctl-'));
  const cp2 = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir2, log: createLogger({ destination: logFile, level: 'info' }) });
  t.teardown(async () => {
    await cp2.stop();
    rmSync(dir2, { recursive: true, force: true });
  });
  const k = (...args: string[]) => kubectl(cp2.kubeconfig, args);
  await ok(cp2.kubeconfig, ['create', 'deployment', 'web', '--image=nodenet/host', '--', 'sleep', '1000']);
  await waitFor('the ReplicaSet\'s Pod', async () => (await k('get', 'pods', '-l', 'app=web', '-o', 'name')).out.trim() !== '');
  const lines = readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const req = (user: string, verb: string, resource: string) => lines.some((l) => l['msg'] === 'request' && l['user'] === user && l['verb'] === verb && l['resource'] === resource);
  t.ok(req('system:serviceaccount:kube-system:deployment-controller', 'create', 'replicasets.apps'), 'the Deployment controller made the ReplicaSet, as itself');
  t.ok(req('system:serviceaccount:kube-system:replicaset-controller', 'create', 'pods'), 'the ReplicaSet controller made the Pod, as itself');
  t.ok(req('system:serviceaccount:kube-system:service-account-controller', 'create', 'serviceaccounts'), 'the default ServiceAccounts, by theirs');
  const metrics = await ok(cp2.kubeconfig, ['get', '--raw', '/metrics']);
  t.match(metrics, /apiserver_request_total\{verb="POST",group="",version="v1",resource="pods",subresource="",scope="namespace",code="201"\} [1-9]/, 'the controllers\' writes are counted as requests');
  await ok(cp2.kubeconfig, ['delete', 'clusterrolebinding', 'system:controller:replicaset-controller']);
  await ok(cp2.kubeconfig, ['scale', 'deployment', 'web', '--replicas=2']);
  // Its Events are written as itself too, so its FailedCreate Event is refused as well: the request log tells.
  const refused = (resource: string) => readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)
    .some((l) => l['msg'] === 'request' && l['user'] === 'system:serviceaccount:kube-system:replicaset-controller' && l['verb'] === 'create' && l['resource'] === resource && l['code'] === 403);
  await waitFor('the Pod create refused', async () => refused('pods'));
  await waitFor('its FailedCreate Event refused', async () => refused('events'));
  t.pass('the ReplicaSet controller was refused the Pod and the Event that says so, both as itself');
  t.equal((await k('get', 'events', '--field-selector', 'reason=FailedCreate', '-o', 'name')).out.trim(), '', 'no Event written on its behalf by anyone else');
  t.equal((await k('get', 'pods', '-l', 'app=web', '-o', 'name')).out.trim().split('\n').length, 1, 'no second Pod');
});
