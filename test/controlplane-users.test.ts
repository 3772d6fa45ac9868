/**
 * Users with client certificates (issue 27's first step): `add-user` writes a
 * kubeconfig whose certificate the cluster CA signed; the API server reads
 * its CN as the user and each O as a group, as kube-apiserver's x509
 * authenticator does, with the real kubectl. A certificate of another CA is
 * no one; /version answers anonymously. Needs no root.
 */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { startControlPlane } from '../controlplane/control-plane.js';
import { addUser } from '../controlplane/users.js';
import { issue } from '../lib/pki/pki.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-users-'));
const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir });
t.teardown(async () => {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});

const kubectl = async (kubeconfig: string, ...args: string[]) => {
  const r = await execa('kubectl', ['--kubeconfig', kubeconfig, ...args], { reject: false, timeout: 60_000 });
  return { code: r.exitCode, out: String(r.stdout), err: String(r.stderr) };
};

t.test('a user in system:masters, by certificate alone: kubectl works', async (t) => {
  const kc = addUser(dir, 'alice', ['system:masters', 'dev']);
  t.equal(kc, join(dir, 'users', 'alice.kubeconfig'));
  const cfg = parseYaml(readFileSync(kc, 'utf8')) as { users: { user: Record<string, string> }[] };
  t.ok(cfg.users[0]!.user['client-certificate-data'] && !cfg.users[0]!.user['token'], 'a certificate, no token');
  const r = await kubectl(kc, 'get', 'ns', '-o', 'name');
  t.equal(r.code, 0, r.err);
  t.match(r.out, /namespace\/kube-system/);
});

t.test('a user without a role is that user, and is refused in kube-apiserver\'s words', async (t) => {
  const kc = addUser(dir, 'bob', []);
  const r = await kubectl(kc, 'get', 'pods');
  t.not(r.code, 0);
  t.match(r.err, /pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"/);
});

t.test('a node\'s certificate (system:node:NAME in system:nodes) is that node, under the Node authorizer', async (t) => {
  const kc = addUser(dir, 'system:node:n1', ['system:nodes']);
  t.equal((await kubectl(kc, 'get', 'ns', '-o', 'name')).code, 0, 'a node reads');
  const w = await kubectl(kc, 'create', 'namespace', 'x');
  t.match(w.err, /User "system:node:n1" cannot create resource "namespaces"/, 'and writes only what a kubelet may');
});

t.test('a certificate another CA signed is no one; /version answers anonymously', async (t) => {
  const other = issue({ commonName: 'evil-ca', isCA: true });
  const cert = issue({ commonName: 'mallory', organizations: ['system:masters'], issuer: { certPem: other.certPem, keyPem: other.keyPem, commonName: 'evil-ca' } });
  const kc = join(dir, 'mallory.kubeconfig');
  const good = parseYaml(readFileSync(join(dir, 'users', 'alice.kubeconfig'), 'utf8')) as { clusters: unknown[] };
  writeFileSync(kc, toYaml({ apiVersion: 'v1', kind: 'Config', clusters: good.clusters, users: [{ name: 'm', user: { 'client-certificate-data': Buffer.from(cert.certPem).toString('base64'), 'client-key-data': Buffer.from(cert.keyPem).toString('base64') } }], contexts: [{ name: 'c', context: { cluster: 'nodenet', user: 'm' } }], 'current-context': 'c' }));
  const r = await kubectl(kc, 'get', 'ns');
  t.not(r.code, 0);
  t.match(r.err, /Unauthorized|certificate/i, `refused: ${r.err.trim()}`);
  const u = new URL('/version', cp.url);
  const v = await new Promise<{ code: number; body: string }>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, ca: good.clusters ? Buffer.from((good.clusters[0] as { cluster: Record<string, string> }).cluster['certificate-authority-data']!, 'base64').toString() : undefined }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(v.code, 200, '/version without credentials');
  t.match(v.body, /gitVersion/);
});

t.test('add-user refuses what it cannot write', async (t) => {
  t.throws(() => addUser(dir, 'a/b', []), /no slash/);
  t.throws(() => addUser(dir, '', []), /must not be empty/);
  t.throws(() => addUser(join(dir, 'nothing'), 'carol', []), /holds no cluster CA and admin kubeconfig: start nodenet control-plane/);
});
