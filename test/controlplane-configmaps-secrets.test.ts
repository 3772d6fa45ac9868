/**
 * ConfigMaps and Secrets through the real kubectl (issue 27), against a control plane started with
 * --encryption-provider-config (Secrets under aescbc): `kubectl create configmap` and `create secret generic | tls |
 * docker-registry` (protobuf bodies), `get cm` / `get secret` as upstream prints them, an immutable ConfigMap's
 * update refused and a ConfigMap over 1 MiB refused in kube-apiserver's words; the SQLite files hold the Secret only
 * as ciphertext under upstream's prefix (and the ConfigMap in the clear, which shows the search can find a value).
 * Then the start: a bad configuration file refused; a data directory whose Secrets the configuration cannot read
 * refused with StoreUnreadable; and the README's key rotation (new key first, every Secret rewritten by an unchanged
 * `kubectl replace`, as upstream's procedure, then the new key alone). No root needed.
 */
import t from 'tap';
import { execa } from 'execa';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, NodenetError } from '../lib/errors/errors.js';
import { startControlPlane } from '../controlplane/control-plane.js';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { controlPlaneArgs } from '../agent/src/cli/control-plane-cmd.js';
import { RESOURCES } from '../controlplane/api/resources.js';

const files = mkdtempSync(join(tmpdir(), 'nn-enc-files-'));
t.teardown(() => rmSync(files, { recursive: true, force: true }));
const KEY = Buffer.alloc(32, 7).toString('base64');
const encryptionConfig = (key: string, name = 'key1') => `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: ${name}
              secret: ${key}
      - identity: {}
`;
const configFile = join(files, 'encryption.yaml');
writeFileSync(configFile, encryptionConfig(KEY));

const env = testControlPlane(t, 'nn-cp-cm-secrets-', { encryptionProviderConfig: configFile });
const { kubectl, ok } = env;
const PLAIN_SECRET = 'S3cr3t-Plaintext-4242';
const PLAIN_CONFIG = 'config-in-the-clear-4242';

t.test('the flag: nodenet control-plane --encryption-provider-config FILE', async (t) => {
  t.equal(controlPlaneArgs(new Map([['encryption-provider-config', configFile]])).encryptionProviderConfig, configFile);
  t.notOk('encryptionProviderConfig' in controlPlaneArgs(new Map()), 'none by default');
});

t.test('kubectl create configmap | secret generic, tls, docker-registry; get cm and get secret as upstream prints them', async (t) => {
  t.equal(await ok(['create', 'configmap', 'app', `--from-literal=greeting=${PLAIN_CONFIG}`, '--from-literal=mode=prod']), 'configmap/app created\n');
  t.equal(await ok(['create', 'secret', 'generic', 'db', `--from-literal=password=${PLAIN_SECRET}`]), 'secret/db created\n');
  const pki = join(env.dir, 'data', 'pki');
  t.equal(await ok(['create', 'secret', 'tls', 'web', `--cert=${join(pki, 'ca.crt')}`, `--key=${join(pki, 'ca.key')}`]), 'secret/web created\n');
  t.equal(await ok(['create', 'secret', 'docker-registry', 'reg', '--docker-server=registry.example', '--docker-username=u', '--docker-password=p']), 'secret/reg created\n');
  t.match(await ok(['get', 'cm', 'app']), /^NAME\s+DATA\s+AGE\napp\s+2\s+\d+s\n$/);
  t.match(await ok(['get', 'secrets']), /^NAME\s+TYPE\s+DATA\s+AGE\ndb\s+Opaque\s+1\s+\d+s\nreg\s+kubernetes\.io\/dockerconfigjson\s+1\s+\d+s\nweb\s+kubernetes\.io\/tls\s+2\s+\d+s\n$/);
  const pw = await ok(['get', 'secret', 'db', '-o', 'jsonpath={.data.password}']);
  t.equal(Buffer.from(pw, 'base64').toString(), PLAIN_SECRET, 'read back through the decryption');
  const reg = JSON.parse(Buffer.from(await ok(['get', 'secret', 'reg', '-o', 'jsonpath={.data.\\.dockerconfigjson}']), 'base64').toString()) as { auths: Record<string, { username: string }> };
  t.equal(reg.auths['registry.example']?.username, 'u');
});

t.test("Secret type rules and stringData, through kubectl apply (JSON): upstream's 422 and the merge into data", async (t) => {
  const r = await kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'half-tls' }, type: 'kubernetes.io/tls', data: { 'tls.crt': 'Yw==' } }) });
  t.not(r.code, 0);
  t.match(r.err, 'The Secret "half-tls" is invalid: data[tls.key]: Required value');
  await ok(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'typed' }, stringData: { user: 'admin' } }) });
  const s = JSON.parse(await ok(['get', 'secret', 'typed', '-o', 'json'])) as Record<string, unknown>;
  t.same(s['data'], { user: Buffer.from('admin').toString('base64') });
  t.equal(s['type'], 'Opaque');
  t.notOk('stringData' in s);
  const bad = await kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bad64' }, data: { a: 'not base64' } }) });
  t.match(bad.err, 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3');
});

t.test('an immutable ConfigMap: its data cannot change, nor the flag', async (t) => {
  await ok(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'frozen' }, data: { a: '1' }, immutable: true }) });
  let r = await kubectl(['patch', 'cm', 'frozen', '-p', '{"data":{"a":"2"}}']);
  t.not(r.code, 0);
  t.equal(r.err, 'The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set\n');
  r = await kubectl(['patch', 'cm', 'frozen', '-p', '{"immutable":false}']);
  t.equal(r.err, 'The ConfigMap "frozen" is invalid: immutable: Forbidden: field is immutable when `immutable` is set\n');
  t.equal(await ok(['label', 'cm', 'frozen', 'tier=web']), 'configmap/frozen labeled\n', 'metadata still changes');
  t.equal(await ok(['get', 'cm', 'frozen', '-o', 'jsonpath={.data.a}']), '1');
});

