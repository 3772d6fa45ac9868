/**
 * netfilter/iptables-parse: iptables-save / iptables-restore text → tables →
 * chains → rules, for the flags nodenet writes.
 *
 * Like kube-proxy's pkg/util/iptables/testing/parse.go, this is deliberately
 * not a general iptables parser: it knows the matches and targets the proxy
 * uses (comment, tcp/udp/sctp, statistic, recent, addrtype, mark, conntrack;
 * DNAT, SNAT, MASQUERADE, MARK, REJECT, DROP, ACCEPT, RETURN, chain jumps)
 * and rejects anything else the way iptables-restore does ("unknown option",
 * "Bad argument"), so the validating fake can refuse what the kernel would.
 * It accepts both the forms we write (`-m tcp -p tcp -d 1.2.3.4`,
 * `--or-mark 0x4000`) and the forms iptables-save prints back
 * (`-d 1.2.3.4/32 -p tcp -m tcp`, `--set-xmark 0x4000/0x4000`);
 * ruleSignature() maps both to one canonical string.
 *
 * Pure: no fs, no processes.
 */
import { isIPv4, parseCidr } from '../../../../lib/net/ip.js';
import { IP_PROTOCOL_NUMBERS } from '../../../../lib/net/protocols.js';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { BUILTIN_CHAINS, isIptablesTable, quoteArg, type IptablesTable } from './iptables-types.js';

export const MAX_CHAIN_NAME = 28;

/** A parse failure; `line` is 1-based. */
export class IptablesParseError extends NodenetError {
  override name = 'IptablesParseError';
  constructor(readonly line: number, msg: string) {
    super(ErrorCode.IptablesParse, `line ${line}: ${msg}`);
  }
}

export interface Negatable<T> {
  readonly value: T;
  readonly negated: boolean;
}

export interface RecentMatch {
  readonly name: string;
  readonly mode: 'set' | 'rcheck' | 'update' | 'remove';
  readonly seconds: number | null;
  readonly reap: boolean;
  readonly hitcount: number | null;
  /** rsource (default) or rdest. */
  readonly side: 'rsource' | 'rdest';
  readonly mask: string;
}

export interface MarkValue {
  readonly value: number;
  readonly mask: number;
}

export type IptTarget =
  | { readonly kind: 'chain'; readonly chain: string }
  | { readonly kind: 'ACCEPT' | 'DROP' | 'RETURN' }
  | { readonly kind: 'REJECT'; readonly rejectWith: string }
  | { readonly kind: 'DNAT'; readonly toDestination: string }
  | { readonly kind: 'SNAT'; readonly toSource: string; readonly randomFully: boolean }
  | { readonly kind: 'MASQUERADE'; readonly randomFully: boolean; readonly toPorts: string | null }
  /** Normalised to --set-xmark semantics: mark = (mark & ~mask) ^ value. */
  | { readonly kind: 'MARK'; readonly value: number; readonly mask: number };

export interface IptRule {
  readonly chain: string;
  /** 1-based line in the text it came from (0 when built in code). */
  readonly line: number;
  /** The rule's arguments after `-A CHAIN`, re-quoted; the fake's save() prints these. */
  readonly args: string;
  /** CIDR a.b.c.d/n (a bare address becomes /32). */
  readonly source: Negatable<string> | null;
  readonly destination: Negatable<string> | null;
  /** Lowercase (tcp, udp, sctp, icmp, all). */
  readonly protocol: Negatable<string> | null;
  readonly inInterface: Negatable<string> | null;
  readonly outInterface: Negatable<string> | null;
  /** A port or a range "a:b", as written. */
  readonly sport: Negatable<string> | null;
  readonly dport: Negatable<string> | null;
  readonly comment: string | null;
  /** statistic --mode random --probability. */
  readonly probability: number | null;
  readonly recent: RecentMatch | null;
  readonly srcType: Negatable<string> | null;
  readonly dstType: Negatable<string> | null;
  readonly mark: Negatable<MarkValue> | null;
  /** conntrack --ctstate, uppercase states. */
  readonly ctstate: Negatable<readonly string[]> | null;
  /** null: a rule with no -j (it only counts). */
  readonly target: IptTarget | null;
  /** -g instead of -j. */
  readonly goto: boolean;
  /** `-m set [!] --match-set NAME dst,dst` (IPVS mode), in order; absent when the rule has none. */
  readonly matchSets?: readonly SetMatch[];
  /** `-m ipvs --vaddr A --vproto P --vport N` (IPVS mode's KUBE-IPVS-OUT-FILTER); absent when the rule has none. */
  readonly ipvs?: IpvsMatch;
}

