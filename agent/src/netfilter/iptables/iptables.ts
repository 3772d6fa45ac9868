/**
 * netfilter/iptables: the iptables executor over a Runner.
 *
 * Backend: the user's `iptables` decides. `iptables -V` says "(nf_tables)" or
 * "(legacy)", and nodenet then runs the matching tools by their explicit
 * names (iptables-nft-restore or iptables-legacy-restore, ...), so a later
 * change of the alternatives cannot split our rules across two backends.
 * Both backends can be active in one namespace at once (measured), and
 * packets then traverse both: createIptables() refuses to start when chains
 * with our prefix already exist in the other backend.
 *
 * Cost model (MEASURED.md): a spawn costs 20-50 ms, so the ruleset goes in
 * one `iptables-restore --noflush -w` on stdin; jumps are checked against one
 * iptables-save per table (never one `-C` per jump: with iptables-legacy each
 * reads the whole table) and every missing jump is inserted in one more
 * restore. With iptables-legacy every commit rewrites the whole table in the
 * kernel, and every command that reads a table copies all of it out.
 *
 * On a restore failure the tool names the failing line ("line N failed",
 * "Error occurred at line: N"); the error and the log carry the lines around it.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Runner, RunResult } from '../../exec/runner.js';
import { F } from '../../../../lib/log/fields.js';
import type { Logger } from '../../../../lib/log/log.js';
import { classifyJumps, jumpDeleteLine, jumpInsertLine, jumpRestore, scanSave, type SaveScan } from './iptables-jumps.js';
import { chainNamesFromSave, linesAround } from './iptables-parse.js';
import {
  IptablesRestoreError,
  type Iptables,
  type IptablesBackendKind,
  type IptablesTable,
  type JumpRule,
  type RestoreOptions,
} from './iptables-types.js';

export interface IptablesCommands {
  readonly iptables: string;
  readonly save: string;
  readonly restore: string;
}

export const BACKEND_COMMANDS: Readonly<Record<IptablesBackendKind, IptablesCommands>> = {
  nft: { iptables: 'iptables-nft', save: 'iptables-nft-save', restore: 'iptables-nft-restore' },
  legacy: { iptables: 'iptables-legacy', save: 'iptables-legacy-save', restore: 'iptables-legacy-restore' },
};

export interface IptablesDeps {
  readonly runner: Runner;
  readonly log: Logger;
  /** Run every command inside this network namespace (a path). */
  readonly netns?: string;
}

/** "iptables v1.8.9 (nf_tables)" → nft; "(legacy)" or no suffix (iptables < 1.8) → legacy. */
export function parseIptablesVersion(stdout: string): IptablesBackendKind {
  if (!/^iptables v\d/m.test(stdout)) {
    throw new NodenetError(ErrorCode.Exec, `unexpected \`iptables -V\` output: ${JSON.stringify(stdout.trim().slice(0, 200))}`);
  }
  return /\(nf_tables\)/.test(stdout) ? 'nft' : 'legacy';
}

/** The 1-based input line an iptables-restore error names, if any. */
export function restoreErrorLine(stderr: string): number | null {
  const m =
    /Error occurred at line: (\d+)/.exec(stderr) ??
    /\bline (\d+) failed/.exec(stderr) ??
    /^line (\d+):/m.exec(stderr) ??
    /COMMIT expected at line (\d+)/.exec(stderr);
  return m ? Number(m[1]) : null;
}

/**
 * A restore is the whole transaction: killed half way it is lost and the next full sync starts over, so a
 * slow one must be let finish. iptables-nft-restore of 10,000 Services took 193 s here (bench:proxy), past
 * the runner's default 120 s, and the agent retried it forever.
 */
export const RESTORE_TIMEOUT_MS = 15 * 60_000;

function opts(deps: IptablesDeps, extra: { input?: string; allowFailure?: boolean; timeoutMs?: number } = {}): { netns?: string; input?: string; allowFailure?: boolean; timeoutMs?: number } {
  return { ...(deps.netns === undefined ? {} : { netns: deps.netns }), ...extra };
}

/** Runs `iptables -V` (the user's alternative) and says which backend it drives. */
export async function detectBackend(deps: IptablesDeps, iptablesCmd = 'iptables'): Promise<IptablesBackendKind> {
  const r = await deps.runner.run([iptablesCmd, '-V'], opts(deps));
  return parseIptablesVersion(r.stdout + r.stderr);
}

/**
 * Throws NodenetError(IptablesMixed) when the backend we do not use holds
 * chains or jumps with our prefix. When the other backend's tools are
 * missing or fail, there is nothing to mix with: logs and returns.
 */
