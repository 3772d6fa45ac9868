/**
 * Encryption at rest (encryption.ts): the EncryptionConfiguration checked in upstream's words; a round trip over the
 * in-memory backend with only ciphertext under upstream's prefixes in it; key rotation (a new key first, old values
 * still read, new writes under the new key); identity first (encrypted values still read, new writes plaintext); a
 * wrong or missing key refused with StoreUnreadable, never answered with garbage; and the whole storage contract run
 * through the wrapper. No root.
 */
import t from 'tap';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { describeEncryption, EncryptedStorage, ENVELOPE_FIELD, parseEncryptionConfig } from './encryption.js';
import { MemoryStorage } from './memory-storage.js';
import { storageContract } from './storage.contract.js';
import type { Storage } from './storage.js';
import type { KObject, StoreEvent } from './types.js';

const K16 = Buffer.alloc(16, 1).toString('base64');
const K24 = Buffer.alloc(24, 2).toString('base64');
const K32 = Buffer.alloc(32, 3).toString('base64');
const K32b = Buffer.alloc(32, 4).toString('base64');

type Provider = Record<string, unknown>;
const aescbc = (...keys: [string, string][]): Provider => ({ aescbc: { keys: keys.map(([name, secret]) => ({ name, secret })) } });
const aesgcm = (...keys: [string, string][]): Provider => ({ aesgcm: { keys: keys.map(([name, secret]) => ({ name, secret })) } });
const identity: Provider = { identity: {} };
const configText = (resources: string[], providers: Provider[]) => JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration', resources: [{ resources, providers }] });
const config = (resources: string[], ...providers: Provider[]) => parseEncryptionConfig(configText(resources, providers));
/** The message of what f throws. */
const thrown = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  return 'nothing thrown';
};
const secret = (name: string, value: string): KObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, type: 'Opaque', data: { password: Buffer.from(value).toString('base64') } });
const raw = async (s: EncryptedStorage, key: string) => (await s.inner.get(key))!;
const unreadable = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
  } catch (e) {
    if (e instanceof NodenetError && e.code === ErrorCode.StoreUnreadable) return e.message;
    throw e;
  }
  throw new Error('read, where it should have been refused');
};