/** The IPVS connection a packet belongs to (xt_ipvs): its virtual address, protocol and port. */
export interface IpvsMatch {
  /** CIDR a.b.c.d/n. */
  readonly vaddr: Negatable<string> | null;
  /** The protocol number (iptables-save prints it so; `tcp` is read as 6). */
  readonly vproto: Negatable<number> | null;
  readonly vport: Negatable<number> | null;
}

export interface SetMatch {
  readonly name: string;
  /** "dst", "dst,dst", "dst,dst,src", ... one per dimension of the set. */
  readonly flags: readonly ('src' | 'dst')[];
  readonly negated: boolean;
}

export interface IptChain {
  readonly name: string;
  readonly builtin: boolean;
  /** ACCEPT/DROP for built-in chains, null for ours. */
  readonly policy: string | null;
  readonly rules: readonly IptRule[];
}

export interface IptTableDump {
  readonly name: IptablesTable;
  /** In declaration order. */
  readonly chains: ReadonlyMap<string, IptChain>;
}

export interface IptDump {
  readonly tables: ReadonlyMap<IptablesTable, IptTableDump>;
}

/** One operation of a restore block, in input order. */
export type RestoreOp =
  | { readonly op: 'declare'; readonly line: number; readonly chain: string; readonly policy: string | null }
  | { readonly op: 'append'; readonly line: number; readonly rule: IptRule }
  | { readonly op: 'insert'; readonly line: number; readonly rule: IptRule; readonly position: number }
  | { readonly op: 'delete'; readonly line: number; readonly chain: string; readonly rule: IptRule | null; readonly index: number | null }
  | { readonly op: 'new'; readonly line: number; readonly chain: string }
  | { readonly op: 'delete-chain'; readonly line: number; readonly chain: string | null }
  | { readonly op: 'flush'; readonly line: number; readonly chain: string | null }
  | { readonly op: 'policy'; readonly line: number; readonly chain: string; readonly policy: string }
  /** `-S CHAIN` (or -L): lists the chain, fails when it does not exist, changes nothing. */
  | { readonly op: 'list'; readonly line: number; readonly chain: string };

export interface RestoreBlock {
  readonly table: IptablesTable;
  readonly line: number;
  readonly commitLine: number;
  readonly ops: readonly RestoreOp[];
}

// ---------------------------------------------------------------- tokenizer

/** Splits one line like iptables-restore: whitespace separates, "..." / '...' group, \" escapes inside quotes. */
export function tokenize(line: string, lineNo = 0): string[] {
  const out: string[] = [];
  let cur = '';
  let inTok = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === '\\' && i + 1 < line.length && (line[i + 1] === quote || line[i + 1] === '\\')) {
        cur += line[++i]!;
      } else if (c === quote) {
        quote = null;
      } else {
        cur += c;
      }
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inTok = true;
    } else if (/\s/.test(c)) {
      if (inTok) out.push(cur);
      cur = '';
      inTok = false;
    } else {
      cur += c;
      inTok = true;
    }
  }
  if (quote) throw new IptablesParseError(lineNo, 'unterminated quoted string');
  if (inTok) out.push(cur);
  return out;
}

// ---------------------------------------------------------------- rules

const PROTO_MODULES = new Set(['tcp', 'udp', 'sctp']);
const KNOWN_MODULES = new Set(['tcp', 'udp', 'sctp', 'comment', 'statistic', 'recent', 'addrtype', 'mark', 'conntrack', 'set', 'ipvs']);
const ADDR_TYPES = new Set(['UNSPEC', 'UNICAST', 'LOCAL', 'BROADCAST', 'ANYCAST', 'MULTICAST', 'BLACKHOLE', 'UNREACHABLE', 'PROHIBIT', 'THROW', 'NAT', 'XRESOLVE']);
const CT_STATES = new Set(['INVALID', 'NEW', 'ESTABLISHED', 'RELATED', 'UNTRACKED', 'SNAT', 'DNAT']);
const REJECT_WITH = new Set([
  'icmp-net-unreachable', 'icmp-host-unreachable', 'icmp-port-unreachable', 'icmp-proto-unreachable',
  'icmp-net-prohibited', 'icmp-host-prohibited', 'icmp-admin-prohibited', 'tcp-reset',
]);
const VERDICTS = new Set(['ACCEPT', 'DROP', 'RETURN']);

function parseAddr(v: string, line: number): string {
  const [ip, pfx, ...rest] = v.split('/');
  if (ip === undefined || rest.length || !isIPv4(ip)) throw new IptablesParseError(line, `host/network \`${v}' not found`);
  if (pfx === undefined) return `${ip}/32`;
  if (!/^\d{1,2}$/.test(pfx) || Number(pfx) > 32) throw new IptablesParseError(line, `invalid mask \`${pfx}' specified`);
  return parseCidr(v).cidr;
}

