/**
 * netfilter/nft/netlink/commands: the `nft -f` lines of a proxy sync (partial
 * or full), as typed commands the encoder (encode.ts) turns into nf_tables
 * netlink messages.
 *
 * Narrow on purpose: exactly the command and rule shapes the nftables
 * proxier's render writes (proxy/nftables/render.ts), one command per line:
 * a full sync adds the table with its comment, base chains (type, hook,
 * priority), chains with comments, the named sets and verdict maps, their
 * flushes, and the fixed rules (ct state, vmap dispatch, fib daddr, reject,
 * the masquerade mark, masquerade fully-random). Any line outside them makes the whole script `unsupported`, and the
 * caller applies it with `nft -f` instead: a construct we do not know is never
 * guessed at. The expressions chosen for each shape are the ones nft 1.0.6
 * generates for it (checked with `nft --debug=netlink` and the bytes it
 * sends), so that `nft list` shows the same rules either way.
 *
 * Pure: no I/O.
 */

import { L4_PROTOCOL_NUMBERS } from '../../../../../lib/net/protocols.js';

/** A verdict of a rule or map element. */
export type NlVerdict =
  | { readonly kind: 'jump' | 'goto'; readonly chain: string }
  | { readonly kind: 'drop' | 'return' };

/** One match of a rule; all load into register 1 and compare there. */
export type NlMatch =
  /** `ip saddr|daddr [!=] ADDR[/LEN]`. */
  | { readonly kind: 'ip'; readonly field: 'saddr' | 'daddr'; readonly neq: boolean; readonly addr: Uint8Array; readonly prefix: number }
  /** `ip saddr @SET`. */
  | { readonly kind: 'ip-in-set'; readonly field: 'saddr' | 'daddr'; readonly set: string }
  /** `fib saddr type local`. */
  | { readonly kind: 'fib-saddr-local' }
  /** `numgen random mod N == V`. */
  | { readonly kind: 'numgen'; readonly mod: number; readonly value: number }
  /** `meta l4proto PROTO`. */
  | { readonly kind: 'l4proto'; readonly proto: number }
  /** `ct state new`. */
  | { readonly kind: 'ct-state-new' }
  /** `fib daddr type local`. */
  | { readonly kind: 'fib-daddr-local' }
  /** `mark and MASK == 0`. */
  | { readonly kind: 'mark-and-zero'; readonly mask: number };

/** The key of a verdict-map dispatch: `ip daddr . meta l4proto . th dport` or `meta l4proto . th dport`. */
export type NlVmapKey = 'daddr-proto-port' | 'proto-port';
/** The key types of the render's named sets and maps. */
export type NlSetKey = 'ipv4' | 'ipv4-proto-port' | 'proto-port';

/** The statement that ends a rule. */
export type NlStatement =
  | { readonly kind: 'verdict'; readonly verdict: NlVerdict }
  /** `update @SET { ip saddr }`. */
  | { readonly kind: 'update-saddr'; readonly set: string }
  /** `dnat to IP:PORT` (after a `meta l4proto` match). */
  | { readonly kind: 'dnat'; readonly addr: Uint8Array; readonly port: number }
  /** `reject` (ICMP port unreachable, the ip family's default). */
  | { readonly kind: 'reject' }
  /** `KEY vmap @MAP`. */
  | { readonly kind: 'vmap'; readonly key: NlVmapKey; readonly set: string }
  /** `mark set mark or|xor VALUE`. */
  | { readonly kind: 'mark-set'; readonly op: 'or' | 'xor'; readonly value: number }
  /** `masquerade fully-random`. */
  | { readonly kind: 'masquerade-fully-random' };

export interface NlRule {
  readonly matches: readonly NlMatch[];
  readonly stmt: NlStatement;
  readonly comment: string | null;
}

/** One element key part: an IPv4 address, an IP protocol number, or a port. */
export type NlKeyPart = { readonly kind: 'ipv4'; readonly addr: Uint8Array } | { readonly kind: 'proto'; readonly proto: number } | { readonly kind: 'port'; readonly port: number };

