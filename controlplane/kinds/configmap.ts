/**
 * controlplane/kinds/configmap: ConfigMaps and Secrets (core/v1) as kube-apiserver's registry treats them:
 * the v1 decoding of their byte fields, Convert_v1_Secret_To_core_Secret (stringData), SetDefaults_Secret, and
 * pkg/apis/core/validation's ValidateConfigMap / ValidateConfigMapUpdate and ValidateSecret / ValidateSecretUpdate,
 * in upstream's field-error words. Pure.
 *
 * Upstream's rules and where they are (x: here, -: left out, why):
 *   decoding  x `binaryData` and Secret `data` values are base64 (Go's StdEncoding: padding required, CR and LF
 *               skipped): a bad one is upstream's 400, `Secret in version "v1" cannot be handled as a Secret:
 *               illegal base64 data at input byte N`; the values are stored re-encoded, as Go marshals []byte
 *             - a bad value in a patch gets the same message (upstream's patch path words its 400 its own way)
 *   Secret    x `stringData` merged into `data` (overwriting) and dropped, on create, update and patch
 *             x `type` defaulted to Opaque; on update it may not change ("field is immutable")
 *   keys      x data and binaryData keys are config keys (IsConfigMapKey: at most 253, `[-._a-zA-Z0-9]+`, not `.`
 *               or `..`, not starting with `..`); a ConfigMap key may not be in both data and binaryData
 *   size      x 1 MiB (MaxSecretSize) of values in all: a ConfigMap's at `[]` (data counted in UTF-8 bytes,
 *               binaryData decoded), a Secret's at `data`
 *   immutable x once `immutable` is true it stays true and data (and a ConfigMap's binaryData) cannot change:
 *               "field is immutable when `immutable` is set"
 *             - data compared as maps where absent and empty are the same (upstream's reflect.DeepEqual tells a
 *               `data: {}` from no data; a client cannot see the difference in a stored object)
 *   types     x kubernetes.io/service-account-token: the kubernetes.io/service-account.name annotation
 *             x kubernetes.io/dockercfg / dockerconfigjson: `.dockercfg` / `.dockerconfigjson`, a JSON object (Go's
 *               json.Unmarshal message when it is not)
 *             x kubernetes.io/basic-auth: `username` or `password`; kubernetes.io/ssh-auth: a non-empty
 *               `ssh-privatekey`; kubernetes.io/tls: `tls.crt` and `tls.key` (not parsed, as upstream)
 *             x bootstrap.kubernetes.io/token and any other type: nothing (upstream's ValidateSecret has no rule for
 *               them; the bootstrap authenticator reads only well-formed ones)
 * Errors about several keys are in key order (upstream walks a Go map, in no order).
 */
import { apiErrors, fieldErr, type FieldError } from '../api/errors.js';
import { obj, str, type O } from './common.js';
import { sameMap, type Strategy } from './strategy.js';

/** core.MaxSecretSize: what a ConfigMap's or a Secret's values may hold in all. */
export const MAX_SECRET_SIZE = 1024 * 1024;
export const IMMUTABLE_WHEN_SET = 'field is immutable when `immutable` is set';

export const SECRET_TYPES = {
  opaque: 'Opaque',
  serviceAccountToken: 'kubernetes.io/service-account-token',
  dockercfg: 'kubernetes.io/dockercfg',
  dockerConfigJson: 'kubernetes.io/dockerconfigjson',
  basicAuth: 'kubernetes.io/basic-auth',
  sshAuth: 'kubernetes.io/ssh-auth',
  tls: 'kubernetes.io/tls',
  bootstrapToken: 'bootstrap.kubernetes.io/token',
} as const;

const CONFIG_KEY_TEXT = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/** IsConfigMapKey: every problem with a ConfigMap's or a Secret's key, in upstream's order. */
export function configKeyProblems(key: string): string[] {
  const out: string[] = [];
  if (key.length > 253) out.push('must be no more than 253 characters');
  if (!/^[-._a-zA-Z0-9]+$/.test(key)) out.push(CONFIG_KEY_TEXT);
  if (key === '.') out.push("must not be '.'");
  else if (key === '..') out.push("must not be '..'");
  else if (key.startsWith('..')) out.push("must not start with '..'");
  return out;
}