function parseU32(v: string, line: number, what: string): number {
  const n = /^(0x[0-9a-fA-F]+|\d+)$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new IptablesParseError(line, `Bad ${what} value \`${v}'`);
  return n;
}

function parseMark(v: string, line: number, what: string): MarkValue {
  const [a, b, ...rest] = v.split('/');
  if (a === undefined || rest.length) throw new IptablesParseError(line, `Bad ${what} value \`${v}'`);
  return { value: parseU32(a, line, what), mask: b === undefined ? 0xffffffff : parseU32(b, line, what) };
}

function parsePort(v: string, line: number): string {
  const parts = v.split(':');
  if (parts.length > 2 || parts.some((p) => !/^\d{1,5}$/.test(p) || Number(p) > 65535)) throw new IptablesParseError(line, `invalid port/service \`${v}' specified`);
  return v;
}

function parseDnatDest(v: string, line: number): string {
  const m = /^(\d+\.\d+\.\d+\.\d+)(?:-(\d+\.\d+\.\d+\.\d+))?(?::(\d+)(?:-(\d+))?)?$/.exec(v);
  if (!m || !isIPv4(m[1]!) || (m[2] !== undefined && !isIPv4(m[2])) || [m[3], m[4]].some((p) => p !== undefined && (Number(p) < 1 || Number(p) > 65535))) {
    throw new IptablesParseError(line, `Bad IP address \`${v}'`);
  }
  return v;
}

type MutableRule = { -readonly [K in keyof IptRule]: IptRule[K] };

/**
 * Parses the arguments of one rule (everything after `-A CHAIN`).
 * Throws IptablesParseError for an unknown option or module, a missing or bad
 * value, a misplaced `!`, or --dport without a tcp/udp/sctp protocol.
 */
