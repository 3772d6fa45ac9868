/**
 * netfilter/nft-script: parses the subset of `nft -f` syntax nodenet writes.
 *
 * Narrow on purpose (as kube-proxy's helpers_test.go is about its own rules):
 * one command per line, the object forms below, and rule bodies made only of
 * the statement pieces nodenet renders. Anything else is an error, so a
 * renderer that starts writing something new has to teach this parser (and
 * the tracer) about it first. It also enforces nft 1.0.6's quirk that a
 * one-line `{ ... }` body needs `;` before `}`.
 *
 * Pure: no I/O. Used by the validating fake (nft.fake.ts).
 */
import { isIPv4, parseCidr } from '../../../../lib/net/ip.js';
import { parsePriority, type NftBaseChain, type NftFamily } from './nft-state.js';

export interface NftScriptElement {
  /** Key parts joined with ' . '. */
  readonly key: string;
  readonly value: string | null;
  readonly comment: string | null;
}

interface OpBase {
  /** 1-based line in the script. */
  readonly line: number;
  readonly family: NftFamily;
  readonly table: string;
}

export type NftOp =
  | (OpBase & { readonly verb: 'add'; readonly obj: 'table'; readonly comment: string | null })
  | (OpBase & { readonly verb: 'flush' | 'delete'; readonly obj: 'table' })
  | (OpBase & { readonly verb: 'add'; readonly obj: 'chain'; readonly name: string; readonly base: NftBaseChain | null; readonly comment: string | null })
  | (OpBase & { readonly verb: 'flush' | 'delete'; readonly obj: 'chain' | 'set' | 'map'; readonly name: string })
  | (OpBase & { readonly verb: 'add'; readonly obj: 'rule'; readonly chain: string; readonly rule: string; readonly parsed: ParsedRule })
  | (OpBase & {
      readonly verb: 'add';
      readonly obj: 'set' | 'map';
      readonly name: string;
      readonly keyTypes: readonly string[];
      readonly dataType: string | null;
      readonly flags: readonly string[];
      readonly timeout: number | null;
      readonly comment: string | null;
    })
  | (OpBase & { readonly verb: 'add' | 'delete'; readonly obj: 'element'; readonly name: string; readonly elements: readonly NftScriptElement[] });

/** What a rule refers to and does, as far as validation and tracing care. */
export interface ParsedRule {
  /** Chains reached by jump/goto. */
  readonly chainRefs: readonly string[];
  /** Named sets/maps looked up (`@name`), with how they are used. */
  readonly setRefs: readonly SetRef[];
  readonly dnat: boolean;
  readonly masquerade: boolean;
  readonly reject: boolean;
}

/** A reference to a named set or map, with the key types the expression needs. */
export interface SetRef {
  readonly name: string;
  readonly use: 'lookup' | 'vmap' | 'update';
  readonly keyTypes: readonly string[];
}

export class NftScriptError extends Error {
  override name = 'NftScriptError';
  constructor(readonly line: number, msg: string) {
    super(msg);
  }
}

const FAMILIES: readonly string[] = ['ip', 'ip6', 'inet'];
const NAME_RE = /^[A-Za-z_.][A-Za-z0-9_./-]*$/;
const KEY_TYPES: readonly string[] = ['ipv4_addr', 'inet_proto', 'inet_service'];
const SET_FLAGS: readonly string[] = ['dynamic', 'timeout', 'interval', 'constant'];
const BASE_TYPES: readonly string[] = ['filter', 'nat', 'route'];
const HOOKS: readonly string[] = ['prerouting', 'input', 'forward', 'output', 'postrouting'];

/** Splits on `sep` outside double quotes. */
export function splitOutsideQuotes(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inQ = false;
  for (const ch of s) {
    if (ch === '"') inQ = !inQ;
    if (ch === sep && !inQ) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

/**
 * Parses a `{ a ; b ; }` body into its clauses. nft 1.0.6 rejects a one-line
 * body whose last clause lacks the `;` before `}`; so do we.
 */
function parseBody(line: number, body: string): string[] {
  const inner = body.trim();
  if (!inner.startsWith('{') || !inner.endsWith('}')) throw new NftScriptError(line, `expected { ... }, got ${inner}`);
  const content = inner.slice(1, -1).trim();
  if (content === '') return [];
  if (!content.endsWith(';')) throw new NftScriptError(line, "syntax error: a one-line body needs ';' before '}' (nft 1.0.6)");
  return splitOutsideQuotes(content, ';')
    .map((c) => c.trim())
    .filter((c) => c !== '');
}

function parseComment(line: number, s: string): string {
  const m = /^comment "([^"]*)"$/.exec(s.trim());
  if (!m) throw new NftScriptError(line, `bad comment clause: ${s}`);
  return m[1]!;
}