interface CmdBase {
  /** 1-based line of the command in the script. */
  readonly line: number;
  readonly table: string;
}

export type NlCommand =
  | (CmdBase & { readonly op: 'add-table'; readonly comment: string | null })
  | (CmdBase & { readonly op: 'delete-table' })
  | (CmdBase & { readonly op: 'add-chain'; readonly chain: string; readonly comment?: string | null })
  | (CmdBase & { readonly op: 'flush-chain' | 'delete-chain'; readonly chain: string })
  | (CmdBase & {
      readonly op: 'add-base-chain';
      readonly chain: string;
      readonly type: 'filter' | 'nat';
      readonly hook: 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';
      readonly priority: number;
    })
  /** A named set (`add set`, key ipv4) or verdict map (`add map`), with a comment. */
  | (CmdBase & { readonly op: 'add-set'; readonly set: string; readonly key: NlSetKey; readonly map: boolean; readonly comment: string | null })
  | (CmdBase & { readonly op: 'flush-set'; readonly set: string })
  | (CmdBase & { readonly op: 'add-rule'; readonly chain: string; readonly rule: NlRule })
  | (CmdBase & { readonly op: 'add-timeout-set'; readonly set: string; readonly timeoutSec: number })
  | (CmdBase & { readonly op: 'delete-set'; readonly set: string })
  | (CmdBase & {
      readonly op: 'add-element';
      readonly set: string;
      readonly key: readonly NlKeyPart[];
      readonly value: NlVerdict | null;
      readonly comment: string | null;
    })
  | (CmdBase & { readonly op: 'delete-element'; readonly set: string; readonly key: readonly NlKeyPart[] })
  /**
   * Several elements of one set in one message, each with its range's last key in an interval set: what
   * the CNI path's ipMasq sets send (netfilter/nft/nft-sets.ts builds these; no script line parses to one).
   */
  | (CmdBase & { readonly op: 'add-elements' | 'delete-elements'; readonly set: string; readonly elements: readonly NlElement[] });

/** An element of an element list: its key and, in an interval set, the last key of its range (null otherwise). */
export interface NlElement {
  readonly key: readonly NlKeyPart[];
  readonly keyEnd: readonly NlKeyPart[] | null;
}

export type ParseResult =
  | { readonly ok: true; readonly commands: readonly NlCommand[] }
  | { readonly ok: false; readonly line: number; readonly text: string; readonly reason: string };

/** Object names as the render writes them (kube-proxy names: letters, digits, - _ . / :). */
const NAME = String.raw`[A-Za-z_][A-Za-z0-9_./:-]*`;
/** nft refuses comments longer than this (NFTNL_UDATA_COMMENT_MAXLEN 128, with the NUL). */
export const COMMENT_MAX = 127;
const PROTOS = L4_PROTOCOL_NUMBERS;

const RE_CHAIN = new RegExp(`^(add|flush|delete) chain ip (${NAME}) (${NAME})$`);
const RE_RULE = new RegExp(`^add rule ip (${NAME}) (${NAME}) (.+)$`);
const RE_SET = new RegExp(`^add set ip (${NAME}) (${NAME}) \\{ type ipv4_addr ; flags dynamic,timeout ; timeout ([1-9][0-9]{0,7})s ; \\}$`);
const RE_DELSET = new RegExp(`^delete set ip (${NAME}) (${NAME})$`);
const RE_ELEM = new RegExp(`^(add|delete) element ip (${NAME}) (${NAME}) \\{ (.+) \\}$`);
// The full render's declarations (render.ts renderFixed).
const RE_TABLE = new RegExp(`^add table ip (${NAME})(?: \\{ comment "([^"]*)" ; \\})?$`);
const RE_DELETE_TABLE = new RegExp(`^delete table ip (${NAME})$`);
const RE_BASE = new RegExp(`^add chain ip (${NAME}) (${NAME}) \\{ type (filter|nat) hook (prerouting|input|forward|output|postrouting) priority (-?[0-9]{1,4}) ; \\}$`);
const RE_CHAIN_CMT = new RegExp(`^add chain ip (${NAME}) (${NAME}) \\{ comment "([^"]*)" ; \\}$`);
const RE_NAMED_SET = new RegExp(`^add set ip (${NAME}) (${NAME}) \\{ type ipv4_addr ; comment "([^"]*)" ; \\}$`);
const RE_NAMED_MAP = new RegExp(`^add map ip (${NAME}) (${NAME}) \\{ type (ipv4_addr \\. inet_proto \\. inet_service|inet_proto \\. inet_service) : verdict ; comment "([^"]*)" ; \\}$`);
const RE_FLUSH_SET = new RegExp(`^flush (?:set|map) ip (${NAME}) (${NAME})$`);
const RE_MARK = /^0x[0-9a-f]{1,8}$/;
const RE_NAME = new RegExp(`^${NAME}$`);