const B64 = new Int16Array(256).fill(-1);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) B64[c.charCodeAt(0)] = i;

/**
 * base64.StdEncoding.DecodeString as Go runs it: the bytes, or the offset Go's CorruptInputError names ("illegal
 * base64 data at input byte N"). Padding is required; CR and LF anywhere are skipped; unused trailing bits are not
 * checked (StdEncoding is not Strict).
 */
export function decodeGoBase64(s: string): { bytes: Buffer } | { badAt: number } {
  const src = Buffer.from(s, 'utf8');
  const out: number[] = [];
  const skipNewlines = (i: number) => {
    while (i < src.length && (src[i] === 0x0a || src[i] === 0x0d)) i++;
    return i;
  };
  let si = 0;
  for (;;) {
    const q: number[] = [];
    let end = false;
    while (q.length < 4) {
      if (si === src.length) {
        if (q.length === 0) return { bytes: Buffer.from(out) };
        return { badAt: si - q.length };
      }
      const c = src[si++]!;
      if (B64[c]! >= 0) {
        q.push(B64[c]!);
        continue;
      }
      if (c === 0x0a || c === 0x0d) continue;
      if (c !== 0x3d || q.length < 2) return { badAt: si - 1 };
      // Padding: after two symbols a second '=' must follow (newlines between allowed); then nothing but newlines.
      if (q.length === 2) {
        si = skipNewlines(si);
        if (si === src.length) return { badAt: src.length };
        if (src[si] !== 0x3d) return { badAt: si - 1 };
        si++;
      }
      si = skipNewlines(si);
      if (si < src.length) return { badAt: si };
      end = true;
      break;
    }
    const [a = 0, b = 0, c = 0, d = 0] = q;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out.push((n >> 16) & 255);
    if (q.length > 2) out.push((n >> 8) & 255);
    if (q.length > 3) out.push(n & 255);
    if (end) return { bytes: Buffer.from(out) };
  }
}

/**
 * The v1 decoding of a map of byte values (map[string][]byte): each value base64-decoded, as Go's JSON decoder does,
 * and stored as Go writes it back (canonical base64). @throws the decoder's 400
 */
function decodeBytesMap(kind: 'ConfigMap' | 'Secret', m: O): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(m)) {
    const d = decodeGoBase64(str(v));
    if ('badAt' in d) throw apiErrors.badRequest(`${kind} in version "v1" cannot be handled as a ${kind}: illegal base64 data at input byte ${d.badAt}`);
    out.set(k, d.bytes);
    m[k] = d.bytes.toString('base64');
  }
  return out;
}

const sortedKeys = (m: O | undefined): string[] => Object.keys(m ?? {}).sort();
const keyErrors = (path: string, m: O | undefined): FieldError[] =>
  sortedKeys(m).flatMap((k) => configKeyProblems(k).map((p) => fieldErr.invalid(`${path}[${k}]`, k, p)));

/** The decoded bytes of a stored (already canonical) byte map. */
const bytesOf = (m: O | undefined): Map<string, Buffer> => new Map(Object.entries(m ?? {}).map(([k, v]) => [k, Buffer.from(str(v), 'base64')]));

/** ValidateConfigMap (the metadata aside: the REST layer checks it for every kind). */
export function validateConfigMap(o: O): FieldError[] {
  const data = obj(o['data']);
  const binary = obj(o['binaryData']);
  const errs: FieldError[] = [];
  let size = 0;
  for (const k of sortedKeys(data)) {
    for (const p of configKeyProblems(k)) errs.push(fieldErr.invalid(`data[${k}]`, k, p));
    if (binary && k in binary) errs.push(fieldErr.invalid(`data[${k}]`, k, 'duplicate of key present in binaryData'));
    size += Buffer.byteLength(str(data![k]), 'utf8');
  }
  errs.push(...keyErrors('binaryData', binary));
  for (const b of bytesOf(binary).values()) size += b.length;
  // Upstream's path is field.NewPath(""): the whole object, printed `[]`.
  if (size > MAX_SECRET_SIZE) errs.push(fieldErr.tooLong('[]', MAX_SECRET_SIZE));
  return errs;
}