export function parseRuleArgs(chain: string, tokens: readonly string[], line = 0): IptRule {
  const r: MutableRule = {
    chain, line, args: tokens.map(quoteArg).join(' '),
    source: null, destination: null, protocol: null, inInterface: null, outInterface: null,
    sport: null, dport: null, comment: null, probability: null, recent: null, srcType: null, dstType: null,
    mark: null, ctstate: null, target: null, goto: false,
  };
  const modules: string[] = [];
  let targetName: string | null = null;
  let statMode: string | null = null;
  let recent: { name: string; mode: RecentMatch['mode'] | null; seconds: number | null; reap: boolean; hitcount: number | null; side: 'rsource' | 'rdest'; mask: string } | null = null;
  const t: { rejectWith: string | null; toDestination: string | null; toSource: string | null; randomFully: boolean; toPorts: string | null; mark: MarkValue | null } = {
    rejectWith: null, toDestination: null, toSource: null, randomFully: false, toPorts: null, mark: null,
  };
  let negate = false;
  let i = 0;
  const value = (opt: string): string => {
    const v = tokens[i + 1];
    if (v === undefined || (v.startsWith('-') && v.length > 1 && !/^-\d/.test(v))) throw new IptablesParseError(line, `option "${opt}" requires an argument`);
    if (v === '!') throw new IptablesParseError(line, `Bad argument \`${tokens[i + 2] ?? '!'}': intrapositioned negation (${opt} ! x) is not supported`);
    i += 1;
    return v;
  };
  const noNegate = (opt: string): void => {
    if (negate) throw new IptablesParseError(line, `cannot have ! before ${opt}`);
  };
  const has = (m: string): boolean => modules.includes(m);

  for (; i < tokens.length; i++) {
    const tok = tokens[i]!;
    if (tok === '!') {
      if (negate) throw new IptablesParseError(line, 'multiple consecutive ! not allowed');
      negate = true;
      continue;
    }
    const neg = negate;
    negate = false;
    const v = (opt: string): Negatable<string> => ({ value: value(opt), negated: neg });
    switch (tok) {
      case '-s': case '--source': case '--src': {
        const x = v(tok);
        r.source = { value: parseAddr(x.value, line), negated: neg };
        continue;
      }
      case '-d': case '--destination': case '--dst': {
        const x = v(tok);
        r.destination = { value: parseAddr(x.value, line), negated: neg };
        continue;
      }
      case '-p': case '--protocol': {
        const x = v(tok);
        const p = x.value.toLowerCase();
        if (!/^(tcp|udp|sctp|icmp|all|\d+)$/.test(p)) throw new IptablesParseError(line, `unknown protocol "${x.value}" specified`);
        r.protocol = { value: p, negated: neg };
        // -p tcp loads the tcp match implicitly.
        if (!neg && PROTO_MODULES.has(p) && !has(p)) modules.push(p);
        continue;
      }
      case '-i': case '--in-interface':
        r.inInterface = v(tok);
        continue;
      case '-o': case '--out-interface':
        r.outInterface = v(tok);
        continue;
      case '-m': case '--match': {
        noNegate(tok);
        const m = value(tok).toLowerCase();
        if (!KNOWN_MODULES.has(m)) throw new IptablesParseError(line, `Couldn't load match \`${m}':No such file or directory`);
        if (!has(m)) modules.push(m);
        continue;
      }
      case '-j': case '--jump': case '-g': case '--goto': {
        noNegate(tok);
        if (targetName !== null) throw new IptablesParseError(line, 'multiple -j flags not allowed');
        targetName = value(tok);
        r.goto = tok === '-g' || tok === '--goto';
        if (targetName.length > MAX_CHAIN_NAME || targetName === '') throw new IptablesParseError(line, `Invalid target name \`${targetName}'`);
        continue;
      }
    }
    // Match options, valid once their module is loaded.
    if ((tok === '--dport' || tok === '--destination-port' || tok === '--sport' || tok === '--source-port') && modules.some((m) => PROTO_MODULES.has(m))) {
      const x = v(tok);
      const port = { value: parsePort(x.value, line), negated: neg };
      if (tok.includes('d')) r.dport = port;
      else r.sport = port;
      continue;
    }
    if (tok === '--comment' && has('comment')) {
      noNegate(tok);
      const c = value(tok);
      if (c.length > 255) throw new IptablesParseError(line, 'COMMENT must be shorter than 256 characters');
      r.comment = c;
      continue;
    }
    if (has('statistic') && (tok === '--mode' || tok === '--probability')) {
      if (tok === '--mode') {
        noNegate(tok);
        statMode = value(tok);
        if (statMode !== 'random' && statMode !== 'nth') throw new IptablesParseError(line, `Bad mode "${statMode}"`);
      } else {
        const p = Number(value(tok));
        if (!Number.isFinite(p) || p < 0 || p > 1) throw new IptablesParseError(line, 'probability must be between 0 and 1');
        r.probability = neg ? 1 - p : p;
      }
      continue;
    }
    if (has('recent') && ['--name', '--set', '--rcheck', '--update', '--remove', '--seconds', '--reap', '--hitcount', '--rsource', '--rdest', '--mask'].includes(tok)) {
      recent ??= { name: 'DEFAULT', mode: null, seconds: null, reap: false, hitcount: null, side: 'rsource', mask: '255.255.255.255' };
      switch (tok) {
        case '--name': recent.name = value(tok); break;
        case '--set': case '--rcheck': case '--update': case '--remove':
          if (recent.mode !== null) throw new IptablesParseError(line, 'recent: only one of `--set\', `--rcheck\' `--update\' or `--remove\' may be set');
          recent.mode = tok.slice(2) as RecentMatch['mode'];
          break;
        case '--seconds': recent.seconds = parseU32(value(tok), line, 'seconds'); break;
        case '--hitcount': recent.hitcount = parseU32(value(tok), line, 'hitcount'); break;
        case '--reap': recent.reap = true; break;
        case '--rsource': recent.side = 'rsource'; break;
        case '--rdest': recent.side = 'rdest'; break;
        case '--mask': {
          const m = value(tok);
          if (!isIPv4(m)) throw new IptablesParseError(line, `bad mask \`${m}'`);
          recent.mask = m;
          break;
        }
      }
      continue;
    }
    if (has('addrtype') && (tok === '--src-type' || tok === '--dst-type')) {
      const x = v(tok);
      for (const part of x.value.split(',')) if (!ADDR_TYPES.has(part)) throw new IptablesParseError(line, `addrtype: bad type "${part}"`);
      if (tok === '--src-type') r.srcType = x;
      else r.dstType = x;
      continue;
    }
    if (has('mark') && tok === '--mark') {
      r.mark = { value: parseMark(value(tok), line, 'mark'), negated: neg };
      continue;
    }
    if (has('set') && tok === '--match-set') {
      const name = value(tok);
      const flags = value(tok).split(',');
      if (flags.some((f) => f !== 'src' && f !== 'dst') || flags.length > 6) throw new IptablesParseError(line, `set match: bad flags \`${flags.join(',')}'`);
      r.matchSets = [...(r.matchSets ?? []), { name, flags: flags as ('src' | 'dst')[], negated: neg }];
      continue;
    }
    if (has('ipvs') && (tok === '--vaddr' || tok === '--vproto' || tok === '--vport')) {
      const x = v(tok);
      const cur: { -readonly [K in keyof IpvsMatch]: IpvsMatch[K] } = { vaddr: null, vproto: null, vport: null, ...r.ipvs };
      if (tok === '--vaddr') cur.vaddr = { value: parseAddr(x.value, line), negated: neg };
      else if (tok === '--vproto') {
        const p = IP_PROTOCOL_NUMBERS[x.value.toLowerCase()] ?? (/^\d{1,3}$/.test(x.value) && Number(x.value) <= 255 ? Number(x.value) : NaN);
        if (Number.isNaN(p)) throw new IptablesParseError(line, `unknown protocol "${x.value}" specified`);
        cur.vproto = { value: p, negated: neg };
      } else {
        if (!/^\d{1,5}$/.test(x.value) || Number(x.value) > 65535) throw new IptablesParseError(line, `invalid port/service \`${x.value}' specified`);
        cur.vport = { value: Number(x.value), negated: neg };
      }
      r.ipvs = cur;
      continue;
    }
    if (has('conntrack') && tok === '--ctstate') {
      const x = v(tok);
      const states = x.value.split(',');
      for (const s of states) if (!CT_STATES.has(s)) throw new IptablesParseError(line, `Bad ctstate "${s}"`);
      r.ctstate = { value: states, negated: neg };
      continue;
    }
    // Target options, valid after -j TARGET.
    if (targetName !== null) {
      let matched = true;
      switch (`${targetName} ${tok}`) {
        case 'REJECT --reject-with': {
          noNegate(tok);
          const w = value(tok);
          if (!REJECT_WITH.has(w)) throw new IptablesParseError(line, `unknown reject type "${w}"`);
          t.rejectWith = w;
          break;
        }
        case 'DNAT --to-destination': noNegate(tok); t.toDestination = parseDnatDest(value(tok), line); break;
        case 'SNAT --to-source': noNegate(tok); t.toSource = parseDnatDest(value(tok), line); break;
        case 'SNAT --random-fully': case 'MASQUERADE --random-fully': noNegate(tok); t.randomFully = true; break;
        case 'MASQUERADE --to-ports': noNegate(tok); t.toPorts = parsePort(value(tok).replace('-', ':'), line); break;
        case 'MARK --set-xmark': noNegate(tok); t.mark = parseMark(value(tok), line, 'MARK'); break;
        case 'MARK --set-mark': {
          noNegate(tok);
          const m = parseMark(value(tok), line, 'MARK');
          t.mark = { value: m.value, mask: (m.mask | m.value) >>> 0 };
          break;
        }
        case 'MARK --or-mark': { noNegate(tok); const b = parseU32(value(tok), line, 'MARK'); t.mark = { value: b, mask: b }; break; }
        case 'MARK --xor-mark': { noNegate(tok); t.mark = { value: parseU32(value(tok), line, 'MARK'), mask: 0 }; break; }
        case 'MARK --and-mark': { noNegate(tok); t.mark = { value: 0, mask: ~parseU32(value(tok), line, 'MARK') >>> 0 }; break; }
        default: matched = false;
      }
      if (matched) continue;
    }
    if (tok.startsWith('-')) throw new IptablesParseError(line, `unknown option "${tok}"`);
    throw new IptablesParseError(line, `Bad argument \`${tok}'`);
  }
  if (negate) throw new IptablesParseError(line, "trailing '!'");

  // Cross-option checks the tools make.
  for (const m of modules) {
    if (PROTO_MODULES.has(m) && !(r.protocol && !r.protocol.negated && r.protocol.value === m)) {
      throw new IptablesParseError(line, `${m} match: only valid for protocol ${m}; add -p ${m}`);
    }
  }
  if (has('statistic')) {
    if (statMode === null) throw new IptablesParseError(line, 'statistic: no mode specified');
    if (statMode === 'random' && r.probability === null) throw new IptablesParseError(line, 'statistic: --probability required in random mode');
  }
  if (recent) {
    if (recent.mode === null) throw new IptablesParseError(line, 'recent: you must specify one of `--set\', `--rcheck\' `--update\' or `--remove\'');
    if ((recent.seconds !== null || recent.reap) && recent.mode === 'set') throw new IptablesParseError(line, 'recent: --seconds and --reap make no sense with --set');
    if (recent.reap && recent.seconds === null) throw new IptablesParseError(line, 'recent: --reap requires --seconds');
    r.recent = { name: recent.name, mode: recent.mode, seconds: recent.seconds, reap: recent.reap, hitcount: recent.hitcount, side: recent.side, mask: recent.mask };
  }
  if (targetName !== null) r.target = buildTarget(targetName, t, r, line);
  return r;
}