function checkName(line: number, what: string, name: string | undefined): string {
  if (!name || !NAME_RE.test(name) || name.length > 255) throw new NftScriptError(line, `bad ${what} name ${JSON.stringify(name ?? '')}`);
  return name;
}

/** Validates one key part against its declared type. */
export function checkKeyPart(type: string, part: string, interval = false): boolean {
  switch (type) {
    case 'ipv4_addr':
      if (interval && part.includes('/')) {
        try {
          return parseCidr(part).ip === part.split('/')[0];
        } catch {
          return false;
        }
      }
      return isIPv4(part);
    case 'inet_proto':
      return ['tcp', 'udp', 'sctp', 'icmp'].includes(part);
    case 'inet_service':
      return /^\d{1,5}$/.test(part) && Number(part) <= 65535;
    default:
      return false;
  }
}

const VERDICT_RE = /^(?:accept|drop|return|continue|(?:goto|jump) ([A-Za-z_.][A-Za-z0-9_./-]*))$/;

/** A verdict as a vmap value: the chain it names, if any. Throws on anything that is not a verdict. */
export function parseVerdict(line: number, v: string): { chain: string | null } {
  const m = VERDICT_RE.exec(v.trim());
  if (!m) throw new NftScriptError(line, `not a verdict: ${JSON.stringify(v)}`);
  return { chain: m[1] ?? null };
}

function parseElements(line: number, body: string, withValues: boolean): NftScriptElement[] {
  const inner = body.trim();
  if (!inner.startsWith('{') || !inner.endsWith('}')) throw new NftScriptError(line, `expected { elements }, got ${inner}`);
  const parts = splitOutsideQuotes(inner.slice(1, -1), ',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === '')) throw new NftScriptError(line, 'empty element');
  return parts.map((p) => {
    const sides = splitOutsideQuotes(p, ':');
    if (sides.length > 2) throw new NftScriptError(line, `bad element ${p}`);
    let keyPart = sides[0]!.trim();
    let comment: string | null = null;
    const cm = /^(.*?)\s+comment "([^"]*)"$/.exec(keyPart);
    if (cm) {
      keyPart = cm[1]!;
      comment = cm[2]!;
    }
    const key = keyPart
      .split(/\s+\.\s+/)
      .map((k) => k.trim())
      .join(' . ');
    const value = sides.length === 2 ? sides[1]!.trim() : null;
    if (withValues && value !== null && value === '') throw new NftScriptError(line, `element ${p} has an empty value`);
    return { key, value, comment };
  });
}

/**
 * The rule statement pieces nodenet writes. Each entry consumes a prefix of
 * the rule; a rule must be consumed completely.
 */
interface Piece {
  readonly re: RegExp;
  readonly apply?: (m: RegExpExecArray, acc: MutableRule) => void;
}
interface MutableRule {
  chainRefs: string[];
  setRefs: SetRef[];
  dnat: boolean;
  masquerade: boolean;
  reject: boolean;
}

