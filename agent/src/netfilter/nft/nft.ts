/**
 * netfilter/nft: the nftables executor. Everything nodenet does to nftables
 * goes through `Nft`; NftExecutor runs the real `nft` (inside a network
 * namespace when given one), NftFake (nft.fake.ts) validates and keeps state.
 *
 * A script is applied with one `nft -f -` (stdin): nft sends it to the kernel
 * as one netlink batch, so it is all-or-nothing. On failure nft names the
 * failing line (`/dev/stdin:LINE:COL: Error: ...`); the error we raise quotes
 * that message and the script lines around it, because "Could not process
 * rule" alone is useless at line 40,000 of a ruleset.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Runner } from '../../exec/runner.js';
import { parseNftJsonNames, parseNftJsonTable, parseNftJsonTables, type NftNames, type NftTableInfo } from './nft-json.js';
import type { NftFamily } from './nft-state.js';
import { NftNetlink, type CommandSink, type NetlinkApplyResult, type NftNetlinkApplyOptions } from './netlink/apply.js';

export type { NftNames, NftTableInfo } from './nft-json.js';
export type { NetlinkApplyResult, NftNetlinkApplyOptions } from './netlink/apply.js';

export interface Nft {
  /**
   * Applies `script` atomically: all of it or none of it. Not idempotent in
   * general (an `add element` that changes a value fails); the caller renders
   * scripts that are valid against the state it knows.
   * @throws NodenetError(NN_ERR_RULE_APPLY) with the failing lines in `details`.
   */
  apply(script: string): Promise<void>;
  /**
   * Applies `script` like apply(), but as nodenet's own nf_tables netlink
   * batch (netfilter/nft/netlink/), without nft's dump of every chain, when
   * every line is one the encoder knows. Returns `applied: false` having
   * sent nothing when one is not (the caller then uses apply()). Optional:
   * executors without it always go through apply().
   * @throws NodenetError(NN_ERR_RULE_APPLY) as apply() does.
   */
  applyViaNetlink?(script: string, opts?: NftNetlinkApplyOptions): Promise<NetlinkApplyResult>;
  /**
   * A full sync streamed into nodenet's netlink batch as it is rendered
   * (`sink`), then sent (`send`; `script` gives the whole text only for an
   * error report). Optional, as applyViaNetlink.
   * @throws NodenetError(NN_ERR_RULE_APPLY) from send as apply() does.
   */
  netlinkFullSync?(sizeHint?: number, tables?: number): { readonly sink: CommandSink; send(script: () => string): Promise<NetlinkApplyResult> };
  /** The table's chains, sets and maps (with elements), or null when the table does not exist. Read-only. */
  listTable(family: NftFamily, name: string): Promise<NftTableInfo | null>;
  /**
   * The names of the table's chains and sets, without rules or elements
   * (0.2 s for a 10k-Service table where listTable takes 4 s); null when the
   * table does not exist. Read-only.
   */
  listNames(family: NftFamily, name: string): Promise<NftNames | null>;
  /** listNames of several tables at once (one chain dump over netlink); absent tables map to null. Optional. */
  listNamesMany?(family: NftFamily, names: readonly string[]): Promise<Map<string, NftNames | null>>;
  /** `nft list table` text, or null when the table does not exist. Read-only. */
  listTableText(family: NftFamily, name: string): Promise<string | null>;
  /** Deletes the table and everything in it. Idempotent: a missing table is success. */
  deleteTable(family: NftFamily, name: string): Promise<void>;
  /**
   * Read-only. Through nft 1.0.6 it costs a listing of every table's
   * objects (0.85 s at 10,000 Services, 13 s at 30,000); the executor asks
   * the kernel over netlink instead when its netlink path is on.
   */
  tableExists(family: NftFamily, name: string): Promise<boolean>;
  /**
   * Read-only; false when the table or the object is missing. Costs what
   * listing that one object costs: a small map 6 ms at 10,000 Services, a
   * chain 70 ms (nft fetches every chain's rules to list one).
   */
  objectExists(family: NftFamily, table: string, kind: 'chain' | 'map' | 'set', name: string): Promise<boolean>;
}

/**
 * Builds the error for a failed script: nft's first error line, and the
 * script lines around each line it names (at most `maxSites` places).
 */
export function nftApplyError(script: string, stderr: string, exitCode: number, maxSites = 3, what = 'nft -f'): NodenetError {
  const lines = script.split('\n');
  const errLines = stderr.split('\n').filter((l) => /Error:/.test(l));
  const first = (errLines[0] || stderr.trim().split('\n')[0] || `nft exited ${exitCode}`).trim();
  const sites = [...stderr.matchAll(/(?:^|\n)[^:\n]*:(\d+):\d+(?:-\d+)?: Error/g)].map((m) => Number(m[1]));
  const uniq = [...new Set(sites)].slice(0, maxSites);
  const blocks = uniq.map((n) => {
    const from = Math.max(1, n - 2);
    const to = Math.min(lines.length, n + 2);
    const out: string[] = [];
    for (let i = from; i <= to; i++) out.push(`${i === n ? '>' : ' '} ${String(i).padStart(6)} | ${lines[i - 1] ?? ''}`);
    return out.join('\n');
  });
  const details = [stderr.trim().slice(0, 4000), ...blocks].join('\n\n');
  const where = uniq.length ? ` at line ${uniq[0]} of ${lines.length}` : '';
  return new NodenetError(ErrorCode.RuleApply, `${what} failed${where}: ${first}`, { details });
}

