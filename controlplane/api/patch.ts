/**
 * controlplane/api/patch: JSON Patch (RFC 6902, client-node's default patch
 * type) and JSON Merge Patch (RFC 7386), on plain JSON values (pure). A
 * failing operation throws PatchError, which the server turns into a 422.
 */
export class PatchError extends Error {
  override name = 'PatchError';
}

type J = unknown;
const isObj = (v: J): v is Record<string, J> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Own members only: "/constructor" or "/toString" name nothing in a JSON object. */
const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
/** Sets an own property (a `__proto__` member stays data, not the object's prototype). */
function setOwn(o: Record<string, J>, k: string, v: J): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

/** RFC 7386: objects merge recursively, null removes, anything else replaces. Returns a new value. */
export function applyMergePatch(target: J, patch: J): J {
  if (!isObj(patch)) return structuredClone(patch);
  const out: Record<string, J> = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else setOwn(out, k, applyMergePatch(hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(p)}: must start with "/"`);
  return p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function index(arr: J[], tok: string, forAdd: boolean, path: string): number {
  if (tok === '-' && forAdd) return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(tok)) throw new PatchError(`invalid array index ${JSON.stringify(tok)} in ${path}`);
  const i = Number(tok);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new PatchError(`array index ${i} out of bounds in ${path}`);
  return i;
}

/** The container and last token of a pointer, or throws when a parent is missing. */
function parentOf(doc: J, path: string): { parent: J; key: string } {
  const toks = parsePointer(path);
  if (!toks.length) throw new PatchError('the root cannot be the target of this operation');
  let cur = doc;
  for (const t of toks.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[index(cur, t, false, path)];
    else if (isObj(cur) && hasOwn(cur, t)) cur = cur[t];
    else throw new PatchError(`missing path ${JSON.stringify(path)}: no ${JSON.stringify(t)}`);
  }
  return { parent: cur, key: toks[toks.length - 1]! };
}

function getAt(doc: J, path: string): J {
  let cur = doc;
  for (const t of parsePointer(path)) {
    if (Array.isArray(cur)) cur = cur[index(cur, t, false, path)];
    else if (isObj(cur) && hasOwn(cur, t)) cur = cur[t];
    else throw new PatchError(`missing path ${JSON.stringify(path)}`);
  }
  return cur;
}

function add(doc: J, path: string, value: J): J {
  if (path === '') return value;
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, true, path), 0, value);
  else if (isObj(parent)) setOwn(parent, key, value);
  else throw new PatchError(`cannot add at ${JSON.stringify(path)}: the parent is not an object or array`);
  return doc;
}

function remove(doc: J, path: string): J {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, false, path), 1);
  else if (isObj(parent) && hasOwn(parent, key)) delete parent[key];
  else throw new PatchError(`cannot remove ${JSON.stringify(path)}: it does not exist`);
  return doc;
}

/** RFC 6902 on a copy of target. */
export function applyJsonPatch(target: J, ops: J): J {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  ops.forEach((raw, i) => {
    if (!isObj(raw) || typeof raw['op'] !== 'string' || typeof raw['path'] !== 'string') throw new PatchError(`operation ${i}: needs "op" and "path" strings`);
    const { op, path } = raw as { op: string; path: string };
    const need = (k: string) => {
      if (!hasOwn(raw, k)) throw new PatchError(`operation ${i} (${op}): missing "${k}"`);
      return raw[k];
    };
    const from = () => {
      const f = need('from');
      if (typeof f !== 'string') throw new PatchError(`operation ${i} (${op}): "from" must be a string`);
      return f;
    };
    switch (op) {
      case 'add': doc = add(doc, path, structuredClone(need('value'))); break;
      case 'remove': doc = remove(doc, path); break;
      case 'replace': {
        const v = structuredClone(need('value'));
        getAt(doc, path);
        doc = path === '' ? v : add(remove(doc, path), path, v);
        break;
      }
      case 'move': {
        const f = from();
        if (path.startsWith(`${f}/`)) throw new PatchError(`operation ${i}: cannot move ${f} into its own child ${path}`);
        const v = getAt(doc, f);
        doc = add(remove(doc, f), path, v);
        break;
      }
      case 'copy': doc = add(doc, path, structuredClone(getAt(doc, from()))); break;
      case 'test': {
        const want = need('value');
        if (JSON.stringify(canon(getAt(doc, path))) !== JSON.stringify(canon(want))) throw new PatchError(`testing value ${path} failed`);
        break;
      }
      default:
        throw new PatchError(`operation ${i}: unknown op ${JSON.stringify(op)}`);
    }
  });
  return doc;
}

/** A value with object keys sorted, for equality by serialisation. */
function canon(v: J): J {
  if (Array.isArray(v)) return v.map(canon);
  if (isObj(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}
