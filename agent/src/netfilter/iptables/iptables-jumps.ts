/**
 * netfilter/iptables-jumps: which of our jump rules (built-in chain → our
 * chain) a table already holds, read from one `iptables-save -t TABLE`
 * instead of one `iptables -C` per jump.
 *
 * Why: with iptables-legacy every `-C` fetches and parses the whole table
 * from the kernel; at 30,000 Services the 14 checks of a full sync cost
 * ~6 s (PREROUTING 2.0 s, POSTROUTING 2.9 s, serialized on the xtables
 * lock). kube-proxy's EnsureRule does the same per-rule -C. One save per
 * table, which the full sync reads anyway for its chain list, and a
 * comparison here give the same answer. Rules are compared by meaning
 * (ruleSignature), as -C does: iptables-save prints `-d 1.2.3.4/32 -p tcp
 * -m tcp` for our `-m tcp -p tcp -d 1.2.3.4`.
 *
 * Only lines `-A <built-in chain> ... -j|-g <one of our targets>` are parsed:
 * other software's rules in PREROUTING may use matches this parser does not
 * know, and they are never ours. Pure.
 */
import { BUILTIN_CHAINS, jumpArgs, quoteArg, type IptablesTable, type JumpRule } from './iptables-types.js';
import { parseRuleArgs, ruleSignature, tokenize } from './iptables-parse.js';

/** What a full sync needs from one iptables-save of a table. */
export interface SaveScan {
  readonly table: IptablesTable;
  /** Every chain declared in the table (`:NAME` lines), built-in ones included. */
  readonly chains: Set<string>;
  /** The `-A` lines of the built-in chains, by chain (other chains' rules are skipped, never kept). */
  readonly builtinRules: ReadonlyMap<string, readonly string[]>;
}

/**
 * Scans iptables-save output for one table in one pass, keeping only chain
 * names and built-in chains' rules: the per-service rules (most of the text)
 * are skipped without being split into strings.
 */
export function scanSave(text: string, table: IptablesTable): SaveScan {
  const chains = new Set<string>();
  const builtin = new Map<string, string[]>();
  for (const c of BUILTIN_CHAINS[table]) builtin.set(c, []);
  let inTable = false;
  let pos = 0;
  const n = text.length;
  while (pos < n) {
    let end = text.indexOf('\n', pos);
    if (end < 0) end = n;
    const ch = text.charCodeAt(pos);
    if (ch === 42 /* * */) inTable = text.slice(pos + 1, end).trim() === table;
    else if (inTable && ch === 58 /* : */) {
      const sp = text.indexOf(' ', pos);
      const name = text.slice(pos + 1, sp < 0 || sp > end ? end : sp).trim();
      if (name) chains.add(name);
    } else if (inTable && ch === 45 /* - */ && text.startsWith('-A ', pos)) {
      // Only built-in chains' names are upper-case words without '-': check the chain before slicing the line.
      const sp = text.indexOf(' ', pos + 3);
      const chain = text.slice(pos + 3, sp < 0 || sp > end ? end : sp);
      const list = builtin.get(chain);
      if (list) list.push(text.slice(pos, end));
    } else if (text.startsWith('COMMIT', pos) && end - pos <= 7) inTable = false;
    pos = end + 1;
  }
  return { table, chains, builtinRules: builtin };
}

function jumpSignature(j: JumpRule): string {
  return ruleSignature(parseRuleArgs(j.builtinChain, jumpArgs(j)));
}

/** The signatures of the rules of `chain` that jump to one of `targets`; unparseable lines are someone else's and skipped. */
function presentSignatures(scan: SaveScan, chain: string, targets: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const line of scan.builtinRules.get(chain) ?? []) {
    const m = /\s-[jg]\s+(\S+)\s*$/.exec(line);
    if (!m || !targets.has(m[1]!)) continue;
    try {
      const toks = tokenize(line);
      out.add(ruleSignature(parseRuleArgs(chain, toks.slice(2))));
    } catch {
      // A rule with a match we do not know cannot be one we wrote.
    }
  }
  return out;
}

/** Drops repeated jumps (same table, chain and arguments), keeping the first. */
export function dedupeJumps(jumps: readonly JumpRule[]): JumpRule[] {
  const seen = new Set<string>();
  return jumps.filter((j) => {
    const k = `${j.table} ${j.builtinChain} ${jumpArgs(j).join(' ')}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * Splits `jumps` (deduplicated, in their order) into those the scanned
 * tables hold and those they lack. A jump whose table was not scanned
 * counts as missing.
 */
export function classifyJumps(scans: readonly SaveScan[], jumps: readonly JumpRule[]): { present: JumpRule[]; missing: JumpRule[] } {
  const present: JumpRule[] = [];
  const missing: JumpRule[] = [];
  const cache = new Map<string, Set<string>>();
  const targetsOf = (t: IptablesTable): Set<string> => new Set(jumps.filter((j) => j.table === t).map((j) => j.target));
  for (const j of dedupeJumps(jumps)) {
    const scan = scans.find((s) => s.table === j.table);
    if (!scan) {
      missing.push(j);
      continue;
    }
    const key = `${j.table}/${j.builtinChain}`;
    let sigs = cache.get(key);
    if (!sigs) {
      sigs = presentSignatures(scan, j.builtinChain, targetsOf(j.table));
      cache.set(key, sigs);
    }
    (sigs.has(jumpSignature(j)) ? present : missing).push(j);
  }
  return { present, missing };
}

/** The restore line that inserts a jump where its position says (prepend: as rule 1). */
export function jumpInsertLine(j: JumpRule): string {
  return `${j.position === 'prepend' ? `-I ${j.builtinChain} 1` : `-A ${j.builtinChain}`} ${jumpArgs(j).map(quoteArg).join(' ')}`;
}

/** The restore line that deletes a jump (by its rule). */
export function jumpDeleteLine(j: JumpRule): string {
  return `-D ${j.builtinChain} ${jumpArgs(j).map(quoteArg).join(' ')}`;
}

/** Restore input applying `line(j)` for every jump, one `*table ... COMMIT` block per table, in first-seen table order. */
export function jumpRestore(jumps: readonly JumpRule[], line: (j: JumpRule) => string): string {
  const tables = [...new Set(jumps.map((j) => j.table))];
  return tables.map((t) => [`*${t}`, ...jumps.filter((j) => j.table === t).map(line), 'COMMIT', ''].join('\n')).join('');
}