class Unsupported extends Error {}

/**
 * A dotted quad's bytes, for callers that build commands themselves (the
 * render's per-service rules); throws RangeError on anything but an address.
 */
export function ipv4Bytes(s: string): Uint8Array {
  try {
    return ipv4(s);
  } catch (e) {
    if (e instanceof Unsupported) throw new RangeError(e.message);
    throw e;
  }
}

/**
 * A dotted quad (what isIPv4 accepts: four decimal octets, no leading
 * zeros), scanned by hand: a full sync has ~400,000 addresses.
 */
function ipv4(s: string): Uint8Array {
  const out = new Uint8Array(4);
  let part = 0;
  let n = 0;
  let digits = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46; // '.' ends the last octet
    if (c >= 48 && c <= 57) {
      if (digits > 0 && n === 0) throw new Unsupported(`not an IPv4 address: ${s}`); // a leading zero
      n = n * 10 + (c - 48);
      if (++digits > 3 || n > 255) throw new Unsupported(`not an IPv4 address: ${s}`);
    } else if (c === 46 && digits > 0 && part < 4) {
      out[part++] = n;
      n = 0;
      digits = 0;
    } else throw new Unsupported(`not an IPv4 address: ${s}`);
  }
  if (part !== 4) throw new Unsupported(`not an IPv4 address: ${s}`);
  return out;
}

function port(s: string): number {
  if (!/^[0-9]{1,5}$/.test(s)) throw new Unsupported(`not a port: ${s}`);
  const n = Number(s);
  if (n < 1 || n > 65535) throw new Unsupported(`port out of range: ${s}`);
  return n;
}

function comment(s: string): string {
  if (s.includes('"') || s.includes('\\')) throw new Unsupported('comment with quotes or escapes');
  if (Buffer.byteLength(s) > COMMENT_MAX) throw new Unsupported('comment too long');
  return s;
}

function verdict(toks: readonly string[]): NlVerdict {
  if (toks.length === 1 && (toks[0] === 'drop' || toks[0] === 'return')) return { kind: toks[0] };
  if (toks.length === 2 && (toks[0] === 'jump' || toks[0] === 'goto') && RE_NAME.test(toks[1]!)) return { kind: toks[0], chain: toks[1]! };
  throw new Unsupported(`verdict ${toks.join(' ')}`);
}

/** `ip saddr|daddr ...` operand: ADDR[/LEN]. */
function addrMatch(field: 'saddr' | 'daddr', neq: boolean, s: string): NlMatch {
  const [a, l] = s.split('/');
  const prefix = l === undefined ? 32 : /^[0-9]{1,2}$/.test(l) ? Number(l) : -1;
  // /0 matches everything, and nft writes it differently: not a shape the render uses.
  if (prefix < 1 || prefix > 32) throw new Unsupported(`prefix ${s}`);
  const addr = ipv4(a!);
  // The render writes network addresses only; one with host bits set is left to nft and its own handling.
  const bits = (addr[0]! << 24) | (addr[1]! << 16) | (addr[2]! << 8) | addr[3]!;
  const mask = prefix === 32 ? -1 : ~((1 << (32 - prefix)) - 1);
  if ((bits & mask) !== bits) throw new Unsupported(`address with host bits: ${s}`);
  return { kind: 'ip', field, neq, addr, prefix };
}

