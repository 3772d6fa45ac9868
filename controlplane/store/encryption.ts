/**
 * controlplane/store/encryption: encryption at rest, as kube-apiserver's `--encryption-provider-config` does it
 * (k8s.io/apiserver's EncryptionConfiguration, storage/value and its aes and identity transformers), as a wrapper
 * of the storage interface (storage.ts): whatever the backend, SQLite or etcd, only ciphertext reaches it.
 *
 * - The configuration: apiVersion apiserver.config.k8s.io/v1, kind EncryptionConfiguration (YAML or JSON);
 *   `resources[]` each with `resources` (`secrets`, `configmaps`, `deployments.apps`, `*.` for every core
 *   resource, `*.apps`, `*.*`) and `providers`, in order: `aescbc` and `aesgcm` with `keys` (name, and a secret of
 *   16, 24 or 32 bytes in base64), and `identity`. It is checked as upstream's ValidateEncryptionConfiguration does,
 *   in its words; `kms` and `secretbox` are refused (nodenet runs neither). A bad file stops the start.
 * - Which rule a key falls under: the first rule naming its resource, then `*.<group>`, then `*.*` (upstream's
 *   lookup). Keys no rule names pass through untouched.
 * - Writes use the first provider's first key; an identity provider first writes plaintext. Reads try every
 *   provider's keys in order by prefix (upstream's prefixTransformers): `k8s:enc:aescbc:v1:<key>:` and
 *   `k8s:enc:aesgcm:v1:<key>:`; identity reads what is not encrypted (so it must be listed to read values stored
 *   before encryption was turned on), and never reads encrypted values.
 * - aescbc: a random 16-byte IV, then AES-CBC with PKCS#7 padding (no integrity: a wrong key is caught by the padding
 *   or by the plaintext not being a JSON object). aesgcm: a random 12-byte nonce, then AES-GCM with its 16-byte tag,
 *   the storage key as additional data (so a value copied under another key does not open; upstream binds it to the
 *   etcd key the same way).
 * - What the backend stores for an encrypted object is an envelope: `{"encrypted": "<prefix><base64 of the
 *   ciphertext>"}` (the backends keep JSON, so the bytes upstream writes after the prefix are base64 here), plus the
 *   metadata.resourceVersion the backend keeps. The whole object, metadata included, is inside the ciphertext.
 * - A value no provider can read is an error with the code StoreUnreadable, naming the key and why
 *   (`unable to transform key "secrets/ns/x": no matching prefix found`), never returned as something else; a
 *   watch that meets one ends with that error (the watch cache lists again and reports it).
 * - A value read with a provider other than the rule's first (an older key, or identity after encryption was turned
 *   on) is marked stale, as upstream's transformer marks it: an update that changes nothing still writes it, so
 *   upstream's procedure (`kubectl get secrets -A -o json | kubectl replace -f -`) re-encrypts every Secret with the
 *   current key.
 * - Left out: KMS and secretbox, reloading the file (--encryption-provider-config-automatic-reload).
 */
