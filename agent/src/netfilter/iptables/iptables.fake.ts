/**
 * netfilter/iptables.fake: a validating in-memory Iptables.
 *
 * It keeps tables → chains → rules and applies restore input with --noflush
 * semantics, one `*table ... COMMIT` block at a time (a failing block leaves
 * earlier blocks applied, as measured on both backends). It rejects what
 * iptables-restore and the kernel reject, with the line they would blame:
 *   - anything the parser refuses (unknown option/module, bad value, malformed
 *     line, missing COMMIT, chain name over 28 chars);
 *   - -A/-I/-D on a chain that does not exist; -N of an existing chain;
 *   - -X of a built-in, missing, non-empty or still-referenced chain;
 *   - a jump to a chain that does not exist when the block commits;
 *   - targets in the wrong table (DNAT/SNAT/MASQUERADE outside nat, DROP or
 *     REJECT in nat) or reachable from the wrong hook (DNAT from POSTROUTING,
 *     MASQUERADE from PREROUTING/OUTPUT), and jump loops.
 * ensureJumps/deleteJumps compare rules by meaning (ruleSignature), as -C does.
 */
import {
  BUILTIN_CHAINS,
  IptablesRestoreError,
  IPTABLES_TABLES,
  jumpArgs,
  type Iptables,
  type IptablesBackendKind,
  type IptablesTable,
  type JumpRule,
  type RestoreOptions,
} from './iptables-types.js';
import {
  IptablesParseError,
  formatDump,
  parseRestore,
  parseRuleArgs,
  ruleSignature,
  type IptChain,
  type IptDump,
  type IptRule,
  type IptTableDump,
  type RestoreBlock,
} from './iptables-parse.js';

interface FakeChain {
  name: string;
  builtin: boolean;
  policy: string | null;
  rules: IptRule[];
}
type FakeTable = Map<string, FakeChain>;

const NAT_ONLY = new Set(['DNAT', 'SNAT', 'MASQUERADE']);
/** Hooks each NAT target may be reached from (netfilter's target hook masks). */
const TARGET_HOOKS: Record<string, readonly string[]> = {
  DNAT: ['PREROUTING', 'OUTPUT'],
  SNAT: ['POSTROUTING', 'INPUT'],
  MASQUERADE: ['POSTROUTING'],
  REJECT: ['INPUT', 'FORWARD', 'OUTPUT'],
};

function emptyTable(t: IptablesTable): FakeTable {
  const m: FakeTable = new Map();
  for (const c of BUILTIN_CHAINS[t]) m.set(c, { name: c, builtin: true, policy: 'ACCEPT', rules: [] });
  return m;
}

function cloneTable(t: FakeTable): FakeTable {
  const m: FakeTable = new Map();
  for (const [k, c] of t) m.set(k, { ...c, rules: [...c.rules] });
  return m;
}

class BlockError extends Error {
  constructor(readonly line: number, msg: string) {
    super(msg);
  }
}

export class FakeIptables implements Iptables {
  readonly backend: IptablesBackendKind;
  /** Every restore input that was accepted, in order. */
  readonly restores: string[] = [];
  /** Counts of calls, to assert batching. */
  readonly calls = { restore: 0, save: 0, ensureJumps: 0, deleteJumps: 0, listChains: 0, chainExists: 0 };
  private tables = new Map<IptablesTable, FakeTable>();
  private failures: string[] = [];

  constructor(opts: { backend?: IptablesBackendKind } = {}) {
    this.backend = opts.backend ?? 'nft';
    for (const t of IPTABLES_TABLES) this.tables.set(t, emptyTable(t));
  }

  /** The next restore fails with this message (before touching anything), to exercise retry paths. */
  failNextRestore(msg: string): void {
    this.failures.push(msg);
  }

  /** What an admin's `iptables -F && iptables -X` on every table (or `nft flush ruleset`) leaves: empty built-in chains. */
  flushEverything(): void {
    for (const t of IPTABLES_TABLES) this.tables.set(t, emptyTable(t));
  }

  /** What `printf '*nat\nCOMMIT\n' | iptables-restore` (without --noflush) leaves of one table: empty built-in chains. */
  replaceTable(t: IptablesTable): void {
    this.tables.set(t, emptyTable(t));
  }

  /** A deep snapshot of the current state, for the tracer and assertions. */
  dump(): IptDump {
    const tables = new Map<IptablesTable, IptTableDump>();
    for (const [name, t] of this.tables) {
      const chains = new Map<string, IptChain>();
      for (const [k, c] of t) chains.set(k, { name: c.name, builtin: c.builtin, policy: c.policy, rules: [...c.rules] });
      tables.set(name, { name, chains });
    }
    return { tables };
  }

