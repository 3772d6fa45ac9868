/**
 * json/read: the one way nodenet reads JSON it did not build itself (CNI
 * stdin, Kubernetes objects, its own state files, the config file). Pure.
 *
 * Every reader takes the object, the key and the parent's path, and fails
 * with an error naming the full JSON path of the field
 * (`ipam.ranges[0][0].subnet`, `spec.ports[1].port`) made by the caller's
 * error factory: a CNI config error (code 7), an InvalidObjectError (a
 * Kubernetes object), a state-file error. Paths are joined with join():
 * join('spec', 'ports') = 'spec.ports', join('spec.ports', 1) =
 * 'spec.ports[1]', join('', 'spec') = 'spec'.
 *
 * Absent and null are the same ("unset") for every opt* reader, as in
 * Kubernetes' JSON decoding.
 */
export type JsonObject = Readonly<Record<string, unknown>>;

/** Makes the error for a bad field: `field` is the full path, `msg` says what is wrong. */
export type FieldErrorFactory = (field: string, msg: string) => Error;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Joins a parent path and a child key. */
export function join(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

/** A value as it appears in messages: JSON, cut at 80 characters. */
export function show(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

const unset = (v: unknown): v is undefined | null => v === undefined || v === null;

/** The readers, bound to one error factory. */
export interface FieldReaders {
  readonly fail: FieldErrorFactory;
  /** `v` itself must be an object; `path` is its own path. */
  objectAt(v: unknown, path: string): JsonObject;
  optObject(o: JsonObject, key: string, path: string): JsonObject | undefined;
  reqObject(o: JsonObject, key: string, path: string): JsonObject;
  optString(o: JsonObject, key: string, path: string): string | undefined;
  /** Present and not empty. */
  reqString(o: JsonObject, key: string, path: string): string;
  optBool(o: JsonObject, key: string, path: string): boolean | undefined;
  /** An integer, within [min, max] when given. */
  optInt(o: JsonObject, key: string, path: string, range?: { min?: number; max?: number }): number | undefined;
  reqInt(o: JsonObject, key: string, path: string, range?: { min?: number; max?: number }): number;
  optArray(o: JsonObject, key: string, path: string): readonly unknown[] | undefined;
  optStringArray(o: JsonObject, key: string, path: string): string[] | undefined;
}

export function fieldReaders(fail: FieldErrorFactory): FieldReaders {
  const optInt = (o: JsonObject, key: string, path: string, range: { min?: number; max?: number } = {}): number | undefined => {
    const v = o[key];
    if (unset(v)) return undefined;
    const { min, max } = range;
    const what = min !== undefined && max !== undefined ? ` from ${min} to ${max}` : min !== undefined ? ` of at least ${min}` : max !== undefined ? ` of at most ${max}` : '';
    if (typeof v !== 'number' || !Number.isInteger(v) || (min !== undefined && v < min) || (max !== undefined && v > max)) {
      throw fail(join(path, key), `must be an integer${what}, got ${show(v)}`);
    }
    return v;
  };
  const optString = (o: JsonObject, key: string, path: string): string | undefined => {
    const v = o[key];
    if (unset(v)) return undefined;
    if (typeof v !== 'string') throw fail(join(path, key), `must be a string, got ${show(v)}`);
    return v;
  };
  const optObject = (o: JsonObject, key: string, path: string): JsonObject | undefined => {
    const v = o[key];
    if (unset(v)) return undefined;
    if (!isObject(v)) throw fail(join(path, key), `must be an object, got ${show(v)}`);
    return v;
  };
  const optArray = (o: JsonObject, key: string, path: string): readonly unknown[] | undefined => {
    const v = o[key];
    if (unset(v)) return undefined;
    if (!Array.isArray(v)) throw fail(join(path, key), `must be an array, got ${show(v)}`);
    return v;
  };
  return {
    fail,
    objectAt(v, path) {
      if (!isObject(v)) throw fail(path || '(root)', `must be an object, got ${show(v)}`);
      return v;
    },
    optObject,
    reqObject(o, key, path) {
      const v = optObject(o, key, path);
      if (v === undefined) throw fail(join(path, key), 'required value');
      return v;
    },
    optString,
    reqString(o, key, path) {
      const v = optString(o, key, path);
      if (v === undefined || v === '') throw fail(join(path, key), 'required value');
      return v;
    },
    optBool(o, key, path) {
      const v = o[key];
      if (unset(v)) return undefined;
      if (typeof v !== 'boolean') throw fail(join(path, key), `must be true or false (a boolean), got ${show(v)}`);
      return v;
    },
    optInt,
    reqInt(o, key, path, range) {
      const v = optInt(o, key, path, range);
      if (v === undefined) throw fail(join(path, key), 'required value');
      return v;
    },
    optArray,
    optStringArray(o, key, path) {
      const v = o[key];
      if (!unset(v) && !Array.isArray(v)) throw fail(join(path, key), `must be an array of strings, got ${show(v)}`);
      const list = optArray(o, key, path);
      return list?.map((s, i) => {
        if (typeof s !== 'string') throw fail(join(join(path, key), i), `must be a string, got ${show(s)}`);
        return s;
      });
    },
  };
}

/** A file nodenet keeps its own state in could not be read: its path, and the field when the JSON was wrong. */
export class StateFileError extends Error {
  override name = 'StateFileError';
  constructor(readonly file: string, msg: string, opts?: { cause?: unknown }) {
    super(`${file}: ${msg}`, opts);
  }
}

/**
 * A cursor over one JSON object, for the state files nodenet writes and
 * reads back (records, owner files, status files). Required readers throw.
 */
export class ObjectReader {
  private readonly r: FieldReaders;
  constructor(readonly obj: JsonObject, readonly path: string, fail: FieldErrorFactory) {
    this.r = fieldReaders(fail);
  }
  raw(key: string): unknown {
    return this.obj[key];
  }
  string(key: string): string {
    const v = this.r.optString(this.obj, key, this.path);
    if (v === undefined) throw this.r.fail(join(this.path, key), 'required value');
    return v;
  }
  optString(key: string): string | undefined {
    return this.r.optString(this.obj, key, this.path);
  }
  bool(key: string, dflt?: boolean): boolean {
    const v = this.r.optBool(this.obj, key, this.path) ?? dflt;
    if (v === undefined) throw this.r.fail(join(this.path, key), 'required value');
    return v;
  }
  int(key: string, range?: { min?: number; max?: number }): number {
    return this.r.reqInt(this.obj, key, this.path, range);
  }
  optInt(key: string, range?: { min?: number; max?: number }): number | undefined {
    return this.r.optInt(this.obj, key, this.path, range);
  }
  stringArray(key: string): string[] {
    return this.r.optStringArray(this.obj, key, this.path) ?? [];
  }
  object(key: string): ObjectReader {
    return new ObjectReader(this.r.reqObject(this.obj, key, this.path), join(this.path, key), this.r.fail);
  }
  optObject(key: string): ObjectReader | undefined {
    const o = this.r.optObject(this.obj, key, this.path);
    return o === undefined ? undefined : new ObjectReader(o, join(this.path, key), this.r.fail);
  }
  /** Each element of an array field (absent: none) as an ObjectReader. */
  objects(key: string): ObjectReader[] {
    return (this.r.optArray(this.obj, key, this.path) ?? []).map((v, i) => {
      const p = join(join(this.path, key), i);
      return new ObjectReader(this.r.objectAt(v, p), p, this.r.fail);
    });
  }
}

/** Parses JSON text whose root must be an object and hands it to `read`; every failure is a StateFileError naming `name` (and the field). */
export function readJsonText<T>(name: string, text: string, read: (r: ObjectReader) => T): T {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new StateFileError(name, `not valid JSON: ${(e as Error).message}`, { cause: e });
  }
  const fail: FieldErrorFactory = (field, msg) => new StateFileError(name, `${field}: ${msg}`);
  if (!isObject(v)) throw fail('(root)', `must be an object, got ${show(v)}`);
  return read(new ObjectReader(v, '', fail));
}
