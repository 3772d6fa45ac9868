/**
 * controlplane/api/selectors: label and field selectors, as
 * k8s.io/apimachinery parses and matches them (pure).
 *
 * Label selectors (pkg/labels): requirements joined by commas, each one of
 * `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>n`,
 * `k<n`, tokenised as upstream's lexer does (whitespace is space, tab, CR,
 * LF; an identifier runs to whitespace or one of `=!(),<>`), and validated
 * as upstream's NewRequirement, with its messages.
 * Field selectors (pkg/fields): `f=v`, `f==v`, `f!=v` joined by commas; in
 * values `\` escapes `\`, `,` and `=` (and nothing else), and an unescaped
 * `,` or `=` is an error. The fields a kind supports are its own; any other
 * is kube-apiserver's conversion error, `field label not supported: <f>`.
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

// k8s.io/apimachinery/pkg/util/validation (v0.34): IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain.
const QNAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QNAME = new RegExp(`^${QNAME_FMT}$`);
const QNAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${QNAME_FMT})?`;
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_MSG = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

const maxLenError = (n: number) => `must be no more than ${n} characters`;
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (!examples.length) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

function keyErrors(key: string): string[] {
  const errs: string[] = [];
  const parts = key.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else {
      if (prefix.length > 253) errs.push(`prefix part ${maxLenError(253)}`);
      if (!DNS1123_SUBDOMAIN.test(prefix)) errs.push(`prefix part ${regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com')}`);
    }
  } else {
    return [`a qualified name ${regexError(QNAME_MSG, QNAME_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!QNAME.test(name)) errs.push(`name part ${regexError(QNAME_MSG, QNAME_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

function valueErrors(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push(maxLenError(63));
  if (!LABEL_VALUE.test(v)) errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** A label key: `[prefix/]name`, as validation.IsQualifiedName. Returns the problems (joined by "; "), or null. */
export function labelKeyProblem(key: string): string | null {
  const errs = keyErrors(key);
  return errs.length ? errs.join('; ') : null;
}

/** A label value (may be empty), as validation.IsValidLabelValue. Returns the problems, or null. */
export function labelValueProblem(v: string): string | null {
  const errs = valueErrors(v);
  return errs.length ? errs.join('; ') : null;
}

