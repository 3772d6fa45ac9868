/**
 * proxy/iptables/proxier: the iptables mode's ProxyBackend.
 *
 * Each sync renders (pure) and applies in one iptables-restore --noflush.
 * A full sync reads `iptables-save -t nat` and `-t filter` once each: the nat
 * chain names (so chains left by an earlier run are deleted too) and the
 * rules of the built-in chains, compared in pure code with the jumps we need
 * (netfilter/iptables-jumps.ts; never one `iptables -C` per jump, which with
 * iptables-legacy reads the whole table each time). The missing jumps go
 * into the same restore, after the chains they target: one restore, one
 * table replace per table. A partial sync (KEP-3453) trusts what this
 * instance applied last: it rewrites only the changed Services' chains plus
 * the dispatch and filter chains, deletes the chains that went stale, and
 * reads nothing.
 *
 * Canary (kube-proxy's iptables Monitor): canaryMissing() reads only the
 * mangle table's canary, the smallest table (with iptables-legacy any read
 * copies the whole table out of the kernel: ~1 s for nat at 30,000
 * Services). A flush of nat or filter alone leaves mangle's canary in place;
 * a partial sync notices it instead: its restore opens each block with
 * `-S CANARY`, which fails when the table was flushed. The backend then
 * checks the canaries of nat and filter and, when one is gone, syncs in full
 * at once (the periodic sync, every sync period even without changes, is such
 * a partial sync).
 *
 * Any failure forgets the applied state, so the next sync is full even if the
 * runner asked for a partial one; the error is NodenetError(RuleApply).
 * Assumes one sync at a time (the bounded runner serialises them).
 */
import { asNodenetError, ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Iptables, IptablesTable } from '../../netfilter/iptables/iptables-types.js';
import { F } from '../../../../lib/log/fields.js';
import type { Logger } from '../../../../lib/log/log.js';
import type { ProxyBackend, ProxyNodeConfig, ProxySnapshot, SyncScope } from '../types.js';
import { classifyJumps, scanSave } from '../../netfilter/iptables/iptables-jumps.js';
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

/** The tables a partial sync's `-S CANARY` guards; canaryMissing() reads mangle's. */
const GUARDED_TABLES: readonly IptablesTable[] = ['nat', 'filter'];

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
      if (full) return await this.fullSync(snapshot, start);
      try {
        await this.apply(renderIptables(snapshot, this.deps.nodeConfig, scope, prev!, prevTop ?? undefined), false, 0, start);
      } catch (e) {
        // The restore failed: if a guarded table lost its canary (flushed by someone), the kernel no
        // longer holds what the partial render assumed; sync everything now rather than at the retry.
        if (!(await this.guardedCanaryGone())) throw e;
        await this.fullSync(snapshot, start);
      }
    } catch (e) {
      const err = asNodenetError(e);
      throw err.code === ErrorCode.RuleApply ? err : new NodenetError(ErrorCode.RuleApply, `iptables ${full ? 'full' : 'partial'} sync failed: ${err.message}`, { cause: e });
    }
  }

  /** Reads nat and filter once each, then one restore with the ruleset and the missing jumps. */
  private async fullSync(snapshot: ProxySnapshot, start: number): Promise<void> {
    const ipt = this.deps.iptables;
    const [nat, filter] = await Promise.all([ipt.save('nat').then((t) => scanSave(t, 'nat')), ipt.save('filter').then((t) => scanSave(t, 'filter'))]);
    const { missing } = classifyJumps([nat, filter], builtinJumps(this.deps.nodeConfig.prefix));
    const r = renderIptables(snapshot, this.deps.nodeConfig, { full: true }, nat.chains, undefined, { jumps: missing });
    await this.apply(r, true, missing.length, start);
    if (missing.length) this.log.info({ [F.chain]: missing.map((j) => `${j.table}/${j.builtinChain}->${j.target}`).join(',') }, 'inserted jumps into built-in chains');
  }

  private async apply(r: IptablesRender, full: boolean, jumpsInserted: number, start: number): Promise<void> {
    await this.deps.iptables.restore(r.text, { noflush: true });
    this.applied = r.natChains;
    this.appliedTop = { topLevel: r.topLevel, serviceTops: r.serviceTops };
    this.last = { full, ruleCount: r.ruleCount, deletedChains: r.deletedChains.length, jumpsInserted, durationMs: Date.now() - start };
    this.log.debug({ [F.durationMs]: this.last.durationMs }, `iptables ${full ? 'full' : 'partial'} sync: ${r.ruleCount} rules, ${r.deletedChains.length} stale chains deleted, ${jumpsInserted} jumps inserted`);
  }

  /** After a failed partial restore: true (and a warning) when nat's or filter's canary is gone. */
  private async guardedCanaryGone(): Promise<boolean> {
    const canary = fixedChains(this.deps.nodeConfig.prefix).canary;
    try {
      const present = await Promise.all(GUARDED_TABLES.map((t) => this.deps.iptables.chainExists(t, canary)));
      const gone = GUARDED_TABLES.filter((_, i) => !present[i]);
      if (gone.length === 0) return false;
      this.log.warn({ [F.chain]: canary }, `canary chain missing from ${gone.join(' and ')}: our rules were flushed; syncing in full now`);
      return true;
    } catch (e) {
      this.log.debug({ [F.err]: e }, 'canary check after a failed partial restore failed');
      return false;
    }
  }

  /**
   * True when the mangle table's canary chain is missing (kube-proxy's iptables Monitor polls the
   * first, smallest table only). nat and filter are guarded by every partial sync's restore instead.
   */
  async canaryMissing(): Promise<boolean> {
    const canary = fixedChains(this.deps.nodeConfig.prefix).canary;
    const missing = !(await this.deps.iptables.chainExists('mangle', canary));
    if (missing) this.log.warn({ [F.chain]: canary }, 'canary chain missing from mangle: our rules were flushed; forcing a full sync');
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