export interface NftExecutorDeps {
  readonly runner: Runner;
  /** Run every nft command inside this network namespace (a path such as /var/run/netns/X). */
  readonly netns?: string;
  readonly timeoutMs?: number;
  /**
   * Offer applyViaNetlink; false: every script goes through `nft -f`.
   * Default: true unless the environment has NODENET_NFT_NETLINK=0 (the switch for comparing the two paths).
   */
  readonly netlinkBatch?: boolean;
}

const NOT_FOUND = /No such file or directory/;

export class NftExecutor implements Nft {
  readonly applyViaNetlink?: (script: string, opts?: NftNetlinkApplyOptions) => Promise<NetlinkApplyResult>;
  readonly netlinkFullSync?: (sizeHint?: number, tables?: number) => { readonly sink: CommandSink; send(script: () => string): Promise<NetlinkApplyResult> };
  /** The netlink path, also for tableExists and listNames (names straight from the kernel, not nft's whole cache). */
  private readonly nl: NftNetlink | null = null;

  constructor(private readonly deps: NftExecutorDeps) {
    if (deps.netlinkBatch ?? process.env['NODENET_NFT_NETLINK'] !== '0') {
      const nl = new NftNetlink(deps.netns !== undefined ? { netns: deps.netns } : {});
      // Synchronous underneath (the kernel answers within sendto); async to match apply().
      this.applyViaNetlink = async (script, opts) => nl.apply(script, opts);
      this.netlinkFullSync = (sizeHint, tables) => {
        const b = nl.beginTables(sizeHint, tables);
        return { sink: b, send: (script) => nl.sendTables(b, script) };
      };
      this.nl = nl;
    }
  }

  private run(argv: string[], input?: string) {
    return this.deps.runner.run(['nft', ...argv], {
      allowFailure: true,
      timeoutMs: this.deps.timeoutMs ?? 120_000,
      ...(input !== undefined ? { input } : {}),
      ...(this.deps.netns !== undefined ? { netns: this.deps.netns } : {}),
    });
  }

  async apply(script: string): Promise<void> {
    const r = await this.run(['-f', '-'], script);
    if (r.exitCode !== 0) throw nftApplyError(script, r.stderr, r.exitCode);
  }

  async listTable(family: NftFamily, name: string): Promise<NftTableInfo | null> {
    const r = await this.run(['-j', 'list', 'table', family, name]);
    if (r.exitCode !== 0) {
      if (NOT_FOUND.test(r.stderr)) return null;
      throw new NodenetError(ErrorCode.Exec, `nft -j list table ${family} ${name} exited ${r.exitCode}: ${r.stderr.trim()}`);
    }
    try {
      return parseNftJsonTable(r.stdout, family, name);
    } catch (e) {
      throw new NodenetError(ErrorCode.Exec, `nft -j list table ${family} ${name}: unexpected output`, { cause: e });
    }
  }

  async listNamesMany(family: NftFamily, names: readonly string[]): Promise<Map<string, NftNames | null>> {
    if (this.nl) return this.nl.listNamesMany(family, names);
    const out = new Map<string, NftNames | null>();
    for (const n of names) out.set(n, await this.listNames(family, n));
    return out;
  }

  async listNames(family: NftFamily, name: string): Promise<NftNames | null> {
    if (this.nl) return this.nl.listNames(family, name);
    if (!(await this.tableExists(family, name))) return null;
    const [c, s] = await Promise.all([this.run(['-j', 'list', 'chains', family]), this.run(['-t', '-j', 'list', 'sets', family])]);
    for (const [r, what] of [[c, 'chains'], [s, 'sets']] as const) {
      if (r.exitCode !== 0) throw new NodenetError(ErrorCode.Exec, `nft -j list ${what} ${family} exited ${r.exitCode}: ${r.stderr.trim()}`);
    }
    try {
      return parseNftJsonNames(c.stdout, s.stdout, family, name);
    } catch (e) {
      throw new NodenetError(ErrorCode.Exec, `nft -j list chains/sets ${family}: unexpected output`, { cause: e });
    }
  }

  async listTableText(family: NftFamily, name: string): Promise<string | null> {
    const r = await this.run(['list', 'table', family, name]);
    if (r.exitCode !== 0) {
      if (NOT_FOUND.test(r.stderr)) return null;
      throw new NodenetError(ErrorCode.Exec, `nft list table ${family} ${name} exited ${r.exitCode}: ${r.stderr.trim()}`);
    }
    return r.stdout;
  }

  async deleteTable(family: NftFamily, name: string): Promise<void> {
    // `delete table` of a missing table fails; "add then delete" in one
    // transaction is the idempotent form (knftables and kube-proxy do the same).
    const script = `add table ${family} ${name}\ndelete table ${family} ${name}\n`;
    const r = await this.run(['-f', '-'], script);
    if (r.exitCode !== 0) throw nftApplyError(script, r.stderr, r.exitCode);
  }

  async objectExists(family: NftFamily, table: string, kind: 'chain' | 'map' | 'set', name: string): Promise<boolean> {
    if (this.nl) return this.nl.objectExists(family, table, kind, name);
    const r = await this.run(['list', kind, family, table, name]);
    if (r.exitCode === 0) return true;
    if (NOT_FOUND.test(r.stderr)) return false;
    throw new NodenetError(ErrorCode.Exec, `nft list ${kind} ${family} ${table} ${name} exited ${r.exitCode}: ${r.stderr.trim()}`);
  }

  async tableExists(family: NftFamily, name: string): Promise<boolean> {
    if (this.nl) return this.nl.tableExists(family, name);
    const r = await this.run(['-j', 'list', 'tables', family]);
    if (r.exitCode !== 0) throw new NodenetError(ErrorCode.Exec, `nft -j list tables ${family} exited ${r.exitCode}: ${r.stderr.trim()}`);
    return parseNftJsonTables(r.stdout).some((t) => t.family === family && t.name === name);
  }
}