/** field.Invalid(path, value, detail).Error(). */
const invalid = (path: string, value: unknown, detail: string) => `${path}: Invalid value: ${JSON.stringify(value) ?? 'null'}: ${detail}`;
/** utilerrors.NewAggregate(errs).Error(). */
function aggregate(errs: string[]): string {
  const unique = [...new Set(errs)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}

const INT64 = /^[+-]?\d+$/;
/** strconv.ParseInt(s, 10, 64). */
function parseInt64(s: string): bigint | undefined {
  if (!INT64.test(s)) return undefined;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

/** upstream's labels.NewRequirement: the problems of a requirement, as one message, or null. */
function requirementProblem(key: string, op: LabelOp, values: readonly string[] | null): string | null {
  const errs: string[] = [];
  const kp = keyErrors(key);
  if (kp.length) errs.push(invalid('key', key, kp.join('; ')));
  const vals = values ?? [];
  switch (op) {
    case 'in':
    case 'notin':
      if (!vals.length) errs.push(invalid('values', values, "for 'in', 'notin' operators, values set can't be empty"));
      break;
    case '=':
    case '!=':
      if (vals.length !== 1) errs.push(invalid('values', values, 'exact-match compatibility requires one single value'));
      break;
    case 'exists':
    case '!':
      if (vals.length) errs.push(invalid('values', values, 'values set must be empty for exists and does not exist'));
      break;
    case 'gt':
    case 'lt':
      if (vals.length !== 1) errs.push(invalid('values', values, "for 'Gt', 'Lt' operators, exactly one value is required"));
      vals.forEach((v, i) => {
        if (parseInt64(v) === undefined) errs.push(invalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
      });
      break;
  }
  vals.forEach((v, i) => {
    const vp = valueErrors(v);
    if (vp.length) errs.push(invalid(`values[${i}][${key}]`, v, vp.join('; ')));
  });
  return errs.length ? aggregate(errs) : null;
}

type TokType = 'id' | 'in' | 'notin' | '!' | '=' | '==' | '!=' | '>' | '<' | '(' | ')' | ',' | 'eos';
interface Tok {
  readonly t: TokType;
  readonly lit: string;
}
const SPECIAL = '=!(),<>';
const WHITESPACE = ' \t\r\n';

/** upstream's Lexer: identifiers (and the keywords in, notin) and the longest special-symbol token. */
function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  for (;;) {
    while (i < s.length && WHITESPACE.includes(s[i]!)) i++;
    if (i >= s.length) {
      out.push({ t: 'eos', lit: '' });
      return out;
    }
    if (SPECIAL.includes(s[i]!)) {
      const two = s.slice(i, i + 2);
      const lit = two === '==' || two === '!=' ? two : s[i]!;
      out.push({ t: lit as TokType, lit });
      i += lit.length;
      continue;
    }
    const start = i;
    while (i < s.length && !SPECIAL.includes(s[i]!) && !WHITESPACE.includes(s[i]!)) i++;
    const lit = s.slice(start, i);
    out.push({ t: lit === 'in' || lit === 'notin' ? lit : 'id', lit });
  }
}

class ParseProblem extends Error {}

/**
 * Parses a label selector as labels.Parse: the empty (or all-whitespace) selector has no requirements and
 * matches everything. Values of `in`/`notin` come back sorted and without duplicates, as upstream's set.
 */
export function parseLabelSelector(s: string): LabelRequirement[] {
  const toks = lex(s);
  let pos = 0;
  /** In the Values context `in` and `notin` are identifiers. */
  const look = (values = true): Tok => {
    const tok = toks[Math.min(pos, toks.length - 1)]!;
    return values && (tok.t === 'in' || tok.t === 'notin') ? { t: 'id', lit: tok.lit } : tok;
  };
  const take = (values = true): Tok => {
    const tok = look(values);
    pos++;
    return tok;
  };
  const fail = (msg: string): never => {
    throw new ParseProblem(msg);
  };

  const exactValue = (): string[] => {
    const next = look();
    if (next.t === 'eos' || next.t === ',') return [''];
    const tok = take();
    return tok.t === 'id' ? [tok.lit] : fail(`found '${tok.lit}', expected: identifier`);
  };
  const identifiers = (): Set<string> => {
    const set = new Set<string>();
    for (;;) {
      const tok = take();
      if (tok.t === 'id') {
        set.add(tok.lit);
        const next = look();
        if (next.t === ',') continue;
        if (next.t === ')') return set;
        fail(`found '${next.lit}', expected: ',' or ')'`);
      } else if (tok.t === ',') {
        if (set.size === 0) set.add(''); // "(,"
        const next = look();
        if (next.t === ')') {
          set.add(''); // ",)"
          return set;
        }
        if (next.t === ',') set.add(''); // ",,"
      } else fail(`found '${tok.lit}', expected: ',', or identifier`);
    }
  };
  const valueSet = (): string[] => {
    const open = take();
    if (open.t !== '(') fail(`found '${open.lit}' expected: '('`);
    const next = look();
    if (next.t === ')') {
      take();
      return [''];
    }
    if (next.t !== 'id' && next.t !== ',') fail(`found '${next.lit}', expected: ',', ')' or identifier`);
    const set = identifiers();
    if (take().t !== ')') fail(`found '${next.lit}', expected: ')'`);
    return [...set].sort();
  };
  const requirement = (): LabelRequirement => {
    let op: LabelOp | undefined;
    let tok = take();
    if (tok.t === '!') {
      op = '!';
      tok = take();
    }
    if (tok.t !== 'id') fail(`found '${tok.lit}', expected: identifier`);
    const key = tok.lit;
    const kp = labelKeyProblem(key);
    if (kp) fail(invalid('<nil>', key, kp));
    const next = look();
    if ((next.t === 'eos' || next.t === ',') && op !== '!') op = 'exists';
    if (op === 'exists' || op === '!') return { key, op, values: [] };
    const optok = take(false);
    switch (optok.t) {
      case 'in': op = 'in'; break;
      case 'notin': op = 'notin'; break;
      case '=': case '==': op = '='; break;
      case '!=': op = '!='; break;
      case '>': op = 'gt'; break;
      case '<': op = 'lt'; break;
      default: return fail(`found '${optok.lit}', expected: in, notin, =, ==, !=, gt, lt`);
    }
    const values = op === 'in' || op === 'notin' ? valueSet() : exactValue();
    const p = requirementProblem(key, op, values);
    if (p) fail(p);
    return { key, op, values };
  };

  const out: LabelRequirement[] = [];
  for (;;) {
    const tok = look();
    if (tok.t === 'eos') return out;
    if (tok.t !== 'id' && tok.t !== '!') throw new SelectorError(`found '${tok.lit}', expected: !, identifier, or 'end of string'`);
    try {
      out.push(requirement());
    } catch (e) {
      if (e instanceof ParseProblem) throw new SelectorError(`unable to parse requirement: ${e.message}`);
      throw e;
    }
    const sep = take();
    if (sep.t === 'eos') return out;
    if (sep.t !== ',') throw new SelectorError(`found '${sep.lit}', expected: ',' or 'end of string'`);
    const next = look();
    if (next.t !== 'id' && next.t !== '!') throw new SelectorError(`found '${next.lit}', expected: identifier after ','`);
  }
}

/** Requirement.Matches, all of them (no requirements: everything matches). */
export function matchesLabels(reqs: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const v = has ? l[r.key]! : undefined;
    switch (r.op) {
      case 'exists': if (!has) return false; break;
      case '!': if (has) return false; break;
      case '=': case 'in': if (!has || !r.values.includes(v!)) return false; break;
      case '!=': case 'notin': if (has && r.values.includes(v!)) return false; break;
      case 'gt': case 'lt': {
        const lv = has ? parseInt64(v!) : undefined;
        const rv = r.values.length === 1 ? parseInt64(r.values[0]!) : undefined;
        if (lv === undefined || rv === undefined || !(r.op === 'gt' ? lv > rv : lv < rv)) return false;
        break;
      }
    }
  }
  return true;
}

/**
 * A metav1.LabelSelector object (matchLabels, matchExpressions) as requirements, validated as
 * metav1.LabelSelectorAsSelector (each one through NewRequirement). No requirements: everything matches;
 * a missing (nil) selector, which matches nothing upstream, is the caller's to handle.
 */
export function labelSelectorRequirements(sel: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }): LabelRequirement[] {
  const out: LabelRequirement[] = [];
  const add = (key: string, op: LabelOp, values: readonly string[] | null) => {
    const p = requirementProblem(key, op, values);
    if (p) throw new SelectorError(p);
    out.push({ key, op, values: values ?? [] });
  };
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) add(k, '=', [v]);
  for (const e of sel.matchExpressions ?? []) {
    const op = ({ In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' } as const)[e.operator as 'In'];
    if (!op) throw new SelectorError(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    // Go's append([]string(nil), values...): no values is nil, which prints as null.
    add(e.key, op, e.values?.length ? [...e.values] : null);
  }
  return out;
}

/** fields.UnescapeValue. */
function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\') {
      const n = s[i + 1];
      if (n === undefined) throw new SelectorError('invalid field selector: invalid escape sequence: \\');
      if (n !== '\\' && n !== ',' && n !== '=') throw new SelectorError(`invalid field selector: invalid escape sequence: \\${n}`);
      out += n;
      i++;
    } else if (c === ',' || c === '=') {
      // Go prints the rune as its number.
      throw new SelectorError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else out += c;
  }
  return out;
}

