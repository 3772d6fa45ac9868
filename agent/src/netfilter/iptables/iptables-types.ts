/**
 * netfilter/iptables-types: the iptables executor's interface and the
 * shapes shared by the real executor (iptables.ts), its validating fake
 * (iptables.fake.ts), the parser and the proxy's iptables mode. Types only,
 * plus two tiny pure helpers, so pure modules may import it.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';

export type IptablesTable = 'filter' | 'nat' | 'mangle' | 'raw';
export const IPTABLES_TABLES: readonly IptablesTable[] = ['filter', 'nat', 'mangle', 'raw'];

/** The built-in chains of each table, in iptables-save order. */
export const BUILTIN_CHAINS: Readonly<Record<IptablesTable, readonly string[]>> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
};

export function isIptablesTable(s: string): s is IptablesTable {
  return (IPTABLES_TABLES as readonly string[]).includes(s);
}

/** Which kernel backend an `iptables` binary drives. */
export type IptablesBackendKind = 'nft' | 'legacy';

/**
 * A jump from a built-in chain to one of ours, e.g.
 * `-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`.
 * These live outside the chains we declare, so restore input cannot own them;
 * they are checked and inserted separately (kube-proxy's iptablesJumpChains).
 */
export interface JumpRule {
  readonly table: IptablesTable;
  readonly builtinChain: string;
  readonly target: string;
  /** Empty: no comment match. */
  readonly comment: string;
  /** Matches placed before the comment, e.g. ['-m', 'conntrack', '--ctstate', 'NEW']. */
  readonly extraArgs?: readonly string[];
  /** prepend: inserted as rule 1 (kube-proxy's default); append: added at the end. */
  readonly position: 'prepend' | 'append';
}

/** The rule arguments (after `-A CHAIN`) of a jump, as argv. */
export function jumpArgs(j: JumpRule): string[] {
  return [...(j.extraArgs ?? []), ...(j.comment ? ['-m', 'comment', '--comment', j.comment] : []), '-j', j.target];
}

export interface RestoreOptions {
  /** Always true: nodenet never flushes whole tables (other software's chains live there too). */
  readonly noflush: true;
  /** Pass --counters (use the [packets:bytes] given in the input). */
  readonly counters?: boolean;
}

/**
 * The iptables executor. One instance drives one backend (nft or legacy) in
 * one network namespace. Every method is safe to call concurrently with
 * other iptables users: the real one passes -w (wait for the xtables lock).
 */
export interface Iptables {
  readonly backend: IptablesBackendKind;
  /**
   * Applies iptables-restore input with --noflush: declared chains (`:C - [0:0]`)
   * are created or flushed, others are left alone. Each `*table ... COMMIT`
   * block commits on its own (measured: a failing nat block after a good filter
   * block leaves the filter block applied). Throws IptablesRestoreError, with the
   * failing line when the tool reports it.
   */
  restore(text: string, opts: RestoreOptions): Promise<void>;
  /** iptables-save -t table. An unused table gives ''. */
  save(table: IptablesTable): Promise<string>;
  /**
   * Ensures `builtinChain` jumps to `ourChain` (the rule with this comment).
   * Idempotent: checks first (-C), inserts only when missing. Precondition: ourChain exists.
   * Returns true when it inserted the rule.
   */
  ensureJump(table: IptablesTable, builtinChain: string, ourChain: string, comment: string, position: 'prepend' | 'append', extraArgs?: readonly string[]): Promise<boolean>;
  /** ensureJump for many rules: all checks, then one restore for every missing rule. Returns how many it inserted. */
  ensureJumps(jumps: readonly JumpRule[]): Promise<number>;
  /** Removes these jump rules where present. Idempotent. Returns how many it removed. */
  deleteJumps(jumps: readonly JumpRule[]): Promise<number>;
  /** Every chain of the table, built-in ones included. */
  listChains(table: IptablesTable): Promise<Set<string>>;
  chainExists(table: IptablesTable, chain: string): Promise<boolean>;
}

/** A failed restore. `line` is the 1-based input line the tool blamed, when it said. */
export class IptablesRestoreError extends NodenetError {
  override name = 'IptablesRestoreError';
  constructor(msg: string, readonly line: number | null, opts?: { cause?: unknown; details?: string }) {
    super(ErrorCode.RuleApply, msg, opts);
  }
}

/** Quotes one argument for restore input the way iptables-save does (double quotes, \" and \\ escaped). */
export function quoteArg(s: string): string {
  if (s !== '' && !/[\s"'\\]/.test(s)) return s;
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
