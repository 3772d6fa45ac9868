/**
 * controlplane/api/selectors: label and field selectors, as
 * k8s.io/apimachinery parses and matches them (pure).
 *
 * Label selectors: requirements joined by commas, each one of `k`, `!k`,
 * `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>n`, `k<n`.
 * Field selectors: `f=v`, `f==v`, `f!=v` joined by commas, with `\` escaping
 * `,`, `=`, `!` and `\` in values; the fields a kind supports are its own
 * (metadata.name and metadata.namespace for every kind).
 */

export type LabelOp = 'exists' | '!' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';
export interface LabelRequirement {
  readonly key: string;
  readonly op: LabelOp;
  readonly values: readonly string[];
}
export interface FieldRequirement {
  readonly field: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

export class SelectorError extends Error {
  override name = 'SelectorError';
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** A label key: `[prefix/]name`, as validation.IsQualifiedName. Returns the problem, or null. */
export function labelKeyProblem(key: string): string | null {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (slash >= 0 && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return 'prefix part must be a DNS subdomain (lowercase, at most 253 characters)';
  if (name.length === 0) return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!NAME.test(name)) return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  return null;
}

/** A label value (may be empty). Returns the problem, or null. */
export function labelValueProblem(v: string): string | null {
  if (v.length > 63) return 'must be no more than 63 characters';
  if (!VALUE.test(v)) return "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  return null;
}

export function parseLabelSelector(s: string): LabelRequirement[] {
  const out: LabelRequirement[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new SelectorError(`unable to parse requirement: ${why} in label selector ${JSON.stringify(s)}`);
  };
  const ws = () => {
    while (i < s.length && s[i] === ' ') i++;
  };
  const ident = (): string => {
    ws();
    const start = i;
    while (i < s.length && !' ,=!()<>'.includes(s[i]!)) i++;
    return s.slice(start, i);
  };
  const checkKey = (k: string) => {
    if (!k) fail('found end of string, expected: identifier');
    const p = labelKeyProblem(k);
    if (p) fail(`invalid label key ${JSON.stringify(k)}: ${p}`);
  };
  const checkValue = (v: string) => {
    const p = labelValueProblem(v);
    if (p) fail(`invalid label value: ${JSON.stringify(v)}: ${p}`);
  };
  ws();
  if (i >= s.length) return out;
  for (;;) {
    ws();
    if (s[i] === '!') {
      i++;
      const k = ident();
      checkKey(k);
      out.push({ key: k, op: '!', values: [] });
    } else {
      const k = ident();
      checkKey(k);
      ws();
      const rest = s.slice(i);
      if (i >= s.length || s[i] === ',') {
        out.push({ key: k, op: 'exists', values: [] });
      } else if (rest.startsWith('==') || rest.startsWith('!=') || rest.startsWith('=')) {
        const op = rest.startsWith('!=') ? '!=' : '=';
        i += rest.startsWith('=') && !rest.startsWith('==') ? 1 : 2;
        const v = ident();
        checkValue(v);
        out.push({ key: k, op, values: [v] });
      } else if (rest.startsWith('>') || rest.startsWith('<')) {
        i++;
        const v = ident();
        if (!/^-?\d+$/.test(v)) fail(`for 'gt', 'lt' operators, exactly one integer value is required, got ${JSON.stringify(v)}`);
        out.push({ key: k, op: rest[0] === '>' ? 'gt' : 'lt', values: [v] });
      } else if (/^(in|notin)\s*\(/.test(rest)) {
        const op = rest.startsWith('in') ? 'in' : 'notin';
        i += op.length;
        ws();
        i++; // (
        const values: string[] = [];
        for (;;) {
          const v = ident();
          checkValue(v);
          values.push(v);
          ws();
          if (s[i] === ',') {
            i++;
            continue;
          }
          if (s[i] === ')') {
            i++;
            break;
          }
          fail(`found ${i >= s.length ? 'end of string' : JSON.stringify(s[i])}, expected: ',', ')'`);
        }
        out.push({ key: k, op, values });
      } else {
        fail(`found ${JSON.stringify(rest.split(/[ ,]/)[0])}, expected: in, notin, =, ==, !=, gt, lt`);
      }
    }
    ws();
    if (i >= s.length) break;
    if (s[i] !== ',') fail(`found ${JSON.stringify(s[i])}, expected: ','`);
    i++;
  }
  return out;
}

export function matchesLabels(reqs: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const v = has ? l[r.key]! : undefined;
    switch (r.op) {
      case 'exists': if (!has) return false; break;
      case '!': if (has) return false; break;
      case '=': if (v !== r.values[0]) return false; break;
      case '!=': if (v === r.values[0]) return false; break;
      case 'in': if (!has || !r.values.includes(v!)) return false; break;
      case 'notin': if (has && r.values.includes(v!)) return false; break;
      case 'gt': if (!has || !/^-?\d+$/.test(v!) || !(Number(v) > Number(r.values[0]))) return false; break;
      case 'lt': if (!has || !/^-?\d+$/.test(v!) || !(Number(v) < Number(r.values[0]))) return false; break;
    }
  }
  return true;
}

/** A metav1.LabelSelector object (matchLabels, matchExpressions) as requirements. */
export function labelSelectorRequirements(sel: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }): LabelRequirement[] {
  const out: LabelRequirement[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) out.push({ key: k, op: '=', values: [v] });
  for (const e of sel.matchExpressions ?? []) {
    const op = ({ In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' } as const)[e.operator as 'In'];
    if (!op) throw new SelectorError(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    out.push({ key: e.key, op, values: e.values ?? [] });
  }
  return out;
}

export function parseFieldSelector(s: string, supported: readonly string[]): FieldRequirement[] {
  const out: FieldRequirement[] = [];
  if (s.trim() === '') return out;
  // Split on unescaped commas.
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && i + 1 < s.length) {
      cur += s[i]! + s[i + 1]!;
      i++;
    } else if (s[i] === ',') {
      terms.push(cur);
      cur = '';
    } else cur += s[i];
  }
  terms.push(cur);
  for (const term of terms) {
    const m = /^([^=!]+)(==|!=|=)(.*)$/.exec(term);
    if (!m) throw new SelectorError(`invalid selector: '${term}'; can't understand '${term}'`);
    const field = m[1]!.trim();
    if (!supported.includes(field)) {
      throw new SelectorError(`"${field}" is not a known field selector: only ${supported.map((f) => `"${f}"`).join(', ')}`);
    }
    out.push({ field, op: m[2] === '!=' ? '!=' : '=', value: m[3]!.replace(/\\(.)/g, '$1') });
  }
  return out;
}

export function matchesFields(reqs: readonly FieldRequirement[], fields: Readonly<Record<string, string>>): boolean {
  for (const r of reqs) {
    const v = fields[r.field] ?? '';
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}