/**
 * Parses a field selector as fields.ParseSelector, then checks every field against the kind's `supported`
 * ones, as kube-apiserver's field label conversion does. Empty terms are skipped; the empty selector matches
 * everything.
 */
export function parseFieldSelector(s: string, supported: readonly string[]): FieldRequirement[] {
  const out: FieldRequirement[] = [];
  // Split on unescaped commas.
  const terms: string[] = [];
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  // Upstream parses every term (sorted) before it converts any field, so a syntax error wins.
  for (const term of terms.sort()) {
    if (term === '') continue;
    // The first "!=", "==" or "=": the field is what precedes it, untrimmed, as upstream's splitTerm.
    const m = /^(.*?)(!=|==|=)(.*)$/s.exec(term);
    if (!m) throw new SelectorError(`invalid selector: '${s}'; can't understand '${term}'`);
    out.push({ field: m[1]!, op: m[2] === '!=' ? '!=' : '=', value: unescapeValue(m[3]!) });
  }
  for (const r of out) if (!supported.includes(r.field)) throw new SelectorError(`field label not supported: ${r.field}`);
  return out;
}

/** All the requirements hold; a field the object lacks is the empty string (Fields.Get). */
export function matchesFields(reqs: readonly FieldRequirement[], fields: Readonly<Record<string, string>>): boolean {
  for (const r of reqs) {
    const v = Object.prototype.hasOwnProperty.call(fields, r.field) ? (fields[r.field] ?? '') : '';
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}