import { createCipheriv, createDecipheriv, randomBytes, type CipherGCMTypes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { ConflictError, TxnFailed, type ListOptions, type ListResult, type Storage, type StorageWatch, type StorageWatchOptions, type TxnOp } from './storage.js';
import { grOf, type KObject, type Stored, type StoreEvent } from './types.js';

/** The field of an envelope: what the backend stores in place of an encrypted object. */
export const ENVELOPE_FIELD = 'encrypted';
const ENCRYPTED_PREFIX = 'k8s:enc:';
const AES_KEY_SIZES = [16, 24, 32];

/** One way to read (and, first in its list, write) a value: a key of a provider, or identity. */
export interface Transformer {
  /** `k8s:enc:aescbc:v1:key1:`; '' for identity. */
  readonly prefix: string;
  /** `aescbc:key1`, `identity`: for logs. */
  readonly name: string;
  seal(plain: Buffer, aad: Buffer): Buffer;
  open(data: Buffer, aad: Buffer): Buffer;
}

export interface EncryptionConfig {
  /** Transformers by resource as the configuration names it (`secrets`, `*.` as `*`, `*.apps`, `*.*`), in read order. */
  readonly byResource: ReadonlyMap<string, readonly Transformer[]>;
}

const err = (msg: string) => new Error(msg);

function aescbc(name: string, key: Buffer): Transformer {
  const algo = `aes-${key.length * 8}-cbc`;
  return {
    prefix: `${ENCRYPTED_PREFIX}aescbc:v1:${name}:`,
    name: `aescbc:${name}`,
    seal(plain) {
      const iv = randomBytes(16);
      const c = createCipheriv(algo, key, iv);
      return Buffer.concat([iv, c.update(plain), c.final()]);
    },
    open(data) {
      if (data.length < 16) throw err('the stored data was shorter than the required size');
      const body = data.subarray(16);
      if (body.length % 16 !== 0) throw err('the stored data is not a multiple of the block size');
      const d = createDecipheriv(algo, key, data.subarray(0, 16));
      d.setAutoPadding(false);
      const out = Buffer.concat([d.update(body), d.final()]);
      const pad = out.length ? out[out.length - 1]! : 0;
      if (pad === 0 || pad > out.length || pad > 16) throw err('invalid PKCS7 data (empty or not padded)');
      for (let i = out.length - pad; i < out.length; i++) if (out[i] !== pad) throw err('invalid padding on input');
      return out.subarray(0, out.length - pad);
    },
  };
}

function aesgcm(name: string, key: Buffer): Transformer {
  const algo = `aes-${key.length * 8}-gcm` as CipherGCMTypes;
  return {
    prefix: `${ENCRYPTED_PREFIX}aesgcm:v1:${name}:`,
    name: `aesgcm:${name}`,
    seal(plain, aad) {
      const nonce = randomBytes(12);
      const c = createCipheriv(algo, key, nonce);
      c.setAAD(aad);
      return Buffer.concat([nonce, c.update(plain), c.final(), c.getAuthTag()]);
    },
    open(data, aad) {
      if (data.length < 12) throw err('the stored data was shorter than the required size');
      if (data.length < 12 + 16) throw err('cipher: message authentication failed');
      const d = createDecipheriv(algo, key, data.subarray(0, 12));
      d.setAAD(aad);
      d.setAuthTag(data.subarray(data.length - 16));
      try {
        return Buffer.concat([d.update(data.subarray(12, data.length - 16)), d.final()]);
      } catch {
        throw err('cipher: message authentication failed');
      }
    },
  };
}

const IDENTITY: Transformer = {
  prefix: '',
  name: 'identity',
  seal: (plain) => plain,
  open: (data) => data,
};

type Raw = Record<string, unknown>;
const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Go's base64.StdEncoding.DecodeString, as far as telling valid from not: padded, CR/LF skipped. */
function strictBase64(s: string): Buffer | null {
  const t = s.replace(/[\r\n]/g, '');
  return t.length % 4 === 0 && /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(t) ? Buffer.from(t, 'base64') : null;
}

/** schema.ParseGroupResource: `deployments.apps` → deployments in apps; `secrets` → secrets in the core group. */
function parseGroupResource(s: string): { group: string; resource: string } {
  const i = s.indexOf('.');
  return i < 0 ? { group: '', resource: s } : { group: s.slice(i + 1), resource: s.slice(0, i) };
}
/** A group-resource as the storage keys spell it (`secrets`, `deployments.apps`); `*.` is `*`. */
const grKey = (g: { group: string; resource: string }) => (g.group ? `${g.resource}.${g.group}` : g.resource);

/**
 * Parses and checks an EncryptionConfiguration (upstream's ValidateEncryptionConfiguration, its messages; then what
 * nodenet does not run). @throws InvalidConfig listing every problem
 */
export function parseEncryptionConfig(text: string): EncryptionConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, `error while parsing file: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isObj(doc)) throw new NodenetError(ErrorCode.InvalidConfig, 'error while parsing file: not an EncryptionConfiguration object');
  if (doc['apiVersion'] !== 'apiserver.config.k8s.io/v1' || doc['kind'] !== 'EncryptionConfiguration') {
    throw new NodenetError(ErrorCode.InvalidConfig, `apiVersion ${JSON.stringify(doc['apiVersion'] ?? '')}, kind ${JSON.stringify(doc['kind'] ?? '')}: expected apiVersion apiserver.config.k8s.io/v1, kind EncryptionConfiguration`);
  }
  const errs: string[] = [];
  const required = (path: string, detail: string) => errs.push(`${path}: Required value: ${detail}`);
  const invalid = (path: string, value: unknown, detail: string) => errs.push(`${path}: Invalid value: ${JSON.stringify(value)}: ${detail}`);
  const rules = Array.isArray(doc['resources']) ? doc['resources'] : [];
  if (!rules.length) required('resources', 'at least one resources is required');
  const byResource = new Map<string, Transformer[]>();
  rules.forEach((rule, i) => {
    const r = isObj(rule) ? rule : {};
    const rp = `resources[${i}].resources`;
    const pp = `resources[${i}].providers`;
    const names = (Array.isArray(r['resources']) ? r['resources'] : []).map((x) => String(x));
    if (!names.length) required(rp, `at least one ${rp} is required`);
    resourceErrors(names, rp, invalid);
    const providers = Array.isArray(r['providers']) ? r['providers'] : [];
    if (!providers.length) required(pp, `at least one ${pp} is required`);
    const transformers: Transformer[] = [];
    providers.forEach((p, j) => transformers.push(...providerTransformers(isObj(p) ? p : {}, `${pp}[${j}]`, required, invalid, errs)));
    // The first rule that names a resource holds it (upstream's map, filled in file order).
    for (const n of names) {
      const k = grKey(parseGroupResource(n));
      if (!byResource.has(k)) byResource.set(k, transformers);
    }
  });
  if (errs.length) throw new NodenetError(ErrorCode.InvalidConfig, errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`);
  return { byResource };
}