function buildTarget(
  name: string,
  t: { rejectWith: string | null; toDestination: string | null; toSource: string | null; randomFully: boolean; toPorts: string | null; mark: MarkValue | null },
  r: MutableRule,
  line: number,
): IptTarget {
  if (VERDICTS.has(name)) return { kind: name as 'ACCEPT' | 'DROP' | 'RETURN' };
  switch (name) {
    case 'REJECT':
      return { kind: 'REJECT', rejectWith: t.rejectWith ?? 'icmp-port-unreachable' };
    case 'DNAT':
      if (t.toDestination === null) throw new IptablesParseError(line, 'DNAT: you must specify --to-destination');
      if (t.toDestination.includes(':') && !(r.protocol && ['tcp', 'udp', 'sctp'].includes(r.protocol.value) && !r.protocol.negated)) {
        throw new IptablesParseError(line, 'DNAT: Need TCP, UDP, SCTP or DCCP with port specification');
      }
      return { kind: 'DNAT', toDestination: t.toDestination };
    case 'SNAT':
      if (t.toSource === null) throw new IptablesParseError(line, 'SNAT: you must specify --to-source');
      return { kind: 'SNAT', toSource: t.toSource, randomFully: t.randomFully };
    case 'MASQUERADE':
      return { kind: 'MASQUERADE', randomFully: t.randomFully, toPorts: t.toPorts };
    case 'MARK':
      if (t.mark === null) throw new IptablesParseError(line, 'MARK target: Parameter --set/and/or/xor-mark is required');
      return { kind: 'MARK', value: t.mark.value, mask: t.mark.mask };
  }
  // Anything else is a jump to a user chain; whether it exists is the table's business.
  return { kind: 'chain', chain: name };
}