  async restore(text: string, opts: RestoreOptions): Promise<void> {
    this.calls.restore++;
    if (opts.noflush !== true) throw new IptablesRestoreError('fake: only --noflush restores are supported', null);
    const injected = this.failures.shift();
    if (injected !== undefined) throw new IptablesRestoreError(injected, null);
    let blocks: RestoreBlock[];
    try {
      blocks = parseRestore(text);
    } catch (e) {
      if (e instanceof IptablesParseError) throw new IptablesRestoreError(`iptables-restore: ${e.message}`, e.line, { cause: e });
      throw e;
    }
    for (const b of blocks) {
      const next = cloneTable(this.table(b.table));
      try {
        this.applyBlock(b, next);
      } catch (e) {
        if (e instanceof BlockError) throw new IptablesRestoreError(`iptables-restore: line ${e.line} failed: ${e.message}`, e.line);
        throw e;
      }
      this.tables.set(b.table, next);
    }
    this.restores.push(text);
  }

  async save(table: IptablesTable): Promise<string> {
    this.calls.save++;
    return formatDump(this.dump(), table);
  }

  async ensureJump(table: IptablesTable, builtinChain: string, ourChain: string, comment: string, position: 'prepend' | 'append', extraArgs?: readonly string[]): Promise<boolean> {
    const j: JumpRule = extraArgs ? { table, builtinChain, target: ourChain, comment, position, extraArgs } : { table, builtinChain, target: ourChain, comment, position };
    return (await this.ensureJumps([j])) === 1;
  }

  async ensureJumps(jumps: readonly JumpRule[]): Promise<number> {
    this.calls.ensureJumps++;
    // Like the real one: check everything, then apply all inserts per table or none.
    const byTable = new Map<IptablesTable, { j: JumpRule; rule: IptRule }[]>();
    for (const j of jumps) {
      const t = this.table(j.table);
      const chain = t.get(j.builtinChain);
      if (!chain?.builtin) throw new IptablesRestoreError(`fake: ${j.table}/${j.builtinChain} is not a built-in chain`, null);
      const rule = parseRuleArgs(j.builtinChain, jumpArgs(j));
      if (!t.has(j.target)) throw new IptablesRestoreError(`iptables: Couldn't load target \`${j.target}':No such file or directory`, null);
      const sig = ruleSignature(rule);
      const pending = byTable.get(j.table) ?? [];
      if (chain.rules.some((r) => ruleSignature(r) === sig) || pending.some((p) => ruleSignature(p.rule) === sig)) continue;
      pending.push({ j, rule });
      byTable.set(j.table, pending);
    }
    let n = 0;
    for (const [tn, list] of byTable) {
      const t = this.table(tn);
      for (const { j, rule } of list) {
        const chain = t.get(j.builtinChain)!;
        if (j.position === 'prepend') chain.rules.unshift(rule);
        else chain.rules.push(rule);
        n++;
      }
    }
    return n;
  }

  async deleteJumps(jumps: readonly JumpRule[]): Promise<number> {
    this.calls.deleteJumps++;
    let n = 0;
    for (const j of jumps) {
      const chain = this.table(j.table).get(j.builtinChain);
      if (!chain) continue;
      const sig = ruleSignature(parseRuleArgs(j.builtinChain, jumpArgs(j)));
      const i = chain.rules.findIndex((r) => ruleSignature(r) === sig);
      if (i >= 0) {
        chain.rules.splice(i, 1);
        n++;
      }
    }
    return n;
  }

  async listChains(table: IptablesTable): Promise<Set<string>> {
    this.calls.listChains++;
    return new Set(this.table(table).keys());
  }

  async chainExists(table: IptablesTable, chain: string): Promise<boolean> {
    this.calls.chainExists++;
    return this.table(table).has(chain);
  }

  private table(t: IptablesTable): FakeTable {
    return this.tables.get(t)!;
  }