/** immutable: once true, the flag and the listed byte fields stay as they are. */
function immutableErrors(o: O, old: O, fields: readonly string[]): FieldError[] {
  if (old['immutable'] !== true) return [];
  const errs: FieldError[] = [];
  if (o['immutable'] !== true) errs.push(fieldErr.forbidden('immutable', IMMUTABLE_WHEN_SET));
  for (const f of fields) if (!sameMap(o[f], old[f])) errs.push(fieldErr.forbidden(f, IMMUTABLE_WHEN_SET));
  return errs;
}

/** ValidateConfigMapUpdate. */
export function validateConfigMapUpdate(o: O, old: O): FieldError[] {
  return [...immutableErrors(o, old, ['data', 'binaryData']), ...validateConfigMap(o)];
}

/**
 * What Go's json.Unmarshal(b, &map[string]interface{}{}) says of b: null when it takes it, else its error text
 * (the scanner's syntax errors, or the type error of a value that is not an object).
 */
export function goJsonObjectError(b: Uint8Array): string | null {
  const s = new GoJsonScanner();
  for (const c of b) {
    s.step(c);
    if (s.err) return s.err;
  }
  const end = s.eof();
  if (end) return end;
  const first = b.find((c) => !isSpace(c));
  const kind = first === 0x7b || first === 0x6e ? null : first === 0x5b ? 'array' : first === 0x22 ? 'string' : first === 0x74 || first === 0x66 ? 'bool' : 'number';
  return kind ? `json: cannot unmarshal ${kind} into Go value of type map[string]interface {}` : null;
}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const GO_ESCAPES: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0x5c: '\\\\' };

/** encoding/json's quoteChar: a byte as its syntax errors show it. */
function quoteChar(c: number): string {
  if (c === 0x27) return "'\\''";
  if (c === 0x22) return "'\"'";
  const e = GO_ESCAPES[c] ?? (c < 0x20 || c === 0x7f ? `\\x${c.toString(16).padStart(2, '0')}` : c >= 0x80 && c < 0xa0 ? `\\u00${c.toString(16)}` : String.fromCharCode(c));
  return `'${e}'`;
}

/**
 * A JSON syntax checker that fails where encoding/json's scanner does, with its words: one step per byte, and at the
 * end a space fed in (so `1.` ends "after decimal point in numeric literal", `{"a":1` "unexpected end of JSON input").
 */
class GoJsonScanner {
  err: string | null = null;
  private endTop = false;
  /** What each open object or array expects: an object key, an object value, an array element. */
  private readonly stack: ('key' | 'value' | 'array')[] = [];
  step: (c: number) => void = (c) => this.beginValue(c);

  eof(): string | null {
    if (this.err) return this.err;
    if (this.endTop) return null;
    this.step(0x20);
    if (this.endTop) return null;
    return this.err ?? 'unexpected end of JSON input';
  }

  private fail(c: number, context: string): void {
    this.err = `invalid character ${quoteChar(c)} ${context}`;
    this.step = () => {};
  }

  private beginValue(c: number): void {
    if (isSpace(c)) return;
    switch (c) {
      case 0x7b: // {
        this.stack.push('key');
        this.step = (x) => this.keyOrEnd(x);
        return;
      case 0x5b: // [
        this.stack.push('array');
        this.step = (x) => (x === 0x5d ? this.endValue(x) : this.beginValue(x));
        return;
      case 0x22:
        this.step = (x) => this.inString(x);
        return;
      case 0x2d: // -
        this.step = (x) => this.negative(x);
        return;
      case 0x30:
        this.step = (x) => this.zero(x);
        return;
      case 0x74:
        return this.literal('true', 1);
      case 0x66:
        return this.literal('false', 1);
      case 0x6e:
        return this.literal('null', 1);
    }
    if (c >= 0x31 && c <= 0x39) this.step = (x) => this.digits(x);
    else this.fail(c, 'looking for beginning of value');
  }