// ---------------------------------------------------------------- canonical form

const P31 = 0x80000000;

/**
 * A canonical string for a rule's meaning: equal for `-m tcp -p tcp -d 1.2.3.4`
 * and iptables-save's `-d 1.2.3.4/32 -p tcp -m tcp`, for `--or-mark 0x4000` and
 * `--set-xmark 0x4000/0x4000`, for a probability and the kernel's rounding of it
 * (the kernel keeps round(p * 2^31)). The chain is part of it, the line is not.
 */
export function ruleSignature(r: IptRule): string {
  const n = <T>(x: Negatable<T> | null, f: (v: T) => string = String): string | null => (x ? `${x.negated ? '!' : ''}${f(x.value)}` : null);
  const parts: [string, string | null][] = [
    ['chain', r.chain],
    ['s', n(r.source)],
    ['d', n(r.destination)],
    ['p', n(r.protocol)],
    ['i', n(r.inInterface)],
    ['o', n(r.outInterface)],
    ['sport', n(r.sport)],
    ['dport', n(r.dport)],
    ['comment', r.comment],
    ['prob', r.probability === null ? null : String(Math.round(r.probability * P31))],
    ['recent', r.recent ? `${r.recent.name}/${r.recent.mode}/${r.recent.seconds ?? ''}/${r.recent.reap}/${r.recent.hitcount ?? ''}/${r.recent.side}/${r.recent.mask}` : null],
    ['srctype', n(r.srcType)],
    ['dsttype', n(r.dstType)],
    ['mark', n(r.mark, (m) => `${hex(m.value)}/${hex(m.mask)}`)],
    ['ctstate', n(r.ctstate, (s) => [...s].sort().join(','))],
    ['set', r.matchSets ? r.matchSets.map((m) => `${m.negated ? '!' : ''}${m.name}:${m.flags.join(',')}`).join(';') : null],
    ['ipvs', r.ipvs ? `${n(r.ipvs.vaddr) ?? ''}/${n(r.ipvs.vproto, String) ?? ''}/${n(r.ipvs.vport, String) ?? ''}` : null],
    [r.goto ? 'g' : 'j', r.target ? targetSignature(r.target) : null],
  ];
  return parts.filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`).join(' ');
}

function hex(n: number): string {
  return `0x${n.toString(16)}`;
}

export function targetSignature(t: IptTarget): string {
  switch (t.kind) {
    case 'chain': return t.chain;
    case 'ACCEPT': case 'DROP': case 'RETURN': return t.kind;
    case 'REJECT': return `REJECT:${t.rejectWith}`;
    case 'DNAT': return `DNAT:${t.toDestination}`;
    case 'SNAT': return `SNAT:${t.toSource}:${t.randomFully}`;
    case 'MASQUERADE': return `MASQUERADE:${t.randomFully}:${t.toPorts ?? ''}`;
    case 'MARK': return `MARK:${hex(t.value)}/${hex(t.mask)}`;
  }
}

// ---------------------------------------------------------------- restore / save text

function checkChainName(name: string, line: number): string {
  if (name === '' || name.startsWith('-') || name === '!') throw new IptablesParseError(line, `invalid chain name \`${name}'`);
  if (name.length > MAX_CHAIN_NAME) throw new IptablesParseError(line, `chain name \`${name}' too long (must be under ${MAX_CHAIN_NAME + 1} chars)`);
  return name;
}