/** validateResourceOverlap and validateResourceNames. */
function resourceErrors(names: readonly string[], path: string, invalid: (p: string, v: unknown, d: string) => void): void {
  const grs = names.map(parseGroupResource);
  let duplicate = false;
  let overlap = false;
  grs.forEach((a, i) => grs.forEach((b, j) => {
    if (i === j) return;
    if (a.group === b.group && a.resource === b.resource) duplicate = true;
    else if ((a.group === '*' && a.resource === '*') || (a.group === b.group && (a.resource === '*' || b.resource === '*'))) overlap = true;
  }));
  if (duplicate) invalid(path, names, 'the same resource cannot be specified multiple times');
  if (overlap) invalid(path, names, "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked");
  names.forEach((n, j) => {
    const p = `${path}[${j}]`;
    const gr = grs[j]!;
    if (n.toLowerCase() !== n) invalid(p, n, 'resource name should not contain capital letters');
    else if (n === '*') invalid(p, n, "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources");
    else if (['apiserveripinfo', 'serviceipallocations', 'servicenodeportallocations'].includes(n)) invalid(p, n, 'resources which do not have REST API/s cannot be encrypted');
    else if (gr.group === 'events.k8s.io') invalid(p, n, "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file");
    else if (gr.group === 'extensions') invalid(p, n, "'extensions' group has been removed and cannot be used for encryption");
    else if (gr.group === '*' && gr.resource !== '*') invalid(p, n, 'encrypting the same resource across groups is not supported');
  });
}

const PROVIDERS = ['aescbc', 'aesgcm', 'identity'];

/** validateSingleProvider and validateKeys, and the provider's transformers (one per key). */
function providerTransformers(
  p: Raw,
  path: string,
  required: (p: string, d: string) => void,
  invalid: (p: string, v: unknown, d: string) => void,
  errs: string[],
): Transformer[] {
  const known = ['kms', 'aesgcm', 'aescbc', 'secretbox', 'identity'].filter((k) => k in p && p[k] !== null);
  if (!known.length) {
    invalid(path, Object.keys(p).join(','), 'provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity');
    return [];
  }
  if (known.length > 1) {
    invalid(path, known.join(','), 'more than one provider specified in a single element, should split into different list elements');
    return [];
  }
  const kind = known[0]!;
  if (kind === 'identity') return [IDENTITY];
  if (!PROVIDERS.includes(kind)) {
    errs.push(`${path}.${kind}: Unsupported value: "${kind}": supported values: ${PROVIDERS.map((x) => `"${x}"`).join(', ')}`);
    return [];
  }
  const kp = `${path}.${kind}.keys`;
  const keys = Array.isArray((p[kind] as Raw | undefined)?.['keys']) ? ((p[kind] as Raw)['keys'] as unknown[]) : [];
  if (!keys.length) {
    required(kp, 'at least one keys is required');
    return [];
  }
  const out: Transformer[] = [];
  keys.forEach((k, i) => {
    const key = isObj(k) ? k : {};
    const name = typeof key['name'] === 'string' ? key['name'] : '';
    const secret = typeof key['secret'] === 'string' ? key['secret'] : '';
    if (!name) required(`${kp}[${i}].name`, 'name is a mandatory field for a key');
    if (!secret) return void required(`${kp}[${i}].secret`, 'secret is a mandatory field for a key');
    const bytes = strictBase64(secret);
    if (!bytes) return void invalid(`${kp}[${i}].secret`, 'REDACTED', 'secrets must be base64 encoded');
    if (!AES_KEY_SIZES.includes(bytes.length)) return void invalid(`${kp}[${i}].secret`, 'REDACTED', `secret is not of the expected length, got ${bytes.length}, expected one of [${AES_KEY_SIZES.join(' ')}]`);
    if (name) out.push(kind === 'aescbc' ? aescbc(name, bytes) : aesgcm(name, bytes));
  });
  return out;
}

