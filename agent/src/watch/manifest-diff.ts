/**
 * watch/manifest-diff: the pure half of the manifest-directory source.
 *
 * A manifest file holds one Kubernetes object, a JSON array of objects, or a
 * `kind: List` with `items` (what `kubectl get -o json` prints); a `.yaml`
 * or `.yml` file may also hold several `---`-separated documents, each of
 * those shapes (what `kubectl apply -f` takes). Objects are
 * identified by kind + namespace + name; the same object in two files is an
 * error of the second file. diffObjects() turns two consecutive views into
 * the (prev, cur) events an informer would deliver: add, update (only when
 * the object's JSON changed), delete (with the last known object).
 *
 * Only the kinds a consumer asks for are kept; others are counted so the
 * source can say what it skipped. No fs here: the source reads the files.
 */
import { sha1Base64 } from '../../../lib/json/digest.js';
import { parseAllDocuments } from 'yaml';

/** File names the source reads: JSON and YAML manifests. */
export function isManifestFile(name: string): boolean {
  return !name.startsWith('.') && /\.(json|ya?ml)$/.test(name);
}

export type ObjectMap = ReadonlyMap<string, ManifestObject>;

export interface ManifestObject {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** The raw object, handed to the handlers as is (they validate it). */
  readonly object: Record<string, unknown>;
  /**
   * A digest of the object's JSON, for change detection: the source keeps every object, and the JSON
   * itself (a rope of V8's string builder) held 30 MiB at 30,000 Services and as many slices.
   */
  readonly digest: string;
  /** The file it came from, for messages. */
  readonly file: string;
}

export type ManifestEvent =
  | { readonly type: 'add'; readonly cur: ManifestObject }
  | { readonly type: 'update'; readonly prev: ManifestObject; readonly cur: ManifestObject }
  | { readonly type: 'delete'; readonly prev: ManifestObject };

export class ManifestError extends Error {
  override name = 'ManifestError';
  constructor(readonly file: string, msg: string) {
    super(`${file}: ${msg}`);
  }
}

export function objectId(kind: string, namespace: string, name: string): string {
  // join makes one flat string (a template literal would be a rope kept as the view's key).
  return [kind, namespace, name].join('/');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parses one file's text into objects of the wanted kinds. Throws
 * ManifestError naming the file and the item for malformed JSON or an item
 * without kind / metadata.name. metadata.namespace defaults to "default", as
 * kubectl apply does.
 */
export function parseManifestFile(file: string, text: string, kinds: ReadonlySet<string>): { objects: ManifestObject[]; skipped: number } {
  const docs = /\.ya?ml$/.test(file) ? parseYamlDocuments(file, text) : [parseJson(file, text)];
  const items: unknown[] = docs.flatMap((doc) => (Array.isArray(doc) ? doc : isRecord(doc) && doc['kind'] === 'List' && Array.isArray(doc['items']) ? doc['items'] : [doc]));
  const doc = docs.length === 1 ? docs[0] : docs;
  const objects: ManifestObject[] = [];
  let skipped = 0;
  items.forEach((item, i) => {
    const where = items.length > 1 || Array.isArray(doc) ? `item ${i}: ` : '';
    if (!isRecord(item)) throw new ManifestError(file, `${where}must be a JSON object`);
    const kind = item['kind'];
    if (typeof kind !== 'string' || kind === '') throw new ManifestError(file, `${where}kind: required`);
    if (!kinds.has(kind)) {
      skipped++;
      return;
    }
    const meta = item['metadata'];
    if (!isRecord(meta) || typeof meta['name'] !== 'string' || meta['name'] === '') throw new ManifestError(file, `${where}metadata.name: required`);
    const nsRaw = meta['namespace'];
    if (nsRaw !== undefined && (typeof nsRaw !== 'string' || nsRaw === '')) throw new ManifestError(file, `${where}metadata.namespace: must be a non-empty string`);
    const namespace = nsRaw ?? 'default';
    const object = nsRaw === undefined ? { ...item, metadata: { ...meta, namespace } } : item;
    objects.push({ kind, namespace, name: meta['name'], object, digest: sha1Base64(JSON.stringify(object)), file });
  });
  return { objects, skipped };
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ManifestError(file, `not valid JSON (${(e as Error).message})`);
  }
}

/** Every non-empty `---` document of a YAML file, as plain data. */
function parseYamlDocuments(file: string, text: string): unknown[] {
  const out: unknown[] = [];
  for (const d of parseAllDocuments(text)) {
    const err = d.errors[0];
    if (err) throw new ManifestError(file, `not valid YAML (${err.message.split('\n')[0]})`);
    const v: unknown = d.toJS();
    if (v !== null && v !== undefined) out.push(v);
  }
  return out;
}

/**
 * Merges per-file objects into one view. A duplicate id keeps the first
 * file's object (files in name order) and reports the other as an error.
 */
export function mergeFiles(perFile: ReadonlyMap<string, readonly ManifestObject[]>): { view: Map<string, ManifestObject>; errors: ManifestError[] } {
  const view = new Map<string, ManifestObject>();
  const errors: ManifestError[] = [];
  for (const file of [...perFile.keys()].sort()) {
    for (const o of perFile.get(file) ?? []) {
      const id = objectId(o.kind, o.namespace, o.name);
      const first = view.get(id);
      if (first) errors.push(new ManifestError(file, `${o.kind} ${o.namespace}/${o.name} is already defined in ${first.file}; ignored here`));
      else view.set(id, o);
    }
  }
  return { view, errors };
}

/** Events that take a consumer from `prev` to `cur`: deletes first, then adds and updates, each in id order. */
export function diffObjects(prev: ObjectMap, cur: ObjectMap): ManifestEvent[] {
  const events: ManifestEvent[] = [];
  for (const id of [...prev.keys()].sort()) {
    const p = prev.get(id)!;
    if (!cur.has(id)) events.push({ type: 'delete', prev: p });
  }
  for (const id of [...cur.keys()].sort()) {
    const c = cur.get(id)!;
    const p = prev.get(id);
    if (!p) events.push({ type: 'add', cur: c });
    else if (p.digest !== c.digest) events.push({ type: 'update', prev: p, cur: c });
  }
  return events;
}