  /** Just after `{`: a key, or the end of an empty object. */
  private keyOrEnd(c: number): void {
    if (c !== 0x7d) return this.beginString(c);
    this.stack[this.stack.length - 1] = 'value';
    this.endValue(c);
  }

  private beginString(c: number): void {
    if (isSpace(c)) return;
    if (c === 0x22) this.step = (x) => this.inString(x);
    else this.fail(c, 'looking for beginning of object key string');
  }

  private literal(word: string, i: number): void {
    this.step = (x) => {
      if (x !== word.charCodeAt(i)) return this.fail(x, `in literal ${word} (expecting ${quoteChar(word.charCodeAt(i))})`);
      if (i + 1 === word.length) this.step = (y) => this.endValue(y);
      else this.literal(word, i + 1);
    };
  }

  private inString(c: number): void {
    if (c === 0x22) this.step = (x) => this.endValue(x);
    else if (c === 0x5c) this.step = (x) => this.escape(x);
    else if (c < 0x20) this.fail(c, 'in string literal');
  }

  private escape(c: number): void {
    if ([0x62, 0x66, 0x6e, 0x72, 0x74, 0x5c, 0x2f, 0x22].includes(c)) this.step = (x) => this.inString(x);
    else if (c === 0x75) this.hex(4);
    else this.fail(c, 'in string escape code');
  }

  private hex(left: number): void {
    this.step = (x) => {
      if (!isHex(x)) return this.fail(x, 'in \\u hexadecimal character escape');
      if (left === 1) this.step = (y) => this.inString(y);
      else this.hex(left - 1);
    };
  }

  private negative(c: number): void {
    if (c === 0x30) this.step = (x) => this.zero(x);
    else if (c >= 0x31 && c <= 0x39) this.step = (x) => this.digits(x);
    else this.fail(c, 'in numeric literal');
  }

  private digits(c: number): void {
    if (!isDigit(c)) this.zero(c);
  }

  private zero(c: number): void {
    if (c === 0x2e) this.step = (x) => this.point(x);
    else if (c === 0x65 || c === 0x45) this.step = (x) => this.exponentSign(x);
    else this.endValue(c);
  }

  private point(c: number): void {
    if (isDigit(c)) this.step = (x) => this.fraction(x);
    else this.fail(c, 'after decimal point in numeric literal');
  }

  private fraction(c: number): void {
    if (isDigit(c)) return;
    if (c === 0x65 || c === 0x45) this.step = (x) => this.exponentSign(x);
    else this.endValue(c);
  }

  private exponentSign(c: number): void {
    if (c === 0x2b || c === 0x2d) this.step = (x) => this.exponentDigit(x);
    else this.exponentDigit(c);
  }

  private exponentDigit(c: number): void {
    if (isDigit(c)) this.step = (x) => this.exponentDigits(x);
    else this.fail(c, 'in exponent of numeric literal');
  }

  private exponentDigits(c: number): void {
    if (!isDigit(c)) this.endValue(c);
  }

  private endValue(c: number): void {
    const n = this.stack.length;
    if (n === 0) {
      this.endTop = true;
      this.step = (x) => this.afterTop(x);
      return this.step(c);
    }
    if (isSpace(c)) {
      this.step = (x) => this.endValue(x);
      return;
    }
    const top = this.stack[n - 1]!;
    if (top === 'key') {
      if (c !== 0x3a) return this.fail(c, 'after object key');
      this.stack[n - 1] = 'value';
      this.step = (x) => this.beginValue(x);
    } else if (top === 'value') {
      if (c === 0x2c) {
        this.stack[n - 1] = 'key';
        this.step = (x) => this.beginString(x);
      } else if (c === 0x7d) this.pop();
      else this.fail(c, 'after object key:value pair');
    } else if (c === 0x2c) this.step = (x) => this.beginValue(x);
    else if (c === 0x5d) this.pop();
    else this.fail(c, 'after array element');
  }