const IP = String.raw`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`;
const CHAIN = String.raw`[A-Za-z_.][A-Za-z0-9_./-]*`;
const PIECES: readonly Piece[] = [
  { re: /^ct state new(?= |$)/ },
  { re: new RegExp(String.raw`^ip daddr \. meta l4proto \. th dport vmap @(${CHAIN})$`), apply: (m, a) => a.setRefs.push({ name: m[1]!, use: 'vmap', keyTypes: ['ipv4_addr', 'inet_proto', 'inet_service'] }) },
  {
    re: new RegExp(String.raw`^meta l4proto \. th dport vmap @(${CHAIN})$`),
    apply: (m, a) => a.setRefs.push({ name: m[1]!, use: 'vmap', keyTypes: ['inet_proto', 'inet_service'] }),
  },
  {
    re: new RegExp(String.raw`^ip saddr \. ip daddr @(${CHAIN})(?= |$)`),
    apply: (m, a) => a.setRefs.push({ name: m[1]!, use: 'lookup', keyTypes: ['ipv4_addr', 'ipv4_addr'] }),
  },
  { re: new RegExp(String.raw`^ip (?:saddr|daddr) @(${CHAIN})(?= |$)`), apply: (m, a) => a.setRefs.push({ name: m[1]!, use: 'lookup', keyTypes: ['ipv4_addr'] }) },
  {
    re: new RegExp(String.raw`^ip (?:saddr|daddr) (?:!= )?(${IP}(?:/\d{1,2})?)(?= |$)`),
    apply: (m) => {
      const v = m[1]!;
      if (v.includes('/')) parseCidr(v);
      else if (!isIPv4(v)) throw new Error(`bad address ${v}`);
    },
  },
  { re: /^fib (?:saddr|daddr) type local(?= |$)/ },
  { re: /^(?:tcp|udp|sctp) dport \d{1,5}(?= |$)/ },
  { re: /^meta l4proto (?:tcp|udp|sctp|icmp)(?= |$)/ },
  { re: /^numgen random mod [1-9]\d* == \d+(?= |$)/ },
  { re: new RegExp(String.raw`^update @(${CHAIN}) \{ ip saddr \}(?= |$)`), apply: (m, a) => a.setRefs.push({ name: m[1]!, use: 'update', keyTypes: ['ipv4_addr'] }) },
  { re: /^mark set mark (?:or|xor) 0x[0-9a-f]+$/ },
  { re: /^mark and 0x[0-9a-f]+ == 0(?= |$)/ },
  { re: new RegExp(String.raw`^dnat to ${IP}:\d{1,5}(?= |$)`), apply: (_m, a) => (a.dnat = true) },
  { re: /^masquerade(?: fully-random)?(?= |$)/, apply: (_m, a) => (a.masquerade = true) },
  { re: new RegExp(String.raw`^(?:jump|goto) (${CHAIN})(?= |$)`), apply: (m, a) => a.chainRefs.push(m[1]!) },
  { re: /^(?:return|drop|accept)(?= |$)/ },
  { re: /^reject(?= |$)/, apply: (_m, a) => (a.reject = true) },
  { re: /^comment "[^"]*"$/ },
];

/** Parses a rule body into its references, rejecting any piece nodenet does not write. */
export function parseRule(line: number, rule: string): ParsedRule {
  const acc: MutableRule = { chainRefs: [], setRefs: [], dnat: false, masquerade: false, reject: false };
  let rest = rule.trim();
  if (rest === '') throw new NftScriptError(line, 'empty rule');
  while (rest !== '') {
    let matched = false;
    for (const p of PIECES) {
      const m = p.re.exec(rest);
      if (!m) continue;
      try {
        p.apply?.(m, acc);
      } catch (e) {
        throw new NftScriptError(line, `${e instanceof Error ? e.message : String(e)} in rule: ${rule}`);
      }
      rest = rest.slice(m[0].length).trimStart();
      matched = true;
      break;
    }
    if (!matched) throw new NftScriptError(line, `unsupported rule syntax at "${rest}" in rule: ${rule}`);
  }
  return acc;
}

function parseChainBody(line: number, body: string | undefined): { base: NftBaseChain | null; comment: string | null } {
  if (body === undefined) return { base: null, comment: null };
  let base: NftBaseChain | null = null;
  let comment: string | null = null;
  for (const c of parseBody(line, body)) {
    const bm = /^type (\S+) hook (\S+) priority (.+)$/.exec(c);
    if (bm) {
      const prio = parsePriority(bm[3]!);
      if (!BASE_TYPES.includes(bm[1]!) || !HOOKS.includes(bm[2]!) || prio === null) throw new NftScriptError(line, `bad base chain spec: ${c}`);
      base = { type: bm[1]!, hook: bm[2]!, priority: prio };
    } else if (/^policy (accept|drop)$/.test(c)) {
      // accepted; nodenet's chains use the default policy
    } else if (c.startsWith('comment ')) {
      comment = parseComment(line, c);
    } else throw new NftScriptError(line, `unsupported chain clause: ${c}`);
  }
  if (base && base.type === 'nat' && !['prerouting', 'output', 'postrouting', 'input'].includes(base.hook)) {
    throw new NftScriptError(line, `nat chains cannot use hook ${base.hook}`);
  }
  return { base, comment };
}

