/**
 * controlplane/api/protobuf: kubectl's protobuf request bodies
 * (`application/vnd.kubernetes.protobuf`), decoded into the JSON object the
 * same client would have sent as JSON. The server then takes that object
 * down the JSON path (validation, defaults, admission): a protobuf body is
 * only another spelling of a JSON one. Answers stay JSON (kubectl reads
 * JSON answers whatever it sent).
 *
 * The wire format: the magic `k8s\0`, then a runtime.Unknown
 * {typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3,
 * contentType=4} whose raw is the object's message. The object's fields are
 * decoded by the tables of protobuf-schema.ts, which say for each field its
 * number, JSON name, type and Go shape (value, pointer, repeated, inline).
 * client-go's gogo encoding writes every non-pointer field, zero or not;
 * the Go shape decides what encoding/json would then have written, and this
 * module writes the same (a zero `generation` is left out, `resources: {}`
 * and a pointer's `replicas: 0` stay, a zero Time and an empty slice
 * without omitempty are `null`).
 *
 * Refused, never skipped: a field number a table lacks (400 naming the
 * message and the number: a value nodenet cannot honour is refused), a
 * malformed body (400: wrong magic, bad varint, truncation, a wrong wire
 * type), a kind unlike the URL's (400), a kind without a table or an
 * encoded raw (415). Pure: no I/O.
 */
import { ErrorCode } from '../../lib/errors/errors.js';
import { ApiError, apiErrors } from './errors.js';
import { kindMessage, messageSpec, type FieldSpec, type FieldType, type MessageSpec, type ScalarType, type SpecialType } from './protobuf-schema.js';

export const PROTOBUF_TYPE = 'application/vnd.kubernetes.protobuf';
const MAGIC = [0x6b, 0x38, 0x73, 0x00];
/** Deeper than any served kind nests (PodSpec is about 8 deep): bounds a hand-made body's recursion. */
const MAX_DEPTH = 64;

export interface Envelope {
  readonly apiVersion: string;
  readonly kind: string;
  readonly raw: Uint8Array;
}

/** What the URL takes: the body must be this kind (DeleteOptions: any apiVersion). */
export interface Expected {
  readonly apiVersion: string;
  readonly kind: string;
}

/**
 * The kind a subresource's body is where it is not its resource's own: a Pod's `binding` (core/v1 Binding), a
 * `scale` (autoscaling/v1 Scale), a ServiceAccount's `token` (authentication.k8s.io/v1 TokenRequest, what
 * `kubectl create token` posts). Undefined: the resource's own kind (status, or no subresource).
 */
export function subresourceBody(sub: string): Expected | undefined {
  switch (sub) {
    case 'binding': return { apiVersion: 'v1', kind: 'Binding' };
    case 'scale': return { apiVersion: 'autoscaling/v1', kind: 'Scale' };
    case 'token': return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest' };
    default: return undefined;
  }
}

const malformed = (msg: string) => apiErrors.badRequest(`the body of the request could not be decoded as ${PROTOBUF_TYPE}: ${msg}`);
const unsupported = (msg: string) => new ApiError(ErrorCode.UnsupportedMediaType, msg);

/** One protobuf field as read off the wire: its number, wire type and payload. */
interface WireField {
  readonly num: number;
  readonly wire: number;
  /** varint / fixed values */
  readonly int?: bigint;
  /** length-delimited payloads */
  readonly bytes?: Uint8Array;
  /** offset of the field's tag in its message, for messages */
  readonly at: number;
}

function readVarint(buf: Uint8Array, pos: number, what: string): [bigint, number] {
  let v = 0n;
  for (let i = 0; i < 10; i++) {
    if (pos + i >= buf.length) throw malformed(`truncated varint at byte ${pos} of ${what}`);
    const b = buf[pos + i]!;
    if (i === 9 && b > 1) throw malformed(`varint longer than 64 bits at byte ${pos} of ${what}`);
    v |= BigInt(b & 0x7f) << BigInt(7 * i);
    if ((b & 0x80) === 0) return [v, pos + i + 1];
  }
  throw malformed(`varint longer than 10 bytes at byte ${pos} of ${what}`);
}