/** A rule body: matches, then one statement, then an optional comment. */
export function parseRuleBody(body: string): NlRule {
  let rest = body;
  let cmt: string | null = null;
  const cm = rest.endsWith('"') ? / comment "([^"]*)"$/.exec(rest) : null;
  if (cm) {
    cmt = comment(cm[1]!);
    rest = rest.slice(0, cm.index);
  }
  if (rest.includes('"')) throw new Unsupported('quotes outside a trailing comment');
  const t = rest.split(' ');
  const matches: NlMatch[] = [];
  let i = 0;
  let l4 = false;
  let l4icmp = false;
  for (;;) {
    const w = t[i];
    if (w === 'ip' && t[i + 1] === 'daddr' && t[i + 2] === '.') break; // a vmap key
    if (w === 'ip' && (t[i + 1] === 'saddr' || t[i + 1] === 'daddr')) {
      const field = t[i + 1] as 'saddr' | 'daddr';
      // `ip saddr` inside `update @x { ip saddr }` is not a match; that form starts with `update`.
      if (t[i + 2] === '!=') {
        matches.push(addrMatch(field, true, t[i + 3] ?? ''));
        i += 4;
      } else if (t[i + 2]?.startsWith('@')) {
        const set = t[i + 2]!.slice(1);
        if (!RE_NAME.test(set)) throw new Unsupported(`set ${set}`);
        matches.push({ kind: 'ip-in-set', field, set });
        i += 3;
      } else {
        matches.push(addrMatch(field, false, t[i + 2] ?? ''));
        i += 3;
      }
    } else if (w === 'fib' && t[i + 1] === 'saddr' && t[i + 2] === 'type' && t[i + 3] === 'local') {
      matches.push({ kind: 'fib-saddr-local' });
      i += 4;
    } else if (w === 'fib' && t[i + 1] === 'daddr' && t[i + 2] === 'type' && t[i + 3] === 'local') {
      matches.push({ kind: 'fib-daddr-local' });
      i += 4;
    } else if (w === 'ct' && t[i + 1] === 'state' && t[i + 2] === 'new') {
      matches.push({ kind: 'ct-state-new' });
      i += 3;
    } else if (w === 'mark' && t[i + 1] === 'and' && RE_MARK.test(t[i + 2] ?? '') && t[i + 3] === '==' && t[i + 4] === '0') {
      matches.push({ kind: 'mark-and-zero', mask: Number(t[i + 2]) });
      i += 5;
    } else if (w === 'meta' && t[i + 1] === 'l4proto' && t[i + 2] === 'icmp' && t[i + 3] !== '.') {
      matches.push({ kind: 'l4proto', proto: 1 });
      l4icmp = true;
      i += 3;
    } else if (w === 'numgen' && t[i + 1] === 'random' && t[i + 2] === 'mod' && t[i + 4] === '==') {
      const mod = Number(t[i + 3]);
      const value = Number(t[i + 5]);
      if (!/^[0-9]{1,9}$/.test(t[i + 3] ?? '') || !/^[0-9]{1,9}$/.test(t[i + 5] ?? '') || mod < 1 || value >= mod) throw new Unsupported('numgen operands');
      matches.push({ kind: 'numgen', mod, value });
      i += 6;
    } else if (w === 'meta' && t[i + 1] === 'l4proto' && PROTOS[t[i + 2] ?? ''] !== undefined) {
      matches.push({ kind: 'l4proto', proto: PROTOS[t[i + 2]!]! });
      l4 = true;
      i += 3;
    } else break;
  }
  const s = t.slice(i);
  let stmt: NlStatement;
  if (s[0] === 'update') {
    if (s.length !== 6 || !s[1]!.startsWith('@') || s[2] !== '{' || s[3] !== 'ip' || s[4] !== 'saddr' || s[5] !== '}') throw new Unsupported(`statement ${s.join(' ')}`);
    const set = s[1]!.slice(1);
    if (!RE_NAME.test(set)) throw new Unsupported(`set ${set}`);
    stmt = { kind: 'update-saddr', set };
  } else if (s[0] === 'dnat') {
    // Without a protocol match nft would add its own dependency; the render always writes one.
    const m = s.length === 3 && s[1] === 'to' ? /^([0-9.]+):([0-9]+)$/.exec(s[2]!) : null;
    if (!m || !l4) throw new Unsupported(`statement ${s.join(' ')}`);
    stmt = { kind: 'dnat', addr: ipv4(m[1]!), port: port(m[2]!) };
  } else if (s.length === 1 && s[0] === 'reject') {
    stmt = { kind: 'reject' };
  } else if (s.length === 2 && s[0] === 'masquerade' && s[1] === 'fully-random') {
    stmt = { kind: 'masquerade-fully-random' };
  } else if (s.length === 5 && s[0] === 'mark' && s[1] === 'set' && s[2] === 'mark' && (s[3] === 'or' || s[3] === 'xor') && RE_MARK.test(s[4]!)) {
    stmt = { kind: 'mark-set', op: s[3], value: Number(s[4]) };
  } else if (s.at(-2) === 'vmap' && s.at(-1)!.startsWith('@')) {
    const keyText = s.slice(0, -2).join(' ');
    const set = s.at(-1)!.slice(1);
    if (!RE_NAME.test(set)) throw new Unsupported(`set ${set}`);
    const key: NlVmapKey | null = keyText === 'ip daddr . meta l4proto . th dport' ? 'daddr-proto-port' : keyText === 'meta l4proto . th dport' ? 'proto-port' : null;
    if (key === null) throw new Unsupported(`vmap key ${keyText}`);
    stmt = { kind: 'vmap', key, set };
  } else {
    stmt = { kind: 'verdict', verdict: verdict(s) };
  }
  if (l4 && stmt.kind !== 'dnat') throw new Unsupported('meta l4proto without dnat');
  if (l4icmp && stmt.kind !== 'reject' && !(stmt.kind === 'verdict' && stmt.verdict.kind === 'drop')) throw new Unsupported('meta l4proto icmp without reject or drop');
  // Statements that touch the mark or the address stand alone in the render; anything else is left to nft.
  if ((stmt.kind === 'mark-set' || stmt.kind === 'masquerade-fully-random') && matches.length) throw new Unsupported(`${stmt.kind} after matches`);
  return { matches, stmt, comment: cmt };
}