  private afterTop(c: number): void {
    if (!isSpace(c)) this.fail(c, 'after top-level value');
  }

  private pop(): void {
    this.stack.pop();
    if (this.stack.length === 0) {
      this.endTop = true;
      this.step = (x) => this.afterTop(x);
    } else this.step = (x) => this.endValue(x);
  }
}

/** ValidateSecret (the metadata aside). */
export function validateSecret(o: O): FieldError[] {
  const data = obj(o['data']);
  const bytes = bytesOf(data);
  const errs = keyErrors('data', data);
  let size = 0;
  for (const b of bytes.values()) size += b.length;
  if (size > MAX_SECRET_SIZE) errs.push(fieldErr.tooLong('data', MAX_SECRET_SIZE));
  const required = (k: string) => fieldErr.required(`data[${k}]`);
  const json = (k: string) => {
    const b = bytes.get(k);
    if (!b) return void errs.push(required(k));
    const e = goJsonObjectError(b);
    if (e) errs.push(fieldErr.invalid(`data[${k}]`, '<secret contents redacted>', e));
  };
  switch (str(o['type'])) {
    case SECRET_TYPES.serviceAccountToken:
      if (!str(obj(obj(o['metadata'])?.['annotations'])?.['kubernetes.io/service-account.name'])) {
        errs.push(fieldErr.required('metadata.annotations[kubernetes.io/service-account.name]'));
      }
      break;
    case SECRET_TYPES.dockercfg:
      json('.dockercfg');
      break;
    case SECRET_TYPES.dockerConfigJson:
      json('.dockerconfigjson');
      break;
    case SECRET_TYPES.basicAuth:
      // Either may be empty, but one must be there.
      if (!bytes.has('username') && !bytes.has('password')) errs.push(required('username'), required('password'));
      break;
    case SECRET_TYPES.sshAuth:
      if (!bytes.get('ssh-privatekey')?.length) errs.push(required('ssh-privatekey'));
      break;
    case SECRET_TYPES.tls:
      if (!bytes.has('tls.crt')) errs.push(required('tls.crt'));
      if (!bytes.has('tls.key')) errs.push(required('tls.key'));
      break;
  }
  return errs;
}

/** ValidateSecretUpdate: the type may not change; the immutable rules; then ValidateSecret. */
export function validateSecretUpdate(o: O, old: O): FieldError[] {
  const errs: FieldError[] = [];
  // A Secret stored before its type was defaulted reads as Opaque (upstream defaults what it decodes from storage).
  const was = str(old['type']) || SECRET_TYPES.opaque;
  if (str(o['type']) !== was) errs.push(fieldErr.invalid('type', str(o['type']), 'field is immutable'));
  return [...errs, ...immutableErrors(o, old, ['data']), ...validateSecret(o)];
}

/** The v1 decoding of a ConfigMap: binaryData's values are bytes. */
export function defaultConfigMap(o: O): void {
  const binary = obj(o['binaryData']);
  if (binary) decodeBytesMap('ConfigMap', binary);
}

/** The v1 decoding of a Secret (data's values are bytes), Convert_v1_Secret_To_core_Secret and SetDefaults_Secret. */
export function defaultSecret(o: O): void {
  const data = obj(o['data']);
  if (data) decodeBytesMap('Secret', data);
  const sd = obj(o['stringData']);
  if (sd && Object.keys(sd).length) {
    const d = data ?? (o['data'] = {} as O);
    for (const [k, v] of Object.entries(sd)) (d as O)[k] = Buffer.from(str(v), 'utf8').toString('base64');
  }
  delete o['stringData'];
  if (!str(o['type'])) o['type'] = SECRET_TYPES.opaque;
}

export const configMapStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultConfigMap,
  validate: (o, old) => (old ? validateConfigMapUpdate(o, old) : validateConfigMap(o)),
};

export const secretStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultSecret,
  validate: (o, old) => (old ? validateSecretUpdate(o, old) : validateSecret(o)),
};