/** The fields of one message, in wire order. */
function readFields(buf: Uint8Array, what: string): WireField[] {
  const out: WireField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const at = pos;
    const [tag, p] = readVarint(buf, pos, what);
    pos = p;
    const num = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (num === 0 || tag >> 3n > 0x1fffffffn) throw malformed(`field number ${tag >> 3n} at byte ${at} of ${what}`);
    switch (wire) {
      case 0: {
        const [v, q] = readVarint(buf, pos, what);
        out.push({ num, wire, int: v, at });
        pos = q;
        break;
      }
      case 1:
      case 5: {
        const n = wire === 1 ? 8 : 4;
        if (pos + n > buf.length) throw malformed(`truncated fixed${n * 8} field ${num} at byte ${at} of ${what}`);
        let v = 0n;
        for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(buf[pos + i]!);
        out.push({ num, wire, int: v, at });
        pos += n;
        break;
      }
      case 2: {
        const [len, q] = readVarint(buf, pos, what);
        if (BigInt(q) + len > BigInt(buf.length)) throw malformed(`field ${num} at byte ${at} of ${what} is ${len} bytes long, past the end of its message`);
        out.push({ num, wire, bytes: buf.subarray(q, q + Number(len)), at });
        pos = q + Number(len);
        break;
      }
      default:
        throw malformed(`field ${num} at byte ${at} of ${what} has wire type ${wire} (groups are not used by Kubernetes)`);
    }
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function str(b: Uint8Array, what: string): string {
  try {
    return utf8.decode(b);
  } catch {
    throw malformed(`${what} is not valid UTF-8`);
  }
}

/** The magic and the runtime.Unknown around the object. */
export function decodeEnvelope(body: Uint8Array): Envelope {
  if (body.length < MAGIC.length || MAGIC.some((b, i) => body[i] !== b)) throw malformed('it does not start with the magic "k8s\\x00"');
  let apiVersion = '';
  let kind = '';
  let raw: Uint8Array = new Uint8Array(0);
  let contentEncoding = '';
  let contentType = '';
  const need2 = (f: WireField, name: string): Uint8Array => {
    if (f.wire !== 2 || !f.bytes) throw malformed(`runtime.Unknown field ${f.num} (${name}) has wire type ${f.wire}, not 2`);
    return f.bytes;
  };
  for (const f of readFields(body.subarray(MAGIC.length), 'runtime.Unknown')) {
    switch (f.num) {
      case 1:
        for (const g of readFields(need2(f, 'typeMeta'), 'runtime.TypeMeta')) {
          if (g.num === 1) apiVersion = str(need2(g, 'apiVersion'), 'typeMeta.apiVersion');
          else if (g.num === 2) kind = str(need2(g, 'kind'), 'typeMeta.kind');
          else throw apiErrors.badRequest(`protobuf: k8s.io.apimachinery.pkg.runtime.TypeMeta has no field ${g.num} known to this server; it refuses what it cannot read`);
        }
        break;
      case 2: raw = need2(f, 'raw'); break;
      case 3: contentEncoding = str(need2(f, 'contentEncoding'), 'contentEncoding'); break;
      case 4: contentType = str(need2(f, 'contentType'), 'contentType'); break;
      default: throw apiErrors.badRequest(`protobuf: k8s.io.apimachinery.pkg.runtime.Unknown has no field ${f.num} known to this server; it refuses what it cannot read`);
    }
  }
  if (contentEncoding !== '') throw unsupported(`protobuf: a raw object with contentEncoding ${JSON.stringify(contentEncoding)} is not supported: send it unencoded`);
  if (contentType !== '' && contentType !== PROTOBUF_TYPE) throw unsupported(`protobuf: a raw object of contentType ${JSON.stringify(contentType)} is not supported`);
  if (!kind) throw malformed('the runtime.Unknown names no kind');
  return { apiVersion, kind, raw };
}

/**
 * The JSON object a protobuf body stands for, with the envelope's kind and
 * apiVersion. With `expected`, the body must be that kind (400 otherwise).
 */
export function decodeProtobufBody(body: Uint8Array, expected?: Expected): Record<string, unknown> {
  const env = decodeEnvelope(body);
  const gv = env.apiVersion;
  if (expected && (env.kind !== expected.kind || (expected.kind !== 'DeleteOptions' && gv !== expected.apiVersion))) {
    throw apiErrors.badRequest(`the protobuf body holds ${gv ? `${gv}, ` : ''}Kind=${env.kind}, but this URL takes ${expected.apiVersion}, Kind=${expected.kind}`);
  }
  const name = kindMessage(gv, env.kind);
  if (!name) throw unsupported(`protobuf bodies of kind ${gv ? `${gv}/` : ''}${env.kind} are not supported by this server: send it as application/json or application/yaml`);
  const obj = decodeMessage(env.raw, messageSpec(name), env.kind, 0);
  return { kind: env.kind, ...(gv ? { apiVersion: gv } : {}), ...obj };
}

/** A message's JSON object. `path` is the JSON path so far, for messages. */
function decodeMessage(buf: Uint8Array, spec: MessageSpec, path: string, depth: number): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw malformed(`messages nested deeper than ${MAX_DEPTH} at ${path}`);
  const what = `${spec.fullName} (${path})`;
  // Occurrences per field: a singular scalar's last wins; a singular message's occurrences merge (protobuf's rule: concatenation).
  const seen = new Map<number, WireField[]>();
  for (const f of readFields(buf, what)) {
    const fs = spec.fields.get(f.num);
    if (!fs) throw apiErrors.badRequest(`protobuf: ${spec.fullName} has no field ${f.num} (wire type ${f.wire}, at ${path}) known to this server; it refuses what it cannot honour`);
    let l = seen.get(f.num);
    if (!l) seen.set(f.num, (l = []));
    l.push(f);
  }
  const out: Record<string, unknown> = {};
  for (const fs of spec.fields.values()) {
    const occ = seen.get(fs.num) ?? [];
    const p = `${path}.${fs.json}`;
    if (fs.shape === 'repeated' || fs.shape === 'repeatedAlways') {
      // A slice without omitempty is written even when empty: `null`, as encoding/json writes the nil slice gogo leaves.
      const items = occ.flatMap((f) => repeatedValues(f, fs, p, depth));
      if (items.length) out[fs.json] = items;
      else if (fs.shape === 'repeatedAlways') out[fs.json] = null;
      continue;
    }
    if (fs.type.t === 'map') {
      if (occ.length === 0) continue;
      const m: Record<string, unknown> = {};
      for (const f of occ) {
        const [k, v] = mapEntry(lenDelimited(f, fs, p), fs.type.key, fs.type.value, p, depth);
        m[k] = v;
      }
      out[fs.json] = m;
      continue;
    }
    if (fs.type.t === 'message') {
      if (fs.shape === 'pointer' && occ.length === 0) continue;
      const v = decodeMessage(concat(occ.map((f) => lenDelimited(f, fs, p))), messageSpec(fs.type.name), p, depth + 1);
      if (fs.shape === 'inline') Object.assign(out, v);
      else out[fs.json] = v;
      continue;
    }
    const last = occ[occ.length - 1];
    if (fs.type.t === 'special') {
      // As encoding/json writes them: an absent pointer is left out; a value Time or MicroTime is always written, null
      // when zero (`"creationTimestamp": null`, what kubectl sends as JSON); a value IntOrString or Quantity is always written.
      if (!last && (fs.shape === 'pointer' || fs.type.s === 'f1')) continue;
      const v = special(fs.type.s, last ? lenDelimited(last, fs, p) : new Uint8Array(0), p);
      out[fs.json] = v === undefined ? null : v;
      continue;
    }
    if (!last) {
      if (fs.shape === 'always') out[fs.json] = zeroOf(fs.type.s);
      continue;
    }
    const v = scalar(last, fs.type.s, p);
    if (fs.shape === 'value' && isZero(v)) continue;
    out[fs.json] = v;
  }
  return out;
}

