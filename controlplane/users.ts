/**
 * controlplane/users: `nodenet control-plane add-user NAME [--group G,...]`,
 * a user who authenticates with a client certificate signed by the cluster
 * CA, as kube-apiserver's x509 authenticator reads one: the subject's CN is
 * the user, each O a group (kubeadm's `kubeadm kubeconfig user` makes the
 * same). The kubeconfig written names the server of the control plane's
 * admin kubeconfig and carries the CA, the certificate and its key.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { ErrorCode, NodenetError } from '../lib/errors/errors.js';
import { issue } from '../lib/pki/pki.js';
import { writeFileDurable } from '../lib/state/durable.js';

/** @returns the problem with a user name, or null (it goes into a certificate's CN and a file name). */
export function userNameProblem(name: string): string | null {
  if (!name) return 'a user name must not be empty';
  if (name.length > 253) return `user name ${JSON.stringify(name.slice(0, 20))}...: at most 253 characters`;
  if (/[/\\\x00-\x1f\x7f]/.test(name) || name === '.' || name === '..') return `user name ${JSON.stringify(name)}: no slash, backslash or control character`;
  return null;
}

/** Writes `<dataDir>/users/<name>.kubeconfig` for a new client certificate; returns its path. @throws InvalidConfig, NotFound */
export function addUser(dataDir: string, name: string, groups: readonly string[], days = 365): string {
  const problem = userNameProblem(name);
  if (problem) throw new NodenetError(ErrorCode.InvalidConfig, problem);
  for (const g of groups) if (!g || /[\x00-\x1f\x7f]/.test(g)) throw new NodenetError(ErrorCode.InvalidConfig, `group ${JSON.stringify(g)}: must not be empty or hold control characters`);
  const caCrt = join(dataDir, 'pki', 'ca.crt');
  const caKey = join(dataDir, 'pki', 'ca.key');
  const admin = join(dataDir, 'admin.kubeconfig');
  if (!existsSync(caCrt) || !existsSync(caKey) || !existsSync(admin)) {
    throw new NodenetError(ErrorCode.NotFound, `${dataDir} holds no cluster CA and admin kubeconfig: start nodenet control-plane --data-dir ${dataDir} once first (with TLS, not --insecure-http)`);
  }
  const caPem = readFileSync(caCrt, 'utf8');
  const cfg = parseYaml(readFileSync(admin, 'utf8')) as { clusters?: { cluster?: { server?: string } }[] };
  const server = cfg.clusters?.[0]?.cluster?.server;
  if (!server?.startsWith('https://')) throw new NodenetError(ErrorCode.InvalidConfig, `${admin}: no https server (a client certificate needs TLS)`);
  const cert = issue({ commonName: name, organizations: groups, days, issuer: { certPem: caPem, keyPem: readFileSync(caKey, 'utf8'), commonName: 'nodenet-ca', organization: 'nodenet' } });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const text = toYaml({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'nodenet', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name, user: { 'client-certificate-data': b64(cert.certPem), 'client-key-data': b64(cert.keyPem) } }],
    contexts: [{ name: 'nodenet', context: { cluster: 'nodenet', user: name, namespace: 'default' } }],
    'current-context': 'nodenet',
  });
  mkdirSync(join(dataDir, 'users'), { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'users', `${name}.kubeconfig`);
  writeFileDurable(file, text, { mode: 0o600 });
  return file;
}
