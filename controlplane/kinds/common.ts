/**
 * controlplane/kinds/common: the field rules several kinds share, in the
 * words of k8s.io/apimachinery (util/validation, apis/meta/v1/validation) and
 * pkg/apis/core/validation: names, port numbers and names, IPs and CIDRs,
 * labels and label selectors, non-negative numbers, resource quantities.
 * Each helper returns the FieldErrors upstream's returns, in its order.
 * Pure: values in, errors out.
 *
 * Values are shown as errors.ts shows them (strings quoted, objects as
 * JSON) where Go prints a struct with %#v.
 */
import { isIPv6 } from 'node:net';
import { isIPv4 } from '../../lib/net/ip.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem, labelValueProblem } from '../api/selectors.js';

import { arr, obj, str, type O } from '../../lib/json/loose.js';

// The kinds read their objects with the one loose reader (json/loose.ts), re-exported for the strategies.
export { arr, obj, str, type O };
export const ensure = (o: O, k: string): O => (obj(o[k]) ?? (o[k] = {})) as O;
/** A JSON value that is set: Go's non-nil pointer (null and absent are nil). */
export const isSet = (v: unknown): boolean => v !== undefined && v !== null;
/** An integer field as Go reads it: absent and null are 0. */
export const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
/** Empty or absent (Go's len(x) == 0 for strings, slices and maps). */
export const blank = (v: unknown): boolean => v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);

/** The name rules of upstream's ValidateObjectMeta: DNS subdomain, DNS-1123 label, DNS-1035 label, or only a valid path segment (core/v1 Events). */
export type NameRule = 'subdomain' | 'label' | 'dns1035' | 'path';

export const NAME_TEXT: Record<NameRule, string> = {
  subdomain: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  path: '',
  label: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  dns1035: "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
};

/** Every problem the name rule finds with a name, in upstream's order (too long, then the pattern); [] when valid. */
export function nameProblems(rule: NameRule, name: string): string[] {
  if (rule === 'path') {
    // path.IsValidPathSegmentName
    if (name === '.' || name === '..') return [`may not be '${name}'`];
    return ['/', '%'].filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
  }
  const max = rule === 'subdomain' ? 253 : 63;
  const re = rule === 'subdomain' ? /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/ : rule === 'label' ? /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/ : /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
  const out: string[] = [];
  if (name.length > max) out.push(`must be no more than ${max} characters`);
  if (!re.test(name)) out.push(NAME_TEXT[rule]);
  return out;
}

/** field.Invalid for each problem of a name (ValidateDNS1123Label, ValidateDNS1123Subdomain, ValidateNodeName...). */
export const nameErrors = (path: string, rule: NameRule, v: string): FieldError[] => nameProblems(rule, v).map((p) => fieldErr.invalid(path, v, p));

export const inclusiveRange = (lo: number, hi: number): string => `must be between ${lo} and ${hi}, inclusive`;
export const NEGATIVE = 'must be greater than or equal to 0';
export const MAX_INT32 = 2147483647;

/** ValidateNonnegativeField. */
export function nonNegative(path: string, v: unknown): FieldError[] {
  return typeof v === 'number' && v < 0 ? [fieldErr.invalid(path, v, NEGATIVE)] : [];
}

/** IsValidPortNum as a field error. */
export function portNumErrors(path: string, v: unknown): FieldError[] {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65535 ? [] : [fieldErr.invalid(path, v ?? 0, inclusiveRange(1, 65535))];
}

/** IsValidPortName: the IANA_SVC_NAME rule, every problem. */
export function portNameProblems(s: string): string[] {
  const out: string[] = [];
  if (s.length > 15) out.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(s)) out.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(s)) out.push('must contain at least one letter (a-z)');
  if (s.includes('--')) out.push('must not contain consecutive hyphens');
  if (s.length > 0 && (s.startsWith('-') || s.endsWith('-'))) out.push('must not begin or end with a hyphen');
  return out;
}

/** ValidatePortNumOrName: an int is a port number, a string a port name. */
export function portNumOrNameErrors(path: string, v: unknown): FieldError[] {
  if (typeof v === 'string') return portNameProblems(v).map((p) => fieldErr.invalid(path, v, p));
  return portNumErrors(path, v);
}

/** ValidateLabelName (and ValidateQualifiedName): one error per problem of IsQualifiedName. */
export function qualifiedNameErrors(path: string, key: unknown): FieldError[] {
  const k = str(key);
  return (labelKeyProblem(k)?.split('; ') ?? []).map((p) => fieldErr.invalid(path, k, p));
}

/** IsValidLabelValue as field errors at `path`. */
export function labelValueErrors(path: string, v: unknown): FieldError[] {
  const s = str(v);
  return (labelValueProblem(s)?.split('; ') ?? []).map((p) => fieldErr.invalid(path, s, p));
}