export async function checkBackendMixing(deps: IptablesDeps, using: IptablesBackendKind, prefix: string): Promise<void> {
  const other: IptablesBackendKind = using === 'nft' ? 'legacy' : 'nft';
  let r: RunResult;
  try {
    r = await deps.runner.run([BACKEND_COMMANDS[other].save], opts(deps, { allowFailure: true }));
  } catch (e) {
    deps.log.debug({ [F.err]: e, [F.cmd]: BACKEND_COMMANDS[other].save }, 'cannot read the other iptables backend; skipping the mixing check');
    return;
  }
  if (r.exitCode !== 0) {
    deps.log.debug({ [F.cmd]: BACKEND_COMMANDS[other].save }, 'the other iptables backend is unavailable; skipping the mixing check');
    return;
  }
  const ours = r.stdout.split('\n').filter((l) => l.startsWith(`:${prefix}-`) || new RegExp(`\\s-[jg] ${prefix}-`).test(l));
  if (ours.length) {
    const chains = [...new Set(ours.map((l) => (l.startsWith(':') ? l.slice(1).split(' ')[0] : l.trim())))].slice(0, 5);
    throw new NodenetError(
      ErrorCode.IptablesMixed,
      `\`iptables\` uses the ${using === 'nft' ? 'nf_tables' : 'legacy'} backend, but the ${other === 'nft' ? 'nf_tables' : 'legacy'} backend ` +
        `already holds ${ours.length} chain(s)/rule(s) with the ${prefix}- prefix (${chains.join('; ')}). Packets would traverse both rulesets. ` +
        `Remove them (e.g. stop the other proxy and run \`${BACKEND_COMMANDS[other].save} | grep ${prefix}-\` to see them), ` +
        `or point the iptables alternative at the ${other} backend.`,
    );
  }
}

/** Detects the backend, checks for mixing, and returns the executor. */
export async function createIptables(deps: IptablesDeps & { readonly prefix: string; readonly iptablesCmd?: string }): Promise<ExecIptables> {
  const backend = await detectBackend(deps, deps.iptablesCmd);
  await checkBackendMixing(deps, backend, deps.prefix);
  deps.log.info({ [F.mode]: backend }, 'iptables backend detected');
  return new ExecIptables(deps, backend);
}

export class ExecIptables implements Iptables {
  private readonly cmds: IptablesCommands;

  constructor(private readonly deps: IptablesDeps, readonly backend: IptablesBackendKind, commands?: IptablesCommands) {
    this.cmds = commands ?? BACKEND_COMMANDS[backend];
  }

  async restore(text: string, ro: RestoreOptions): Promise<void> {
    const argv = [this.cmds.restore, '--noflush', '-w', ...(ro.counters ? ['--counters'] : [])];
    const start = Date.now();
    const r = await this.deps.runner.run(argv, opts(this.deps, { input: text, allowFailure: true, timeoutMs: RESTORE_TIMEOUT_MS }));
    if (r.exitCode === 0) {
      this.deps.log.trace({ [F.cmd]: argv.join(' '), [F.durationMs]: Date.now() - start }, `restored:\n${text}`);
      return;
    }
    const line = restoreErrorLine(r.stderr);
    const context = line === null ? '' : `\n${linesAround(text, line)}`;
    const err = new IptablesRestoreError(`${argv[0]} exited ${r.exitCode}: ${r.stderr.trim().slice(0, 1000)}${context}`, line, { details: r.stderr.slice(0, 4000) });
    this.deps.log.error({ [F.err]: err, [F.cmd]: argv.join(' ') }, line === null ? 'iptables-restore failed' : `iptables-restore failed at line ${line}:${context}`);
    throw err;
  }

  async save(table: IptablesTable): Promise<string> {
    return (await this.deps.runner.run([this.cmds.save, '-t', table], opts(this.deps))).stdout;
  }

  async ensureJump(table: IptablesTable, builtinChain: string, ourChain: string, comment: string, position: 'prepend' | 'append', extraArgs?: readonly string[]): Promise<boolean> {
    const j: JumpRule = extraArgs ? { table, builtinChain, target: ourChain, comment, position, extraArgs } : { table, builtinChain, target: ourChain, comment, position };
    return (await this.ensureJumps([j])) === 1;
  }

  /**
   * One iptables-save per table the jumps live in (in parallel), a comparison in pure code
   * (iptables-jumps.ts), then one restore inserting every missing jump. With iptables-legacy each
   * `-C` read the whole table, so 14 of them cost 6 s at 30,000 Services. A missing target
   * chain makes the insert restore fail, as -C did.
   */
  async ensureJumps(jumps: readonly JumpRule[]): Promise<number> {
    const { missing } = classifyJumps(await this.scanTables(jumps), jumps);
    if (missing.length === 0) return 0;
    await this.restore(jumpRestore(missing, jumpInsertLine), { noflush: true });
    this.deps.log.info({ [F.chain]: missing.map((j) => `${j.table}/${j.builtinChain}->${j.target}`).join(',') }, 'inserted jumps into built-in chains');
    return missing.length;
  }

  async deleteJumps(jumps: readonly JumpRule[]): Promise<number> {
    const { present } = classifyJumps(await this.scanTables(jumps), jumps);
    if (present.length === 0) return 0;
    await this.restore(jumpRestore(present, jumpDeleteLine), { noflush: true });
    return present.length;
  }

  private async scanTables(jumps: readonly JumpRule[]): Promise<SaveScan[]> {
    const tables = [...new Set(jumps.map((j) => j.table))];
    return Promise.all(tables.map(async (t) => scanSave(await this.save(t), t)));
  }

  async listChains(table: IptablesTable): Promise<Set<string>> {
    return chainNamesFromSave(await this.save(table), table);
  }

  async chainExists(table: IptablesTable, chain: string): Promise<boolean> {
    const r = await this.deps.runner.run([this.cmds.iptables, '-w', '-t', table, '-S', chain], opts(this.deps, { allowFailure: true }));
    if (r.exitCode === 0) return true;
    if (r.exitCode === 1) return false;
    throw new NodenetError(ErrorCode.Exec, `${this.cmds.iptables} -t ${table} -S ${chain} exited ${r.exitCode}: ${r.stderr.trim()}`);
  }
}