/** Reads and parses `--encryption-provider-config`. @throws InvalidConfig naming the file */
export function loadEncryptionConfig(file: string): EncryptionConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, `--encryption-provider-config ${file}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  try {
    return parseEncryptionConfig(text);
  } catch (e) {
    if (e instanceof NodenetError) throw new NodenetError(e.code, `--encryption-provider-config ${file}: ${e.message}`, { cause: e });
    throw e;
  }
}

/** What the configuration does, one line per resource: `secrets: aescbc:key1 (writes), identity`. For the start log. */
export function describeEncryption(c: EncryptionConfig): string[] {
  return [...c.byResource].map(([gr, ts]) => `${gr === '*' ? '*.' : gr}: ${ts.map((t, i) => (i === 0 ? `${t.name} (writes)` : t.name)).join(', ')}`);
}

/** The storage interface with encryption at rest under it. */
export class EncryptedStorage implements Storage {
  readonly kind: string;
  readonly durable: boolean;
  private readonly memo = new Map<string, readonly Transformer[] | null>();

  constructor(readonly inner: Storage, private readonly config: EncryptionConfig) {
    this.kind = inner.kind;
    this.durable = inner.durable;
  }

  /** The transformers of a key's group-resource, or null when no rule names it. */
  private transformers(key: string): readonly Transformer[] | null {
    const gr = grOf(key);
    let ts = this.memo.get(gr);
    if (ts === undefined) {
      const { group } = parseGroupResource(gr);
      const m = this.config.byResource;
      ts = m.get(gr) ?? m.get(group ? `*.${group}` : '*') ?? m.get('*.*') ?? null;
      this.memo.set(gr, ts);
    }
    return ts;
  }

  /** What the backend stores for obj under key. */
  seal(key: string, obj: KObject): KObject {
    const first = this.transformers(key)?.[0];
    if (!first || first === IDENTITY) return obj;
    let plain: KObject = obj;
    if (obj.metadata && 'resourceVersion' in obj.metadata) {
      const { resourceVersion: _rv, ...meta } = obj.metadata;
      plain = { ...obj, metadata: meta };
    }
    const data = first.seal(Buffer.from(JSON.stringify(plain), 'utf8'), Buffer.from(key, 'utf8'));
    return { [ENVELOPE_FIELD]: `${first.prefix}${data.toString('base64')}` };
  }

  /** The object a stored value holds. @throws StoreUnreadable */
  open(s: Stored): Stored {
    const ts = this.transformers(s.key);
    if (!ts) return s;
    const raw = s.object;
    const text = raw.kind === undefined && typeof raw[ENVELOPE_FIELD] === 'string' ? (raw[ENVELOPE_FIELD] as string) : null;
    const errs: string[] = [];
    for (const t of ts) {
      if (t === IDENTITY) {
        // Identity reads plaintext only; on an encrypted value it fails, and the next provider is tried.
        if (text === null) return t === ts[0] ? s : { ...s, stale: true };
        continue;
      }
      if (text === null || !text.startsWith(t.prefix)) continue;
      let parsed: unknown;
      try {
        const plain = t.open(Buffer.from(text.slice(t.prefix.length), 'base64'), Buffer.from(s.key, 'utf8'));
        parsed = JSON.parse(plain.toString('utf8'));
      } catch (e) {
        errs.push(e instanceof SyntaxError ? 'the decrypted value is not JSON' : e instanceof Error ? e.message : String(e));
        continue;
      }
      if (!isObj(parsed)) {
        errs.push('the decrypted value is not a JSON object');
        continue;
      }
      const meta = isObj(parsed['metadata']) ? parsed['metadata'] : {};
      const object: KObject = { ...parsed, metadata: { ...meta, resourceVersion: String(raw.metadata?.['resourceVersion'] ?? s.rev) } };
      return { key: s.key, rev: s.rev, createRev: s.createRev, object, json: JSON.stringify(object), ...(t === ts[0] ? {} : { stale: true }) };
    }
    const why = errs.length === 1 ? errs[0]! : errs.length ? `[${errs.join(', ')}]` : text !== null && !text.startsWith(ENCRYPTED_PREFIX) ? 'not an encrypted value' : 'no matching prefix found';
    throw new NodenetError(ErrorCode.StoreUnreadable, `unable to transform key ${JSON.stringify(s.key)}: ${why}`);
  }

  private openMaybe(s: Stored | undefined): Stored | undefined {
    return s === undefined ? undefined : this.open(s);
  }

  /** A conflict carries the current version: opened, for the caller's retry. */
  private mapError(e: unknown, key: string, ops?: readonly TxnOp[]): unknown {
    if (e instanceof ConflictError) return Object.assign(new ConflictError(key, 0, this.openMaybe(e.current)), { message: e.message });
    if (e instanceof TxnFailed && ops) {
      const op = ops[e.index]!;
      return new TxnFailed(e.index, op, this.mapError(e.cause, op.key) as NodenetError);
    }
    return e;
  }

  async create(key: string, obj: KObject): Promise<Stored> {
    return this.open(await this.inner.create(key, this.seal(key, obj)));
  }

  async update(key: string, obj: KObject, expectRev: number): Promise<Stored> {
    try {
      return this.open(await this.inner.update(key, this.seal(key, obj), expectRev));
    } catch (e) {
      throw this.mapError(e, key);
    }
  }

  async delete(key: string, expectRev?: number): Promise<Stored> {
    try {
      return this.open(await this.inner.delete(key, expectRev));
    } catch (e) {
      throw this.mapError(e, key);
    }
  }

  async txn(ops: readonly TxnOp[]): Promise<(Stored | undefined)[]> {
    const sealed = ops.map((o): TxnOp => (o.op === 'delete' ? o : { ...o, obj: this.seal(o.key, o.obj) }));
    let out: (Stored | undefined)[];
    try {
      out = await this.inner.txn(sealed);
    } catch (e) {
      throw this.mapError(e, '', ops);
    }
    return out.map((s) => this.openMaybe(s));
  }

  async get(key: string, opts?: { readonly rev?: number }): Promise<Stored | undefined> {
    return this.openMaybe(await this.inner.get(key, opts));
  }

  async list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    const r = await this.inner.list(prefix, opts);
    return { ...r, items: r.items.map((s) => this.open(s)) };
  }

  watch(opts: StorageWatchOptions): StorageWatch {
    let failed = false;
    let handle: StorageWatch | undefined;
    const onEvent = (ev: StoreEvent) => {
      if (failed) return;
      let opened: StoreEvent;
      try {
        opened = { ...ev, cur: this.open(ev.cur), prev: ev.prev ? this.open(ev.prev) : null };
      } catch (e) {
        // The watch ends with the error: its consumer lists again (and reports what it cannot read).
        failed = true;
        handle?.stop();
        opts.onError(e instanceof NodenetError ? e : new NodenetError(ErrorCode.StoreUnreadable, String(e)));
        return;
      }
      opts.onEvent(opened);
    };
    handle = this.inner.watch({ ...opts, onEvent });
    if (failed) handle.stop();
    return handle;
  }

  currentRev(): Promise<number> {
    return this.inner.currentRev();
  }

  compactedRev(): Promise<number> {
    return this.inner.compactedRev();
  }

  compact(rev: number): Promise<void> {
    return this.inner.compact(rev);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** The storage as the configuration has it: encrypted, or as it is when there is no configuration. */
export function withEncryption(storage: Storage, config: EncryptionConfig | null): Storage {
  return config ? new EncryptedStorage(storage, config) : storage;
}