function lenDelimited(f: WireField, fs: FieldSpec, path: string): Uint8Array {
  if (f.wire !== 2 || !f.bytes) throw malformed(`${path} (field ${fs.num}) has wire type ${f.wire}, not 2`);
  return f.bytes;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function repeatedValues(f: WireField, fs: FieldSpec, path: string, depth: number): unknown[] {
  const t = fs.type;
  if (t.t === 'message') return [decodeMessage(lenDelimited(f, fs, path), messageSpec(t.name), `${path}[]`, depth + 1)];
  if (t.t === 'special') return [special(t.s, lenDelimited(f, fs, path), `${path}[]`) ?? null];
  if (t.t === 'map') throw malformed(`${path}: a repeated map`);
  if (t.s === 's' || t.s === 'bytes' || f.wire !== 2) return [scalar(f, t.s, `${path}[]`)];
  // A packed run of varints.
  const out: unknown[] = [];
  const b = f.bytes!;
  let pos = 0;
  while (pos < b.length) {
    const [v, q] = readVarint(b, pos, path);
    out.push(scalar({ num: f.num, wire: 0, int: v, at: f.at }, t.s, `${path}[]`));
    pos = q;
  }
  return out;
}

function mapEntry(buf: Uint8Array, keyType: ScalarType, valueType: FieldType, path: string, depth: number): [string, unknown] {
  let key: unknown = zeroOf(keyType);
  let value: WireField | undefined;
  for (const f of readFields(buf, `${path} (a map entry)`)) {
    if (f.num === 1) key = scalar(f, keyType, `${path} key`);
    else if (f.num === 2) value = f;
    else throw apiErrors.badRequest(`protobuf: a map entry of ${path} has no field ${f.num} (only key=1 and value=2)`);
  }
  const k = String(key);
  const p = `${path}[${JSON.stringify(k)}]`;
  const fs: FieldSpec = { num: 2, json: 'value', shape: 'value', type: valueType };
  switch (valueType.t) {
    case 'scalar': return [k, value ? scalar(value, valueType.s, p) : zeroOf(valueType.s)];
    case 'special': return [k, special(valueType.s, value ? lenDelimited(value, fs, p) : new Uint8Array(0), p) ?? null];
    case 'message': return [k, decodeMessage(value ? lenDelimited(value, fs, p) : new Uint8Array(0), messageSpec(valueType.name), p, depth + 1)];
    case 'map': throw malformed(`${path}: a map of maps`);
  }
}

function zeroOf(s: ScalarType): unknown {
  return s === 's' || s === 'bytes' ? '' : s === 'b' ? false : 0;
}

function isZero(v: unknown): boolean {
  return v === '' || v === 0 || v === false;
}

function scalar(f: WireField, s: ScalarType, path: string): unknown {
  if (s === 's' || s === 'bytes') {
    if (f.wire !== 2 || !f.bytes) throw malformed(`${path} (field ${f.num}) has wire type ${f.wire}, not 2`);
    return s === 's' ? str(f.bytes, path) : Buffer.from(f.bytes).toString('base64');
  }
  if (f.wire !== 0 || f.int === undefined) throw malformed(`${path} (field ${f.num}) has wire type ${f.wire}, not 0 (varint)`);
  if (s === 'b') return f.int !== 0n;
  if (s === 'i32') return Number(BigInt.asIntN(32, f.int));
  const v = BigInt.asIntN(64, f.int);
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw apiErrors.badRequest(`protobuf: ${path} is ${v}, beyond what this server represents exactly (±2^53)`);
  return Number(v);
}

/** Reads a small helper message of varints and strings: field number -> last occurrence. */
function helper(buf: Uint8Array, name: string, known: readonly number[], path: string): Map<number, WireField> {
  const m = new Map<number, WireField>();
  for (const f of readFields(buf, `${name} (${path})`)) {
    if (!known.includes(f.num)) throw apiErrors.badRequest(`protobuf: ${name} has no field ${f.num} (wire type ${f.wire}, at ${path}) known to this server; it refuses what it cannot honour`);
    m.set(f.num, f);
  }
  return m;
}

const ZERO_TIME_SECONDS = -62135596800n; // 0001-01-01T00:00:00Z, Go's zero time.Time

function special(s: SpecialType, buf: Uint8Array, path: string): unknown {
  switch (s) {
    case 'time':
    case 'mtime': {
      // Empty is Go's zero time, whose JSON is null. metav1.Time keeps only the seconds; MicroTime the microseconds.
      if (buf.length === 0) return undefined;
      const f = helper(buf, 'k8s.io.apimachinery.pkg.apis.meta.v1.Timestamp', [1, 2], path);
      const secF = f.get(1);
      const nanoF = f.get(2);
      const sec = secF ? BigInt.asIntN(64, varintOf(secF, path)) : 0n;
      const nanos = nanoF ? Number(BigInt.asIntN(32, varintOf(nanoF, path))) : 0;
      if (nanos < 0 || nanos > 999_999_999) throw apiErrors.badRequest(`protobuf: ${path}: nanos ${nanos} out of range`);
      const micros = s === 'mtime' ? Math.floor(nanos / 1000) : 0;
      if (sec === ZERO_TIME_SECONDS && micros === 0) return undefined;
      // Years 0001-9999, as Go's Time.MarshalJSON allows.
      if (sec < ZERO_TIME_SECONDS || sec > 253402300799n) throw apiErrors.badRequest(`protobuf: ${path}: ${sec} seconds is outside the years 0001-9999`);
      const iso = new Date(Number(sec) * 1000).toISOString().slice(0, 19); // YYYY-MM-DDTHH:MM:SS (years < 1970 too)
      return s === 'time' ? `${iso}Z` : `${iso}.${String(micros).padStart(6, '0')}Z`;
    }
    case 'qty': {
      const f = helper(buf, 'k8s.io.apimachinery.pkg.api.resource.Quantity', [1], path).get(1);
      const v = f ? scalar(f, 's', path) : '';
      // An empty Quantity is zero, "0" in JSON; a bad one the JSON path refuses as it would the same string.
      return v === '' ? '0' : v;
    }
    case 'ios': {
      const f = helper(buf, 'k8s.io.apimachinery.pkg.util.intstr.IntOrString', [1, 2, 3], path);
      const type = f.get(1) ? BigInt.asIntN(64, varintOf(f.get(1)!, path)) : 0n;
      if (type === 0n) return f.get(2) ? scalar(f.get(2)!, 'i32', path) : 0;
      if (type === 1n) return f.get(3) ? scalar(f.get(3)!, 's', path) : '';
      throw apiErrors.badRequest(`protobuf: ${path}: IntOrString type ${type} is neither 0 (int) nor 1 (string)`);
    }
    case 'strs': {
      // ExtraValue, AttestationValue: a []string as a message {items=1}. gogo decodes a map's value into a fresh
      // non-nil slice, so an empty one is `[]`, not null.
      const out: unknown[] = [];
      for (const f of readFields(buf, `a string list (${path})`)) {
        if (f.num !== 1) throw apiErrors.badRequest(`protobuf: the string list at ${path} has no field ${f.num} (wire type ${f.wire}) known to this server; it refuses what it cannot honour`);
        out.push(scalar(f, 's', `${path}[]`));
      }
      return out;
    }
    case 'f1': {
      const f = helper(buf, 'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1', [1], path).get(1);
      if (!f) return undefined;
      const text = str(lenDelimited(f, { num: 1, json: 'Raw', shape: 'value', type: { t: 'scalar', s: 'bytes' } }, path), path);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw apiErrors.badRequest(`protobuf: ${path}: FieldsV1 is not JSON`);
      }
    }
  }
}

function varintOf(f: WireField, path: string): bigint {
  if (f.wire !== 0 || f.int === undefined) throw malformed(`${path} (field ${f.num}) has wire type ${f.wire}, not 0 (varint)`);
  return f.int;
}
