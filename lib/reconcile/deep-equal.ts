/**
 * reconcile/deep-equal: structural equality for the proxy's parsed values (what
 * kube-proxy's trackers get from reflect.DeepEqual). Pure.
 *
 * Handles primitives, arrays, plain objects, Map and Set (Map keys and Set
 * members compared by identity/SameValueZero, which is all our values use:
 * strings). Object key order does not matter; array order does. No cycles.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Map) {
    if (!(b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    return true;
  }
  if (a instanceof Set) {
    if (!(b instanceof Set) || a.size !== b.size) return false;
    for (const v of a) if (!b.has(v)) return false;
    return true;
  }
  if (b instanceof Map || b instanceof Set) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ob = b as Record<string, unknown>;
  const oa = a as Record<string, unknown>;
  for (const k of ka) if (!Object.prototype.hasOwnProperty.call(ob, k) || !deepEqual(oa[k], ob[k])) return false;
  return true;
}
