/**
 * controlplane/api/schema: the field schemas of the served kinds, derived
 * from @kubernetes/client-node's generated models rather than written by
 * hand. Each model class carries `attributeTypeMap` (every field's JSON
 * name, type and format); its `.d.ts` carries the field descriptions
 * (upstream's doc comments), which `kubectl explain` prints.
 *
 * Used three ways: decoding a request body as kube-apiserver's Go decoder
 * would (a field of the wrong JSON type is a 400; an unknown field is an
 * error under fieldValidation=Strict, a warning under Warn, and is dropped
 * in every case, since a Go struct has nowhere to keep it), the OpenAPI v3
 * documents, and the strategic merge patch, which needs to know where the
 * lists are.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type FieldType =
  | { readonly t: 'string' | 'boolean' | 'any' | 'int-or-string' | 'date-time' }
  | { readonly t: 'integer'; readonly format: 'int32' | 'int64' }
  | { readonly t: 'number' }
  | { readonly t: 'ref'; readonly ref: string }
  | { readonly t: 'array'; readonly items: FieldType }
  | { readonly t: 'map'; readonly values: FieldType };

export interface FieldSchema {
  readonly name: string;
  readonly type: FieldType;
  readonly description: string;
}

export interface TypeSchema {
  /** The model's name: V1ServiceSpec. */
  readonly name: string;
  readonly description: string;
  readonly fields: ReadonlyMap<string, FieldSchema>;
}

export type Schemas = ReadonlyMap<string, TypeSchema>;

interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}

function parseType(type: string, format: string): FieldType {
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) return { t: 'array', items: parseType(arr[1]!, format) };
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return { t: 'map', values: parseType(map[1]!, '') };
  switch (type) {
    case 'string': return { t: 'string' };
    case 'boolean': return { t: 'boolean' };
    case 'any': case 'object': return { t: 'any' };
    case 'IntOrString': return { t: 'int-or-string' };
    case 'Date': case 'V1MicroTime': return { t: 'date-time' };
    case 'number': return format === 'int32' || format === 'int64' ? { t: 'integer', format } : { t: 'number' };
    default: return { t: 'ref', ref: type };
  }
}