t.test("a ConfigMap over 1 MiB is refused in kube-apiserver's words", async (t) => {
  const big = join(files, 'big.txt');
  writeFileSync(big, 'x'.repeat(1024 * 1024 + 1));
  const r = await kubectl(['create', 'configmap', 'big', `--from-file=${big}`]);
  t.not(r.code, 0);
  t.equal(r.err, 'error: failed to create configmap: ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes\n');
  t.not((await kubectl(['get', 'cm', 'big'])).code, 0, 'not stored');
  writeFileSync(big, 'x'.repeat(1024 * 1024));
  t.equal(await ok(['create', 'configmap', 'big', `--from-file=${big}`]), 'configmap/big created\n', 'exactly 1 MiB is allowed');
});

t.test("on disk: the Secret only as ciphertext under upstream's prefix; the ConfigMap (not configured) in the clear", async (t) => {
  const dataDir = join(env.dir, 'data');
  const disk = Buffer.concat(readdirSync(dataDir).filter((f) => f.startsWith('state.db')).map((f) => readFileSync(join(dataDir, f))));
  const has = (s: string) => disk.includes(Buffer.from(s));
  t.ok(has(PLAIN_CONFIG), 'the search finds a value in the clear (the ConfigMap, which the configuration does not name)');
  t.notOk(has(PLAIN_SECRET), 'the Secret value is not there');
  t.notOk(has(Buffer.from(PLAIN_SECRET).toString('base64')), 'nor its base64');
  t.notOk(has('"name":"db"'), 'nor the Secret object itself');
  t.ok(has('k8s:enc:aescbc:v1:key1:'), 'ciphertext under the aescbc prefix');
});

t.test('a bad configuration file stops the start with a clear message', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-enc-bad-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bad = join(files, 'bad.yaml');
  writeFileSync(bad, encryptionConfig(Buffer.alloc(8).toString('base64')));
  const e = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: bad }).then(() => null, (x: unknown) => x);
  t.ok(e instanceof NodenetError && e.code === ErrorCode.InvalidConfig);
  t.equal((e as Error).message, `--encryption-provider-config ${bad}: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]`);
  const missing = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: join(files, 'nope.yaml') }).then(() => null, (x: unknown) => x);
  t.match((missing as Error).message, /^--encryption-provider-config .*nope\.yaml: ENOENT/);
});

t.test('a data directory whose Secrets the configuration cannot read: the start refused with StoreUnreadable', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-enc-wrong-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const right = join(files, 'right.yaml');
  writeFileSync(right, encryptionConfig(KEY, 'k'));
  const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: right });
  try {
    await cp.rest.create(RESOURCES.find((r) => r.resource === 'secrets')!, 'default', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { a: 'b' } });
  } finally {
    await cp.stop();
  }
  const wrong = join(files, 'wrong.yaml');
  writeFileSync(wrong, encryptionConfig(Buffer.alloc(32, 9).toString('base64'), 'k'));
  const e = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: wrong }).then(async (c) => (await c.stop(), null), (x: unknown) => x);
  t.ok(e instanceof NodenetError && e.code === ErrorCode.StoreUnreadable, String(e));
  t.match((e as Error).message, /^unable to transform key "secrets\/default\/s": /);
  const again = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: right });
  await again.stop();
  t.pass('the right key starts it again: the refused start released the data directory');

  // The README's rotation: the new key first, the old one after it; every Secret rewritten by an unchanged replace (stale values are written again); the old key gone.
  const NEW = Buffer.alloc(32, 11).toString('base64');
  const both = join(files, 'both.yaml');
  writeFileSync(both, encryptionConfig(NEW, 'k2').replace('      - identity: {}\n', `            - name: k\n              secret: ${KEY}\n      - identity: {}\n`));
  const rotating = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: both });
  try {
    // Upstream's procedure: an unchanged replace rewrites what an older key holds (it is read stale).
    const rvOf = async () => (await execa('kubectl', ['get', 'secret', 's', '-o', 'jsonpath={.metadata.resourceVersion}'], { env: { KUBECONFIG: rotating.kubeconfig } })).stdout;
    const before = await rvOf();
    const all = await execa('kubectl', ['get', 'secrets', '-A', '-o', 'json'], { env: { KUBECONFIG: rotating.kubeconfig } });
    const r = await execa('kubectl', ['replace', '-f', '-'], { env: { KUBECONFIG: rotating.kubeconfig }, input: all.stdout, reject: false });
    t.equal(r.exitCode, 0, String(r.stderr));
    const after = await rvOf();
    t.not(after, before, 'the unchanged replace wrote the stale Secret again');
    const r2 = await execa('kubectl', ['replace', '-f', '-'], { env: { KUBECONFIG: rotating.kubeconfig }, input: (await execa('kubectl', ['get', 'secret', 's', '-o', 'json'], { env: { KUBECONFIG: rotating.kubeconfig } })).stdout, reject: false });
    t.equal(r2.exitCode, 0, String(r2.stderr));
    t.equal(await rvOf(), after, 'once written with the first key it is no longer stale: a replace of it writes nothing');
  } finally {
    await rotating.stop();
  }
  const onlyNew = join(files, 'only-new.yaml');
  writeFileSync(onlyNew, encryptionConfig(NEW, 'k2'));
  const rotated = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, encryptionProviderConfig: onlyNew });
  const s = rotated.cache.get('secrets/default/s')?.object;
  await rotated.stop();
  t.same(s?.['data'], { a: Buffer.from('b').toString('base64') }, 'after the rewrite, the new key alone reads every Secret');
});