/** metav1 ValidateLabels: keys and values of a map, both reported at the map's path. */
export function labelsErrors(path: string, m: unknown): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(obj(m) ?? {})) errs.push(...qualifiedNameErrors(path, k), ...labelValueErrors(path, v));
  return errs;
}

/**
 * A selector requirement's operator against its values, as ValidateLabelSelectorRequirement (In, NotIn, Exists,
 * DoesNotExist) and ValidateNodeSelectorRequirement (those and, with `numeric`, Gt and Lt) check them.
 */
export function operatorErrors(p: string, operator: unknown, values: readonly unknown[], numeric: boolean): FieldError[] {
  switch (operator) {
    case 'In':
    case 'NotIn':
      return values.length === 0 ? [fieldErr.required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'")] : [];
    case 'Exists':
    case 'DoesNotExist':
      return values.length > 0 ? [fieldErr.forbidden(`${p}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")] : [];
    case 'Gt':
    case 'Lt':
      if (numeric) return values.length !== 1 ? [fieldErr.required(`${p}.values`, "must be specified single value when `operator` is 'Lt' or 'Gt'")] : [];
  }
  return [fieldErr.invalid(`${p}.operator`, operator ?? '', 'not a valid selector operator')];
}

/** metav1 ValidateLabelSelector (strict: values must be label values, as for workload selectors). */
export function labelSelectorErrors(path: string, sel: unknown): FieldError[] {
  const s = obj(sel);
  if (!s) return [];
  const errs = labelsErrors(`${path}.matchLabels`, s['matchLabels']);
  arr(s['matchExpressions']).forEach((e, i) => {
    const p = `${path}.matchExpressions[${i}]`;
    const r = obj(e) ?? {};
    const values = arr(r['values']);
    errs.push(...operatorErrors(p, r['operator'], values, false));
    errs.push(...qualifiedNameErrors(`${p}.key`, r['key']));
    values.forEach((v, j) => errs.push(...labelValueErrors(`${p}.values[${j}]`, v)));
  });
  return errs;
}

export const IP_TEXT = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';
export const CIDR_TEXT = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';

/** An IPv4 or IPv6 address as Go's net.ParseIP takes it (no zone). */
export const isIP = (s: unknown): s is string => typeof s === 'string' && (isIPv4(s) || (isIPv6(s) && !s.includes('%')));
export const isV6 = (s: string): boolean => !isIPv4(s) && isIPv6(s) && !s.includes('%');

/** IsValidIP as field errors. */
export const ipErrors = (path: string, v: unknown): FieldError[] => (isIP(v) ? [] : [fieldErr.invalid(path, v ?? '', IP_TEXT)]);

/** ParseCIDRSloppy: an IPv4 or IPv6 address, a slash and a prefix length (host bits allowed). */
export function isCidr(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  const [ip = '', pfx = '', ...rest] = s.split('/');
  if (rest.length || !/^\d{1,3}$/.test(pfx)) return false;
  return (isIPv4(ip) && Number(pfx) <= 32) || (isV6(ip) && Number(pfx) <= 128);
}

/** The eight 16-bit groups of an IPv6 address (an embedded IPv4 tail included); null when it is not one. */
function v6Groups(a: string): number[] | null {
  if (!isV6(a)) return null;
  let s = a.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4) {
    const [w, x, y, z] = v4.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, v4.index)}${((w << 8) | x).toString(16)}:${((y << 8) | z).toString(16)}`;
  }
  const [head = '', rest] = s.split('::');
  const h = head ? head.split(':').map((x) => parseInt(x, 16)) : [];
  const r = rest ? rest.split(':').map((x) => parseInt(x, 16)) : [];
  return [...h, ...Array<number>(Math.max(8 - h.length - r.length, 0)).fill(0), ...r];
}

/** ValidateNonSpecialIP / ValidateEndpointIP: what an address a Service or endpoint points at may not be. */
export function specialIPProblems(a: string): string[] {
  const g = v6Groups(a);
  // An IPv4-mapped IPv6 address is judged as the IPv4 address (Go's To4).
  const mapped = g && g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff ? `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}` : null;
  const v4 = isIPv4(a) ? a : mapped;
  const out: string[] = [];
  if (v4) {
    const [x, y, z] = v4.split('.').map(Number) as [number, number, number];
    if (v4 === '0.0.0.0') out.push(`may not be unspecified (${a})`);
    if (x === 127) out.push('may not be in the loopback range (127.0.0.0/8, ::1/128)');
    if (x === 169 && y === 254) out.push('may not be in the link-local range (169.254.0.0/16, fe80::/10)');
    if (x === 224 && y === 0 && z === 0) out.push('may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
  } else if (g) {
    if (g.every((x) => x === 0)) out.push(`may not be unspecified (${a})`);
    if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) out.push('may not be in the loopback range (127.0.0.0/8, ::1/128)');
    if ((g[0]! & 0xffc0) === 0xfe80) out.push('may not be in the link-local range (169.254.0.0/16, fe80::/10)');
    if ((g[0]! & 0xff0f) === 0xff02) out.push('may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
  } else out.push('must be a valid IP address');
  return out;
}

/**
 * A resource.Quantity in nano-units, rounded up as Quantity does below its precision; null when it
 * does not parse. Enough to compare and sum amounts.
 */
export function quantityNanos(q: unknown): bigint | null {
  const p = parseQuantity(q);
  return p ? p.nanos : null;
}

export const QUANTITY_REGEX_TEXT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const BIN: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DEC: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** A parsed quantity: its value in nano-units and the format its suffix names (as resource.ParseQuantity). */
function parseQuantity(q: unknown): { nanos: bigint; format: QuantityFormat } | null {
  if (typeof q === 'number') q = String(q);
  if (typeof q !== 'string') return null;
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/.exec(q.trim());
  if (!m) return null;
  const [int = '', frac = ''] = m[2]!.split('.');
  let n = BigInt(`${int}${frac}` || '0');
  let exp10 = 9 - frac.length;
  const suffix = m[3] ?? '';
  if (suffix in BIN) n <<= BigInt(BIN[suffix]!);
  else if (suffix in DEC) exp10 += DEC[suffix]!;
  else exp10 += Number(suffix.slice(1));
  if (exp10 >= 0) n *= 10n ** BigInt(exp10);
  else {
    const d = 10n ** BigInt(-exp10);
    n = (n + d - 1n) / d;
  }
  return { nanos: m[1] === '-' ? -n : n, format: suffix in BIN ? 'bin' : suffix === '' || suffix in DEC ? 'dec' : 'exp' };
}

/**
 * Quantity.String() after the API's rounding to milli-units (SetDefaults_ResourceList): the
 * canonical form kubectl shows ("500m", "1Gi", "2"), for the messages that print an amount.
 */
export function quantityString(q: unknown): string {
  const p = parseQuantity(q);
  return p ? formatQuantity(p.nanos, p.format) : String(q);
}

/** The format a quantity's suffix names (resource.Format): binary (Ki..Ei), decimal (m, k, M..E) or exponent. */
export type QuantityFormat = 'bin' | 'dec' | 'exp';

/** A quantity's value in nano-units and its format; null when it does not parse. */
export function parseQuantityFormat(q: unknown): { nanos: bigint; format: QuantityFormat } | null {
  return parseQuantity(q);
}

/** Quantity.String() of an amount in nano-units in a format (rounded up to milli-units, as quantityString). */
export function formatQuantity(nanos: bigint, format: QuantityFormat): string {
  const milli = nanos >= 0n ? (nanos + 999_999n) / 1_000_000n : -((-nanos + 999_999n) / 1_000_000n);
  const neg = milli < 0n;
  const abs = neg ? -milli : milli;
  const sign = neg ? '-' : '';
  if (abs === 0n) return '0';
  if (format === 'bin' && abs % 1000n === 0n && abs >= 1_024_000n) {
    let v = abs / 1000n;
    let i = 0;
    while (v % 1024n === 0n && i < 6) {
      v /= 1024n;
      i++;
    }
    return `${sign}${v}${['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'][i]}`;
  }
  // DecimalSI (and binary amounts that are not whole or below 1024): the largest power of 1000 that keeps the mantissa whole.
  let v = abs;
  let e = -3;
  while (v % 1000n === 0n && e < 18) {
    v /= 1000n;
    e += 3;
  }
  if (format === 'exp') return `${sign}${v}${e === 0 ? '' : `e${e}`}`;
  return `${sign}${v}${{ '-3': 'm', '0': '', '3': 'k', '6': 'M', '9': 'G', '12': 'T', '15': 'P', '18': 'E' }[String(e)] ?? ''}`;
}

const nil = (v: unknown): boolean => v === undefined || v === null || (Array.isArray(v) && v.length === 0);

/** apiequality.Semantic.DeepEqual over JSON: null, absent and empty lists are the same (an empty object is not nil). */
export function semanticEqual(a: unknown, b: unknown): boolean {
  if (nil(a) || nil(b)) return nil(a) && nil(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => semanticEqual(x, b[i]));
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const x = a as O;
    const y = b as O;
    for (const k of Object.keys(x)) if (!semanticEqual(x[k], y[k])) return false;
    for (const k of Object.keys(y)) if (!(k in x) && !nil(y[k])) return false;
    return true;
  }
  return a === b;
}