/** Field descriptions from a model's .d.ts: the doc comment before each `'name'?: type;`. */
function descriptions(dts: string): { type: string; fields: Map<string, string> } {
  const fields = new Map<string, string>();
  const clean = (c: string) => c.split('\n').map((l) => l.replace(/^\s*\*\s?/, '').trim()).filter(Boolean).join(' ').replace(/\\(["'])/g, '$1').trim();
  for (const m of dts.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*'([^']+)'\??:/g)) fields.set(m[2]!, clean(m[1]!));
  const cls = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*export declare class/.exec(dts);
  return { type: cls ? clean(cls[1]!) : '', fields };
}

/**
 * Loads the schemas of `roots` and every type they reference.
 * @param modelsDir the client-node models directory (default: the installed package's)
 */
export async function loadSchemas(roots: readonly string[], modelsDir?: string): Promise<Schemas> {
  const dir = modelsDir ?? join(dirname(createRequire(import.meta.url).resolve('@kubernetes/client-node/package.json')), 'dist/gen/models');
  const out = new Map<string, TypeSchema>();
  const pending = [...roots];
  while (pending.length) {
    const name = pending.pop()!;
    if (out.has(name)) continue;
    const mod = (await import(join(dir, `${name}.js`))) as Record<string, { attributeTypeMap?: Attribute[] }>;
    const attrs = mod[name]?.attributeTypeMap;
    if (!attrs) throw new Error(`schema: ${name} has no attributeTypeMap`);
    let docs: ReturnType<typeof descriptions> = { type: '', fields: new Map() };
    try {
      docs = descriptions(readFileSync(join(dir, `${name}.d.ts`), 'utf8'));
    } catch {
      /* descriptions are optional */
    }
    const fields = new Map<string, FieldSchema>();
    for (const a of attrs) {
      const type = parseType(a.type, a.format);
      fields.set(a.baseName, { name: a.baseName, type, description: docs.fields.get(a.name) ?? '' });
      for (let t: FieldType = type; ; ) {
        if (t.t === 'ref') {
          pending.push(t.ref);
          break;
        }
        if (t.t === 'array') t = t.items;
        else if (t.t === 'map') t = t.values;
        else break;
      }
    }
    out.set(name, { name, description: docs.type, fields });
  }
  return out;
}

export interface DecodeProblems {
  /** Unknown fields, as kube-apiserver names them: `spec.foo`, `spec.ports[0].bar`. */
  readonly unknown: string[];
}

/** Go's name for a JSON type in "cannot unmarshal" messages. */
function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

export class DecodeError extends Error {
  override name = 'DecodeError';
}

/**
 * Decodes `value` as the type `typeName`, like encoding/json into the Go struct: drops unknown fields
 * (reporting them), and throws DecodeError for a value of the wrong JSON type. Returns a new value.
 */
export function decode(schemas: Schemas, typeName: string, value: unknown, problems: DecodeProblems): unknown {
  return decodeAs(schemas, { t: 'ref', ref: typeName }, value, '', problems, typeName);
}

function decodeAs(schemas: Schemas, type: FieldType, v: unknown, path: string, problems: DecodeProblems, owner: string): unknown {
  if (v === null) return null; // null is allowed for every field (Go leaves the zero value)
  const mismatch = (want: string): never => {
    throw new DecodeError(`json: cannot unmarshal ${jsonKind(v)} into Go struct field ${owner}${path ? `.${path.replace(/\[\d+\]/g, '')}` : ''} of type ${want}`);
  };
  switch (type.t) {
    case 'any':
      return v;
    case 'string':
    case 'date-time':
      return typeof v === 'string' ? v : mismatch('string');
    case 'boolean':
      return typeof v === 'boolean' ? v : mismatch('bool');
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v)) mismatch(type.format);
      if (type.format === 'int32' && ((v as number) > 2147483647 || (v as number) < -2147483648)) mismatch('int32');
      return v;
    case 'number':
      return typeof v === 'number' ? v : mismatch('float64');
    case 'int-or-string':
      return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v)) ? v : mismatch('intstr.IntOrString');
    case 'array': {
      if (!Array.isArray(v)) return mismatch(`[]${goName(type.items)}`);
      return v.map((x, i) => decodeAs(schemas, type.items, x, `${path}[${i}]`, problems, owner));
    }
    case 'map': {
      if (typeof v !== 'object' || Array.isArray(v)) return mismatch(`map[string]${goName(type.values)}`);
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) o[k] = decodeAs(schemas, type.values, x, `${path}.${k}`, problems, owner);
      return o;
    }
    case 'ref': {
      const s = schemas.get(type.ref);
      if (!s) return v;
      if (typeof v !== 'object' || Array.isArray(v)) return mismatch(goName(type));
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const f = s.fields.get(k);
        const p = path ? `${path}.${k}` : k;
        if (!f) {
          problems.unknown.push(p);
          continue;
        }
        o[k] = decodeAs(schemas, f.type, x, p, problems, goName(type));
      }
      return o;
    }
  }
}

function goName(t: FieldType): string {
  switch (t.t) {
    case 'ref': return t.ref.replace(/^(V1|CoreV1|DiscoveryV1|EventsV1)/, '');
    case 'integer': return t.format;
    case 'array': return `[]${goName(t.items)}`;
    case 'map': return `map[string]${goName(t.values)}`;
    case 'boolean': return 'bool';
    case 'int-or-string': return 'intstr.IntOrString';
    default: return t.t;
  }
}

/** The schema of the field at `path` (names only, list indexes skipped) below typeName, or undefined. */
export function fieldAt(schemas: Schemas, typeName: string, path: readonly string[]): FieldSchema | undefined {
  let type: FieldType = { t: 'ref', ref: typeName };
  let f: FieldSchema | undefined;
  for (const name of path) {
    while (type.t === 'array' || type.t === 'map') type = type.t === 'array' ? type.items : type.values;
    if (type.t !== 'ref') return undefined;
    f = schemas.get(type.ref)?.fields.get(name);
    if (!f) return undefined;
    type = f.type;
  }
  return f;
}