/**
 * Parses iptables-restore input (iptables-save output is a subset) into blocks
 * of operations, in order. Throws IptablesParseError like iptables-restore:
 * a line outside `*table ... COMMIT`, a missing COMMIT, an unknown table,
 * a malformed chain line, or a rule that does not parse.
 */
export function parseRestore(text: string): RestoreBlock[] {
  const blocks: RestoreBlock[] = [];
  let cur: { table: IptablesTable; line: number; ops: RestoreOp[] } | null = null;
  const lines = text.split('\n');
  for (let idx = 0; idx < lines.length; idx++) {
    const lineNo = idx + 1;
    const raw = lines[idx]!.trim();
    if (raw === '' || raw.startsWith('#')) continue;
    if (raw.startsWith('*')) {
      if (cur) throw new IptablesParseError(lineNo, 'COMMIT expected');
      const name = raw.slice(1).trim();
      if (!isIptablesTable(name)) throw new IptablesParseError(lineNo, `table '${name}' does not exist`);
      cur = { table: name, line: lineNo, ops: [] };
      continue;
    }
    if (!cur) throw new IptablesParseError(lineNo, 'no command before table');
    if (raw === 'COMMIT') {
      blocks.push({ table: cur.table, line: cur.line, commitLine: lineNo, ops: cur.ops });
      cur = null;
      continue;
    }
    if (raw.startsWith(':')) {
      const parts = raw.slice(1).trim().split(/\s+/);
      const [name, policy, counters, ...rest] = parts;
      if (name === undefined || policy === undefined || rest.length || (counters !== undefined && !/^\[\d+:\d+\]$/.test(counters))) {
        throw new IptablesParseError(lineNo, `bad chain line ${JSON.stringify(raw)}`);
      }
      checkChainName(name, lineNo);
      const builtin = BUILTIN_CHAINS[cur.table].includes(name);
      if (builtin ? policy !== 'ACCEPT' && policy !== 'DROP' : policy !== '-') {
        throw new IptablesParseError(lineNo, `bad policy ${policy} for chain ${name}`);
      }
      cur.ops.push({ op: 'declare', line: lineNo, chain: name, policy: builtin ? policy : null });
      continue;
    }
    let toks = tokenize(raw, lineNo);
    if (toks[0] && /^\[\d+:\d+\]$/.test(toks[0])) toks = toks.slice(1);
    const [cmd, chainArg, ...rest] = toks;
    const chainName = (): string => {
      if (chainArg === undefined) throw new IptablesParseError(lineNo, `option "${cmd}" requires an argument`);
      return checkChainName(chainArg, lineNo);
    };
    switch (cmd) {
      case '-A': case '--append':
        cur.ops.push({ op: 'append', line: lineNo, rule: parseRuleArgs(chainName(), rest, lineNo) });
        break;
      case '-I': case '--insert': {
        const c = chainName();
        let pos = 1;
        let args = rest;
        if (rest[0] !== undefined && /^\d+$/.test(rest[0])) {
          pos = Number(rest[0]);
          if (pos < 1) throw new IptablesParseError(lineNo, 'Invalid rule number');
          args = rest.slice(1);
        }
        cur.ops.push({ op: 'insert', line: lineNo, rule: parseRuleArgs(c, args, lineNo), position: pos });
        break;
      }
      case '-D': case '--delete': {
        const c = chainName();
        if (rest.length === 1 && /^\d+$/.test(rest[0]!)) cur.ops.push({ op: 'delete', line: lineNo, chain: c, rule: null, index: Number(rest[0]) });
        else cur.ops.push({ op: 'delete', line: lineNo, chain: c, rule: parseRuleArgs(c, rest, lineNo), index: null });
        break;
      }
      case '-N': case '--new-chain':
        if (rest.length) throw new IptablesParseError(lineNo, `Bad argument \`${rest[0]}'`);
        cur.ops.push({ op: 'new', line: lineNo, chain: chainName() });
        break;
      case '-X': case '--delete-chain':
        if (rest.length) throw new IptablesParseError(lineNo, `Bad argument \`${rest[0]}'`);
        cur.ops.push({ op: 'delete-chain', line: lineNo, chain: chainArg === undefined ? null : chainName() });
        break;
      case '-F': case '--flush':
        if (rest.length) throw new IptablesParseError(lineNo, `Bad argument \`${rest[0]}'`);
        cur.ops.push({ op: 'flush', line: lineNo, chain: chainArg === undefined ? null : chainName() });
        break;
      case '-S': case '--list-rules': case '-L': case '--list':
        if (rest.length) throw new IptablesParseError(lineNo, `Bad argument \`${rest[0]}'`);
        cur.ops.push({ op: 'list', line: lineNo, chain: chainName() });
        break;
      case '-P': case '--policy': {
        const c = chainName();
        const p = rest[0];
        if (p === undefined || rest.length > 1 || (p !== 'ACCEPT' && p !== 'DROP')) throw new IptablesParseError(lineNo, `Bad policy name`);
        cur.ops.push({ op: 'policy', line: lineNo, chain: c, policy: p });
        break;
      }
      default:
        throw new IptablesParseError(lineNo, `Bad argument \`${cmd ?? raw}'`);
    }
  }
  if (cur) throw new IptablesParseError(lines.length, `COMMIT expected at line ${lines.length}`);
  return blocks;
}