/** An element key: `IP`, `PROTO . PORT` or `IP . PROTO . PORT` (the render's three key types). */
function elementKey(s: string): NlKeyPart[] {
  const p = s.split(' . ');
  const proto = (x: string): NlKeyPart => {
    const n = PROTOS[x];
    if (n === undefined) throw new Unsupported(`protocol ${x}`);
    return { kind: 'proto', proto: n };
  };
  if (p.length === 1) return [{ kind: 'ipv4', addr: ipv4(p[0]!) }];
  if (p.length === 2) return [proto(p[0]!), { kind: 'port', port: port(p[1]!) }];
  if (p.length === 3) return [{ kind: 'ipv4', addr: ipv4(p[0]!) }, proto(p[1]!), { kind: 'port', port: port(p[2]!) }];
  throw new Unsupported(`element key ${s}`);
}

const HOOKS = ['prerouting', 'input', 'forward', 'output', 'postrouting'] as const;

function parseLine(line: number, text: string): NlCommand | null {
  if (text === '' || text.startsWith('#')) return null;
  let m = RE_CHAIN.exec(text);
  if (m) return { line, table: m[2]!, op: `${m[1] as 'add' | 'flush' | 'delete'}-chain`, chain: m[3]! };
  if (text.startsWith('delete table ')) {
    m = RE_DELETE_TABLE.exec(text);
    if (!m) throw new Unsupported('command: table');
    return { line, table: m[1]!, op: 'delete-table' };
  }
  if (text.startsWith('add table ')) {
    m = RE_TABLE.exec(text);
    if (!m) throw new Unsupported('command: table');
    return { line, table: m[1]!, op: 'add-table', comment: m[2] !== undefined ? comment(m[2]) : null };
  }
  if (text.startsWith('add chain ')) {
    m = RE_BASE.exec(text);
    if (m) {
      const hook = m[4] as (typeof HOOKS)[number];
      return { line, table: m[1]!, op: 'add-base-chain', chain: m[2]!, type: m[3] as 'filter' | 'nat', hook, priority: Number(m[5]) };
    }
    m = RE_CHAIN_CMT.exec(text);
    if (m) return { line, table: m[1]!, op: 'add-chain', chain: m[2]!, comment: comment(m[3]!) };
    throw new Unsupported('command: chain');
  }
  m = RE_NAMED_SET.exec(text);
  if (m) return { line, table: m[1]!, op: 'add-set', set: m[2]!, key: 'ipv4', map: false, comment: comment(m[3]!) };
  m = RE_NAMED_MAP.exec(text);
  if (m) {
    const key: NlSetKey = m[3]!.startsWith('ipv4_addr') ? 'ipv4-proto-port' : 'proto-port';
    return { line, table: m[1]!, op: 'add-set', set: m[2]!, key, map: true, comment: comment(m[4]!) };
  }
  m = RE_FLUSH_SET.exec(text);
  if (m) return { line, table: m[1]!, op: 'flush-set', set: m[2]! };
  m = RE_RULE.exec(text);
  if (m) return { line, table: m[1]!, op: 'add-rule', chain: m[2]!, rule: parseRuleBody(m[3]!) };
  m = RE_SET.exec(text);
  if (m) return { line, table: m[1]!, op: 'add-timeout-set', set: m[2]!, timeoutSec: Number(m[3]) };
  m = RE_DELSET.exec(text);
  if (m) return { line, table: m[1]!, op: 'delete-set', set: m[2]! };
  m = RE_ELEM.exec(text);
  if (m) {
    const body = m[4]!;
    if (m[1] === 'delete') return { line, table: m[2]!, op: 'delete-element', set: m[3]!, key: elementKey(body) };
    // KEY [comment "C"] [: VERDICT]
    const em = /^([^":]+?)(?: comment "([^"]*)")?(?: : (.+))?$/.exec(body);
    if (!em) throw new Unsupported('element');
    return {
      line,
      table: m[2]!,
      op: 'add-element',
      set: m[3]!,
      key: elementKey(em[1]!),
      comment: em[2] !== undefined ? comment(em[2]) : null,
      value: em[3] !== undefined ? verdict(em[3].split(' ')) : null,
    };
  }
  throw new Unsupported('command');
}

/** One line: its command (null for a blank or comment line), or why it is outside the shapes this module knows. */
export function parseOneLine(line: number, text: string): { readonly ok: true; readonly cmd: NlCommand | null } | { readonly ok: false; readonly reason: string } {
  try {
    return { ok: true, cmd: parseLine(line, text) };
  } catch (e) {
    if (e instanceof Unsupported) return { ok: false, reason: e.message };
    throw e;
  }
}

/**
 * Parses a script into commands, or says which line is outside the shapes
 * this module knows (the caller then applies the script with `nft -f`).
 */
export function parseNftScript(script: string): ParseResult {
  const lines = script.split('\n');
  const commands: NlCommand[] = [];
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    try {
      const c = parseLine(i + 1, text);
      if (c) commands.push(c);
    } catch (e) {
      if (e instanceof Unsupported) return { ok: false, line: i + 1, text, reason: e.message };
      throw e;
    }
  }
  return { ok: true, commands };
}

/** The same parser (it knows the full render's lines too); the name the partial path has always used. */
export const parsePartialScript = parseNftScript;