  private applyBlock(b: RestoreBlock, t: FakeTable): void {
    const added = new Set<IptRule>();
    const need = (name: string, line: number): FakeChain => {
      const c = t.get(name);
      if (!c) throw new BlockError(line, `No chain/target/match by that name (chain ${name})`);
      return c;
    };
    const checkTable = (r: IptRule, line: number): void => {
      const k = r.target?.kind;
      if (k === undefined || k === 'chain') return;
      if (NAT_ONLY.has(k) && b.table !== 'nat') throw new BlockError(line, `${k} is only valid in the nat table`);
      if (b.table === 'nat' && (k === 'DROP' || k === 'REJECT')) throw new BlockError(line, `the "nat" table is not intended for filtering, the use of ${k} is therefore inhibited`);
    };
    for (const op of b.ops) {
      switch (op.op) {
        case 'declare': {
          const c = t.get(op.chain);
          if (c?.builtin) c.policy = op.policy ?? c.policy;
          else if (c) c.rules = [];
          else if (BUILTIN_CHAINS[b.table].includes(op.chain)) throw new BlockError(op.line, `bad built-in chain ${op.chain}`);
          else t.set(op.chain, { name: op.chain, builtin: false, policy: null, rules: [] });
          break;
        }
        case 'append':
          checkTable(op.rule, op.line);
          need(op.rule.chain, op.line).rules.push(op.rule);
          added.add(op.rule);
          break;
        case 'insert': {
          checkTable(op.rule, op.line);
          const c = need(op.rule.chain, op.line);
          if (op.position > c.rules.length + 1) throw new BlockError(op.line, 'Index of insertion too big');
          c.rules.splice(op.position - 1, 0, op.rule);
          added.add(op.rule);
          break;
        }
        case 'delete': {
          const c = need(op.chain, op.line);
          let i = -1;
          if (op.index !== null) i = op.index <= c.rules.length ? op.index - 1 : -1;
          else if (op.rule) {
            const sig = ruleSignature(op.rule);
            i = c.rules.findIndex((r) => ruleSignature(r) === sig);
          }
          if (i < 0) throw new BlockError(op.line, 'Bad rule (does a matching rule exist in that chain?)');
          c.rules.splice(i, 1);
          break;
        }
        case 'new':
          if (t.has(op.chain)) throw new BlockError(op.line, 'Chain already exists');
          t.set(op.chain, { name: op.chain, builtin: false, policy: null, rules: [] });
          break;
        case 'delete-chain': {
          if (op.chain === null) throw new BlockError(op.line, 'fake: -X without a chain name is not supported');
          const c = need(op.chain, op.line);
          if (c.builtin) throw new BlockError(op.line, `Cannot delete built-in chain ${op.chain}`);
          if (c.rules.length) throw new BlockError(op.line, `Directory not empty: chain ${op.chain} still has ${c.rules.length} rule(s); declare it first to flush it`);
          for (const other of t.values()) {
            const ref = other.rules.find((r) => r.target?.kind === 'chain' && r.target.chain === op.chain);
            if (ref) throw new BlockError(op.line, `Device or resource busy: chain ${op.chain} is referenced by a rule in ${other.name}`);
          }
          t.delete(op.chain);
          break;
        }
        case 'flush':
          if (op.chain === null) for (const c of t.values()) c.rules = [];
          else need(op.chain, op.line).rules = [];
          break;
        case 'list':
          need(op.chain, op.line);
          break;
        case 'policy': {
          const c = need(op.chain, op.line);
          if (!c.builtin) throw new BlockError(op.line, `Bad built-in chain name ${op.chain}`);
          c.policy = op.policy;
          break;
        }
      }
    }
    this.validateCommit(b, t, added);
  }

  /** What the kernel checks when the table is replaced: jump targets exist, no loops, targets on valid hooks. */
  private validateCommit(b: RestoreBlock, t: FakeTable, added: ReadonlySet<IptRule>): void {
    const lineOf = (r: IptRule): number => (added.has(r) ? r.line : b.commitLine);
    for (const c of t.values()) {
      for (const r of c.rules) {
        if (r.target?.kind === 'chain') {
          const target = t.get(r.target.chain);
          if (!target) throw new BlockError(lineOf(r), `Couldn't load target \`${r.target.chain}': No such file or directory`);
          if (target.builtin) throw new BlockError(lineOf(r), `cannot jump to built-in chain ${r.target.chain}`);
        }
      }
    }
    // Walk from every built-in chain: loops and hook masks.
    for (const hook of BUILTIN_CHAINS[b.table]) {
      const stack: string[] = [];
      const done = new Set<string>();
      const walk = (name: string): void => {
        if (done.has(name)) return;
        if (stack.includes(name)) throw new BlockError(b.commitLine, `Too many levels of symbolic links: loop ${[...stack, name].join(' -> ')}`);
        stack.push(name);
        for (const r of t.get(name)!.rules) {
          const k = r.target?.kind;
          if (k === 'chain') walk((r.target as { chain: string }).chain);
          else if (k !== undefined && TARGET_HOOKS[k] && !TARGET_HOOKS[k].includes(hook)) {
            throw new BlockError(lineOf(r), `Invalid argument: ${k} in chain ${name} is reachable from ${hook}`);
          }
        }
        stack.pop();
        done.add(name);
      };
      walk(hook);
    }
  }
}