function parseSetBody(line: number, kind: 'set' | 'map', body: string | undefined) {
  if (body === undefined) throw new NftScriptError(line, `${kind} needs a { type ... ; } body`);
  let keyTypes: string[] | null = null;
  let dataType: string | null = null;
  let flags: string[] = [];
  let timeout: number | null = null;
  let comment: string | null = null;
  for (const c of parseBody(line, body)) {
    const tm = /^type (.+)$/.exec(c);
    if (tm) {
      const [k, d, ...extra] = tm[1]!.split(/\s+:\s+/);
      if (extra.length) throw new NftScriptError(line, `bad type ${c}`);
      keyTypes = k!.split(/\s+\.\s+/).map((x) => x.trim());
      if (keyTypes.some((x) => !KEY_TYPES.includes(x))) throw new NftScriptError(line, `unsupported key type in ${c}`);
      dataType = d?.trim() ?? null;
      if (kind === 'map' && dataType !== 'verdict') throw new NftScriptError(line, `map ${c}: only verdict maps are supported`);
      if (kind === 'set' && dataType !== null) throw new NftScriptError(line, `set ${c} cannot have a data type`);
    } else if (c.startsWith('flags ')) {
      flags = c.slice(6).split(',').map((f) => f.trim());
      if (flags.some((f) => !SET_FLAGS.includes(f))) throw new NftScriptError(line, `unsupported flags ${c}`);
    } else if (c.startsWith('timeout ')) {
      const m = /^timeout (\d+)s$/.exec(c);
      if (!m) throw new NftScriptError(line, `bad timeout ${c}`);
      timeout = Number(m[1]);
    } else if (c.startsWith('comment ')) {
      comment = parseComment(line, c);
    } else throw new NftScriptError(line, `unsupported ${kind} clause: ${c}`);
  }
  if (!keyTypes) throw new NftScriptError(line, `${kind} without a type`);
  if (timeout !== null && !flags.includes('timeout')) throw new NftScriptError(line, 'timeout needs flags timeout');
  return { keyTypes, dataType, flags, timeout, comment };
}

/** Parses a whole script. Throws NftScriptError (with the 1-based line) on the first bad line. */
export function parseNftScript(script: string): NftOp[] {
  const ops: NftOp[] = [];
  const lines = script.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const text = lines[i]!.trim();
    if (text === '' || text.startsWith('#')) continue;
    const m = /^(add|flush|delete) (table|chain|rule|set|map|element) (\S+) (.*)$/.exec(text);
    if (!m) throw new NftScriptError(lineNo, `syntax error: ${text}`);
    const verb = m[1] as 'add' | 'flush' | 'delete';
    const obj = m[2]!;
    const family = m[3]!;
    if (!FAMILIES.includes(family)) throw new NftScriptError(lineNo, `unknown family ${family}`);
    const fam = family as NftFamily;
    const rest = m[4]!;
    const sp = rest.indexOf(' ');
    const table = checkName(lineNo, 'table', sp < 0 ? rest : rest.slice(0, sp));
    const after = sp < 0 ? '' : rest.slice(sp + 1).trim();
    const base = { line: lineNo, family: fam, table };
    if (obj === 'table') {
      if (verb === 'add') {
        let comment: string | null = null;
        if (after) {
          for (const c of parseBody(lineNo, after)) {
            if (c.startsWith('comment ')) comment = parseComment(lineNo, c);
            else throw new NftScriptError(lineNo, `unsupported table clause: ${c}`);
          }
        }
        ops.push({ ...base, verb, obj, comment });
      } else {
        if (after) throw new NftScriptError(lineNo, `unexpected ${after}`);
        ops.push({ ...base, verb, obj });
      }
      continue;
    }
    const sp2 = after.indexOf(' ');
    const name = checkName(lineNo, obj === 'rule' ? 'chain' : obj, sp2 < 0 ? after : after.slice(0, sp2));
    const tail = sp2 < 0 ? '' : after.slice(sp2 + 1).trim();
    switch (obj) {
      case 'chain':
        if (verb === 'add') {
          const { base: b, comment } = parseChainBody(lineNo, tail || undefined);
          ops.push({ ...base, verb, obj, name, base: b, comment });
        } else {
          if (tail) throw new NftScriptError(lineNo, `unexpected ${tail}`);
          ops.push({ ...base, verb, obj, name });
        }
        break;
      case 'rule':
        if (verb !== 'add') throw new NftScriptError(lineNo, `${verb} rule is not supported (rules are replaced by flushing their chain)`);
        ops.push({ ...base, verb, obj, chain: name, rule: tail, parsed: parseRule(lineNo, tail) });
        break;
      case 'set':
      case 'map':
        if (verb === 'add') ops.push({ ...base, verb, obj, name, ...parseSetBody(lineNo, obj, tail || undefined) });
        else {
          if (tail) throw new NftScriptError(lineNo, `unexpected ${tail}`);
          ops.push({ ...base, verb, obj, name });
        }
        break;
      case 'element':
        if (verb === 'flush') throw new NftScriptError(lineNo, 'flush element is not a command');
        ops.push({ ...base, verb, obj, name, elements: parseElements(lineNo, tail, verb === 'add') });
        break;
      default:
        throw new NftScriptError(lineNo, `unknown object ${obj}`);
    }
  }
  return ops;
}