interface MutableChain {
  name: string;
  builtin: boolean;
  policy: string | null;
  rules: IptRule[];
}

/**
 * Parses iptables-save output (chain declarations and -A rules only) into a dump.
 * Built-in chains are present in every table that appears. A table that appears
 * twice is merged (iptables-save prints each once).
 */
export function parseSave(text: string): IptDump {
  const tables = new Map<IptablesTable, { name: IptablesTable; chains: Map<string, MutableChain> }>();
  for (const b of parseRestore(text)) {
    let t = tables.get(b.table);
    if (!t) {
      t = { name: b.table, chains: new Map() };
      for (const c of BUILTIN_CHAINS[b.table]) t.chains.set(c, { name: c, builtin: true, policy: 'ACCEPT', rules: [] });
      tables.set(b.table, t);
    }
    for (const op of b.ops) {
      if (op.op === 'declare') {
        const ex = t.chains.get(op.chain);
        if (ex) ex.policy = op.policy ?? ex.policy;
        else t.chains.set(op.chain, { name: op.chain, builtin: false, policy: null, rules: [] });
      } else if (op.op === 'append') {
        const c = t.chains.get(op.rule.chain);
        if (!c) throw new IptablesParseError(op.line, `chain ${op.rule.chain} is not declared`);
        c.rules.push(op.rule);
      } else {
        throw new IptablesParseError(op.line, `unexpected ${op.op} in iptables-save output`);
      }
    }
  }
  return { tables };
}

/** Prints a dump in iptables-save format (without the # comment lines). */
export function formatDump(dump: IptDump, only?: IptablesTable): string {
  let out = '';
  for (const t of dump.tables.values()) {
    if (only !== undefined && t.name !== only) continue;
    out += `*${t.name}\n`;
    for (const c of t.chains.values()) out += `:${c.name} ${c.builtin ? c.policy ?? 'ACCEPT' : '-'} [0:0]\n`;
    for (const c of t.chains.values()) for (const r of c.rules) out += `-A ${c.name}${r.args ? ` ${r.args}` : ''}\n`;
    out += 'COMMIT\n';
  }
  return out;
}

/** Chain names declared for `table` in iptables-save output, read from the `:CHAIN` lines only (so foreign rules never trip it). */
export function chainNamesFromSave(text: string, table: IptablesTable): Set<string> {
  const out = new Set<string>();
  let inTable = false;
  for (const raw of text.split('\n')) {
    const l = raw.trim();
    if (l.startsWith('*')) inTable = l.slice(1).trim() === table;
    else if (l === 'COMMIT') inTable = false;
    else if (inTable && l.startsWith(':')) {
      const name = l.slice(1).split(/\s+/)[0];
      if (name) out.add(name);
    }
  }
  return out;
}

/** Looks up a chain in a dump. */
export function getChain(dump: IptDump, table: IptablesTable, chain: string): IptChain | undefined {
  return dump.tables.get(table)?.chains.get(chain);
}

/** Lines [line-around, line+around] of text, numbered, for error messages. */
export function linesAround(text: string, line: number, around = 3): string {
  const lines = text.split('\n');
  const from = Math.max(1, line - around);
  const to = Math.min(lines.length, line + around);
  const out: string[] = [];
  for (let n = from; n <= to; n++) out.push(`${n === line ? '>' : ' '}${String(n).padStart(6)}: ${lines[n - 1] ?? ''}`);
  return out.join('\n');
}