t.test('the configuration: YAML as kube-apiserver takes it, and what the providers do for each resource', async (t) => {
  const c = parseEncryptionConfig(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets, configmaps]
    providers:
      - aesgcm:
          keys:
            - name: new
              secret: ${K32}
      - aescbc:
          keys:
            - name: old
              secret: ${K16}
            - name: older
              secret: ${K24}
      - identity: {}
  - resources: ['*.apps']
    providers:
      - identity: {}
`);
  t.same(describeEncryption(c), ['secrets: aesgcm:new (writes), aescbc:old, aescbc:older, identity', 'configmaps: aesgcm:new (writes), aescbc:old, aescbc:older, identity', '*.apps: identity (writes)']);
});

t.test("a bad configuration is refused, in ValidateEncryptionConfiguration's words", async (t) => {
  const bad = (resources: string[], ...providers: Provider[]) => thrown(() => config(resources, ...providers));
  t.equal(bad(['secrets'], { 'aes-cbc': { keys: [] } }), 'resources[0].providers[0]: Invalid value: "aes-cbc": provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity', 'an unknown provider');
  t.equal(bad(['secrets'], { kms: { name: 'k', endpoint: 'unix:///k.sock' } }), 'resources[0].providers[0].kms: Unsupported value: "kms": supported values: "aescbc", "aesgcm", "identity"', 'KMS: not run by nodenet');
  t.equal(bad(['secrets'], aescbc(['k', Buffer.alloc(8).toString('base64')])), 'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]');
  t.equal(bad(['secrets'], aesgcm()), 'resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required', 'aesgcm without keys');
  t.equal(bad(['secrets'], { aesgcm: {} }), 'resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required');
  t.equal(bad(['secrets'], aescbc(['k', 'not base64!'])), 'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded');
  t.equal(bad(['secrets'], aescbc(['', K32])), 'resources[0].providers[0].aescbc.keys[0].name: Required value: name is a mandatory field for a key');
  t.equal(bad(['secrets'], { aescbc: { keys: [{ name: 'k' }] } }), 'resources[0].providers[0].aescbc.keys[0].secret: Required value: secret is a mandatory field for a key');
  t.equal(bad(['secrets'], { ...aescbc(['k', K32]), identity: {} }), 'resources[0].providers[0]: Invalid value: "aescbc,identity": more than one provider specified in a single element, should split into different list elements');
  t.equal(bad(['secrets']), 'resources[0].providers: Required value: at least one resources[0].providers is required');
  t.equal(bad([], identity), 'resources[0].resources: Required value: at least one resources[0].resources is required');
  t.equal(bad(['Secrets'], identity), 'resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters');
  t.equal(bad(['*'], identity), "resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources");
  t.equal(bad(['secrets', 'secrets'], identity), 'resources[0].resources: Invalid value: ["secrets","secrets"]: the same resource cannot be specified multiple times');
  t.equal(bad(['secrets', '*.'], identity), "resources[0].resources: Invalid value: [\"secrets\",\"*.\"]: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked");
  t.equal(bad(['secrets.*'], identity), 'resources[0].resources[0]: Invalid value: "secrets.*": encrypting the same resource across groups is not supported');
  t.equal(bad(['secrets'], aescbc(['a', '']), aesgcm()), '[resources[0].providers[0].aescbc.keys[0].secret: Required value: secret is a mandatory field for a key, resources[0].providers[1].aesgcm.keys: Required value: at least one keys is required]', 'every problem, in one message');
  t.equal(thrown(() => parseEncryptionConfig(JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration' }))), 'resources: Required value: at least one resources is required');
  t.equal(thrown(() => parseEncryptionConfig('apiVersion: v1\nkind: ConfigMap\n')), 'apiVersion "v1", kind "ConfigMap": expected apiVersion apiserver.config.k8s.io/v1, kind EncryptionConfiguration');
  t.match(thrown(() => parseEncryptionConfig('resources: [')), /^error while parsing file: /);
  for (const k of [K16, K24, K32]) t.doesNotThrow(() => config(['secrets'], aescbc(['k', k]), aesgcm(['k', k])), `${Buffer.from(k, 'base64').length}-byte keys`);
});

for (const [name, provider, prefix] of [['aescbc', aescbc(['key1', K32]), 'k8s:enc:aescbc:v1:key1:'], ['aesgcm', aesgcm(['key1', K16]), 'k8s:enc:aesgcm:v1:key1:']] as const) {
  t.test(`${name}: a round trip through every verb, and only ciphertext under ${prefix} in the backend`, async (t) => {
    const s = new EncryptedStorage(new MemoryStorage(), config(['secrets'], provider));
    const events: StoreEvent[] = [];
    s.watch({ prefix: '', afterRev: 0, onEvent: (e) => events.push(e), onError: (e) => t.fail(e.message) });
    const a = await s.create('secrets/default/a', secret('a', 'hunter2'));
    t.same(a.object, { ...secret('a', 'hunter2'), metadata: { name: 'a', namespace: 'default', resourceVersion: String(a.rev) } });
    t.equal(a.json, JSON.stringify(a.object));
    const stored = await raw(s, 'secrets/default/a');
    const text = String(stored.object[ENVELOPE_FIELD]);
    t.ok(text.startsWith(prefix), `stored as ${text.slice(0, 40)}...`);
    t.notMatch(stored.json, /hunter2|aHVudGVyMg|"Secret"|"default"/, 'neither the value nor the object is in the clear');
    t.same(Object.keys(stored.object).sort(), [ENVELOPE_FIELD, 'metadata']);
    t.same((await s.get('secrets/default/a'))!.object, a.object);
    const b = await s.update('secrets/default/a', { ...secret('a', 'swordfish'), metadata: { name: 'a', namespace: 'default', resourceVersion: '999' } }, a.rev);
    t.equal(b.object.metadata!['resourceVersion'], String(b.rev), 'the backend\'s revision, not the one written');
    t.same((await s.get('secrets/default/a', { rev: a.rev }))!.object, a.object, 'an old revision opens too');
    const [c] = await s.txn([{ op: 'create', key: 'secrets/default/c', obj: secret('c', 'x') }, { op: 'create', key: 'configmaps/default/plain', obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plain' } } }]);
    t.equal(c!.object['kind'], 'Secret');
    t.same((await s.list('secrets/')).items.map((i) => i.object.metadata!['name']), ['a', 'c']);
    t.equal((await raw(s, 'configmaps/default/plain')).object['kind'], 'ConfigMap', 'a resource no rule names is stored as it is');
    const gone = await s.delete('secrets/default/a', b.rev);
    t.equal(gone.object['kind'], 'Secret');
    const conflict = await s.update('secrets/default/c', secret('c', 'y'), 1).catch((e: unknown) => e);
    t.match(conflict, { code: ErrorCode.Conflict, current: { object: { kind: 'Secret', data: { password: Buffer.from('x').toString('base64') } } } }, 'a conflict carries the current object opened, for the retry');
    await new Promise((r) => setTimeout(r, 20));
    t.same(events.map((e) => [e.type, e.cur.object['kind'], e.prev?.object['kind'] ?? null]), [['ADDED', 'Secret', null], ['MODIFIED', 'Secret', 'Secret'], ['ADDED', 'Secret', null], ['ADDED', 'ConfigMap', null], ['DELETED', 'Secret', 'Secret']], 'watchers see plaintext');
    await s.close();
  });
}

t.test('key rotation: a second key first; values under the old key still read, new writes under the new one', async (t) => {
  const mem = new MemoryStorage();
  const before = new EncryptedStorage(mem, config(['secrets'], aescbc(['key1', K32])));
  await before.create('secrets/default/a', secret('a', 'old'));
  const after = new EncryptedStorage(mem, config(['secrets'], aescbc(['key2', K32b], ['key1', K32])));
  const a = (await after.get('secrets/default/a'))!;
  t.equal(a.object['data'] && (a.object['data'] as Record<string, string>)['password'], Buffer.from('old').toString('base64'), 'read with key1');
  await after.update('secrets/default/a', secret('a', 'new'), a.rev);
  await after.create('secrets/default/b', secret('b', 'b'));
  t.match(String((await raw(after, 'secrets/default/a')).object[ENVELOPE_FIELD]), /^k8s:enc:aescbc:v1:key2:/, 'rewritten under key2');
  t.match(String((await raw(after, 'secrets/default/b')).object[ENVELOPE_FIELD]), /^k8s:enc:aescbc:v1:key2:/);
  const dropped = new EncryptedStorage(mem, config(['secrets'], aescbc(['key2', K32b])));
  t.equal((await dropped.list('secrets/')).items.length, 2, 'once everything is rewritten, key1 can go');
  const providerSwap = new EncryptedStorage(mem, config(['secrets'], aesgcm(['g', K32]), aescbc(['key2', K32b])));
  t.equal((await providerSwap.get('secrets/default/b'))!.object['kind'], 'Secret', 'a move from aescbc to aesgcm reads the aescbc values');
});

t.test('identity first: encrypted values still read, new writes plaintext (moving away from encryption)', async (t) => {
  const mem = new MemoryStorage();
  await new EncryptedStorage(mem, config(['secrets'], aesgcm(['k', K32]))).create('secrets/default/a', secret('a', 'sealed'));
  const off = new EncryptedStorage(mem, config(['secrets'], identity, aesgcm(['k', K32])));
  const a = (await off.get('secrets/default/a'))!;
  t.equal(a.object['kind'], 'Secret', 'the encrypted value read by the provider after identity');
  await off.update('secrets/default/a', secret('a', 'plain now'), a.rev);
  const stored = await raw(off, 'secrets/default/a');
  t.equal(stored.object['kind'], 'Secret', 'written in the clear');
  t.match(stored.json, Buffer.from('plain now').toString('base64'));
  t.equal((await off.get('secrets/default/a'))!.object['kind'], 'Secret', 'plaintext read by identity');
  const on = new EncryptedStorage(mem, config(['secrets'], aesgcm(['k', K32]), identity));
  t.equal((await on.get('secrets/default/a'))!.object['kind'], 'Secret', 'identity after the key reads values stored before encryption');
});

t.test('a value no provider can read is StoreUnreadable, never garbage', async (t) => {
  const mem = new MemoryStorage();
  const cbc = new EncryptedStorage(mem, config(['secrets'], aescbc(['key1', K32])));
  const gcm = new EncryptedStorage(mem, config(['configmaps'], aesgcm(['key1', K32])));
  await cbc.create('secrets/default/a', secret('a', 'x'));
  await gcm.create('configmaps/default/c', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 'v' } });
  const wrongCbc = new EncryptedStorage(mem, config(['secrets'], aescbc(['key1', K32b])));
  t.match(await unreadable(wrongCbc.get('secrets/default/a')), /^unable to transform key "secrets\/default\/a": (invalid PKCS7 data \(empty or not padded\)|invalid padding on input|the decrypted value is not JSON)$/, 'aescbc, a wrong key under the same name');
  const wrongGcm = new EncryptedStorage(mem, config(['configmaps'], aesgcm(['key1', K32b])));
  t.equal(await unreadable(wrongGcm.get('configmaps/default/c')), 'unable to transform key "configmaps/default/c": cipher: message authentication failed');
  t.equal(await unreadable(new EncryptedStorage(mem, config(['secrets'], aescbc(['key2', K32]))).get('secrets/default/a')), 'unable to transform key "secrets/default/a": no matching prefix found', 'the key is no longer listed');
  t.equal(await unreadable(new EncryptedStorage(mem, config(['secrets'], identity)).list('secrets/')), 'unable to transform key "secrets/default/a": no matching prefix found', 'identity never reads an encrypted value');
  t.equal(await unreadable(new EncryptedStorage(mem, config(['secrets'], aescbc(['key2', K32]), aescbc(['key1', K32b]))).get('secrets/default/a')).then((m) => m.startsWith('unable to transform key "secrets/default/a": ')), true, 'several tries: the last error');
  const plainSecret = new MemoryStorage();
  await plainSecret.create('secrets/default/p', secret('p', 'clear'));
  t.equal(await unreadable(new EncryptedStorage(plainSecret, config(['secrets'], aescbc(['key1', K32]))).get('secrets/default/p')), 'unable to transform key "secrets/default/p": no matching prefix found', 'plaintext without identity');

  // CBC has no integrity: a wrong key gives a valid padding one time in 256 or so. The JSON check stops those.
  const many = new EncryptedStorage(new MemoryStorage(), config(['secrets'], aescbc(['key1', K32])));
  for (let i = 0; i < 400; i++) await many.create(`secrets/default/s${i}`, secret(`s${i}`, `v${i}`));
  const wrong = new EncryptedStorage(many.inner, config(['secrets'], aescbc(['key1', K32b])));
  const reasons = new Set<string>();
  for (let i = 0; i < 400; i++) reasons.add((await unreadable(wrong.get(`secrets/default/s${i}`))).replace(/^.*: /, ''));
  t.ok(reasons.has('invalid padding on input') || reasons.has('invalid PKCS7 data (empty or not padded)'), `every one of 400 refused (${[...reasons].join('; ')})`);
});

t.test('aesgcm binds a value to its key: copied under another key, it does not open', async (t) => {
  const s = new EncryptedStorage(new MemoryStorage(), config(['secrets'], aesgcm(['k', K32])));
  await s.create('secrets/default/a', secret('a', 'x'));
  await s.inner.create('secrets/default/b', { ...(await raw(s, 'secrets/default/a')).object, metadata: {} });
  t.equal(await unreadable(s.get('secrets/default/b')), 'unable to transform key "secrets/default/b": cipher: message authentication failed');
});

t.test('which rule a resource falls under: its name first, then *.<group>, then *.*', async (t) => {
  const c = parseEncryptionConfig(JSON.stringify({
    apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration',
    resources: [
      { resources: ['*.*'], providers: [aescbc(['all', K32])] },
      { resources: ['*.'], providers: [aescbc(['core', K32])] },
      { resources: ['*.apps'], providers: [aescbc(['apps', K32])] },
      { resources: ['secrets', 'deployments.apps'], providers: [aesgcm(['named', K32])] },
      { resources: ['secrets'], providers: [identity] },
    ],
  }));
  const s = new EncryptedStorage(new MemoryStorage(), c);
  const prefixOf = async (key: string) => {
    await s.create(key, { apiVersion: 'v1', kind: 'X', metadata: { name: key.split('/')[2] } });
    return /^k8s:enc:\w+:v1:(\w+):/.exec(String((await raw(s, key)).object[ENVELOPE_FIELD]))?.[1];
  };
  t.equal(await prefixOf('secrets/default/a'), 'named', 'the first rule naming it wins');
  t.equal(await prefixOf('deployments.apps/default/d'), 'named');
  t.equal(await prefixOf('configmaps/default/c'), 'core');
  t.equal(await prefixOf('replicasets.apps/default/r'), 'apps');
  t.equal(await prefixOf('leases.coordination.k8s.io/kube-node-lease/n1'), 'all');
});

t.test('a watch that meets a value it cannot read ends with StoreUnreadable', async (t) => {
  const mem = new MemoryStorage();
  const s = new EncryptedStorage(mem, config(['secrets'], aesgcm(['k', K32])));
  const got: string[] = [];
  const done = new Promise<NodenetError>((resolve) => s.watch({ prefix: '', afterRev: 0, onEvent: (e) => got.push(e.key), onError: resolve }));
  await s.create('secrets/default/a', secret('a', 'x'));
  await mem.create('secrets/default/b', secret('b', 'plaintext, and no identity'));
  await s.create('secrets/default/c', secret('c', 'x'));
  const e = await done;
  t.equal(e.code, ErrorCode.StoreUnreadable);
  t.equal(e.message, 'unable to transform key "secrets/default/b": no matching prefix found');
  await new Promise((r) => setTimeout(r, 20));
  t.same(got, ['secrets/default/a'], 'nothing after it');
});

// The whole storage contract through the wrapper, every object encrypted.
const inners = new Map<Storage, MemoryStorage>();
const wrap = (m: MemoryStorage) => {
  const s = new EncryptedStorage(m, config(['*.*'], aesgcm(['k', K32])));
  inners.set(s, m);
  return s;
};
storageContract(t, {
  name: 'encrypted memory',
  open: async () => wrap(new MemoryStorage()),
  reopen: async (s) => {
    await s.close();
    return wrap(new MemoryStorage(inners.get(s)!.data));
  },
  failNextWrite: (s) => void (inners.get(s)!.failNext = 1),
});
