/**
 * proxy/iptables/proxier: the iptables mode's ProxyBackend.
 *
 * Each sync renders (pure) and applies in one iptables-restore --noflush.
 * A full sync lists the nat chains in the kernel (so chains left by an earlier
 * run are deleted too), applies everything including the canary chains, then
 * checks the jumps from the built-in chains and inserts missing ones (after
 * the restore, because a jump needs its target chain). A partial sync
 * (KEP-3453) trusts what this instance applied last: it rewrites only the
 * changed Services' chains plus the dispatch and filter chains, deletes the
 * chains that went stale, and skips the listing and the jump checks.
 *
 * Any failure forgets the applied state, so the next sync is full even if the
 * runner asked for a partial one; the error is NodenetError(RuleApply).
 * Assumes one sync at a time (the bounded runner serialises them).
 */
import { asNodenetError, ErrorCode, NodenetError } from '../../errors/errors.js';
import type { Iptables, IptablesTable } from '../../netfilter/iptables-types.js';
import { F } from '../../log/fields.js';
import type { Logger } from '../../log/log.js';
import type { ProxyBackend, ProxyNodeConfig, ProxySnapshot, SyncScope } from '../types.js';
import { fixedChains, isOwnedChain } from './chains.js';
import { builtinJumps } from './jumps.js';
import { renderIptables, type IptablesPrevious, type IptablesRender } from './render.js';

export interface IptablesBackendDeps {
  readonly iptables: Iptables;
  readonly nodeConfig: ProxyNodeConfig;
  readonly log: Logger;
}

export interface IptablesSyncStats {
  readonly full: boolean;
  readonly ruleCount: number;
  readonly deletedChains: number;
  readonly jumpsInserted: number;
  readonly durationMs: number;
}

const CANARY_TABLES: readonly IptablesTable[] = ['mangle', 'nat', 'filter'];

export class IptablesBackend implements ProxyBackend {
  readonly mode = 'iptables' as const;
  private readonly log: Logger;
  /** nat service/endpoint chains after the last successful sync; null: unknown, the next sync is full. */
  private applied: ReadonlySet<string> | null = null;
  private last: IptablesSyncStats | null = null;
  /** What the last successful render wrote at the top level (a partial sync reuses and skips what did not change). */
  private appliedTop: IptablesPrevious | null = null;

  constructor(private readonly deps: IptablesBackendDeps) {
    this.log = deps.log.child({ [F.subsys]: 'proxy/iptables' });
    fixedChains(deps.nodeConfig.prefix); // validate the prefix now, not at the first sync
  }

  /** The nat chains this instance believes are in the kernel (null before the first successful sync). */
  get appliedChains(): ReadonlySet<string> | null {
    return this.applied;
  }

  get lastSync(): IptablesSyncStats | null {
    return this.last;
  }

  async sync(snapshot: ProxySnapshot, scope: SyncScope): Promise<void> {
    const start = Date.now();
    const full = scope.full || this.applied === null;
    if (!scope.full && full) this.log.info('partial sync requested but no applied state is known; doing a full sync');
    const prev = this.applied;
    const prevTop = this.appliedTop;
    this.applied = null; // until this sync succeeds
    this.appliedTop = null;
    try {
      const existing = full ? await this.deps.iptables.listChains('nat') : prev!;
      const r: IptablesRender = renderIptables(snapshot, this.deps.nodeConfig, full ? { full: true } : scope, existing, full ? undefined : (prevTop ?? undefined));
      await this.deps.iptables.restore(r.text, { noflush: true });
      const jumpsInserted = full ? await this.deps.iptables.ensureJumps(builtinJumps(this.deps.nodeConfig.prefix)) : 0;
      this.applied = r.natChains;
      this.appliedTop = { topLevel: r.topLevel, serviceTops: r.serviceTops };
      this.last = { full, ruleCount: r.ruleCount, deletedChains: r.deletedChains.length, jumpsInserted, durationMs: Date.now() - start };
      this.log.debug({ [F.durationMs]: this.last.durationMs }, `iptables ${full ? 'full' : 'partial'} sync: ${r.ruleCount} rules, ${r.deletedChains.length} stale chains deleted, ${jumpsInserted} jumps inserted`);
    } catch (e) {
      const err = asNodenetError(e);
      throw err.code === ErrorCode.RuleApply ? err : new NodenetError(ErrorCode.RuleApply, `iptables ${full ? 'full' : 'partial'} sync failed: ${err.message}`, { cause: e });
    }
  }

  /** True when the canary chain is missing from any of mangle, nat, filter (kube-proxy's iptables Monitor). */
  async canaryMissing(): Promise<boolean> {
    const canary = fixedChains(this.deps.nodeConfig.prefix).canary;
    const present = await Promise.all(CANARY_TABLES.map((t) => this.deps.iptables.chainExists(t, canary)));
    const missing = present.some((p) => !p);
    if (missing) this.log.warn({ [F.chain]: canary }, 'canary chain missing: our rules were flushed; forcing a full sync');
    return missing;
  }

  /**
   * Removes our jumps from the built-in chains, then flushes and deletes every
   * chain we own in filter, nat and mangle (fixed names and per-service chains
   * of our prefix). Idempotent.
   */
  async cleanup(): Promise<void> {
    const P = this.deps.nodeConfig.prefix;
    this.applied = null;
    try {
      await this.deps.iptables.deleteJumps(builtinJumps(P));
      let text = '';
      for (const t of ['filter', 'nat', 'mangle'] as const) {
        const ours = [...(await this.deps.iptables.listChains(t))].filter((c) => isOwnedChain(P, c)).sort();
        if (ours.length === 0) continue;
        // Declare all first (flushing them, so no rule of ours references another), then delete.
        text += [`*${t}`, ...ours.map((c) => `:${c} - [0:0]`), ...ours.map((c) => `-X ${c}`), 'COMMIT', ''].join('\n');
      }
      if (text) await this.deps.iptables.restore(text, { noflush: true });
      this.log.info('iptables rules removed');
    } catch (e) {
      throw new NodenetError(ErrorCode.RuleApply, `iptables cleanup failed: ${asNodenetError(e).message}`, { cause: e });
    }
  }
}
