/**
 * proxy/nftables/proxier: the nftables mode's ProxyBackend.
 *
 * Each sync renders (pure, render.ts) and applies one `nft -f` transaction.
 * A full sync through netlink is rendered straight into the batch (the
 * render's RenderSink, Nft.netlinkFullSync): no text is built, nor parsed
 * back; its text is rendered again only for an error report or when a line
 * falls outside the encoder's shapes (then it goes through `nft -f`).
 * Measured at 30,000 Services against rendering the text and parsing it
 * back, one window: full sync 6.1 -> 5.3 s, RSS after the post-sync GC
 * 447 -> 319 MiB; at 10,000: 1.96 -> 1.56 s.
 * The transaction goes instead as nodenet's own nf_tables netlink batch
 * (netfilter/nft/netlink/) when the executor offers one and every line is a
 * shape the encoder knows: nft 1.0.6 dumps every chain before applying a
 * script with rules or elements (1.2-1.7 s at 30,000 Services), which made
 * a one-endpoint change cost seconds, and its parser and evaluator are most
 * of a full sync's time. A full sync goes as one big batch with acks only
 * for errors and its last message (FULL_SYNC_VIA_NETLINK); in the sharded
 * layout, as one batch per shard table, each sent from a worker thread as
 * soon as it is rendered, and the main table's last (render.ts). Anything the
 * encoder does not know goes through `nft -f` (logged at debug).
 * The backend keeps what it applied last (per-service chains, affinity sets,
 * elements, and each Service's share): a partial sync sends only the
 * difference for the changed Services; a full sync rewrites everything and
 * deletes what the record holds that nothing uses any more.
 *
 * With no record (first sync of this process, or after a failed full sync)
 * it asks the kernel for the names of our table's chains and sets (cheap: no
 * rules, no elements), so objects left by an earlier run are deleted too.
 * nft applies a transaction all-or-nothing, so after a failed partial sync
 * the record is still what the kernel holds; the next sync is forced full
 * anyway (the runner asks for it too). When the table is gone (canary) the
 * kernel holds nothing of ours and the record becomes empty.
 *
 * Assumes one sync at a time (the bounded runner serialises them).
 */
import { asNodenetError, ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { F } from '../../../../lib/log/fields.js';
import type { Logger } from '../../../../lib/log/log.js';
import type { Nft } from '../../netfilter/nft/nft.js';
import type { ProxyBackend, ProxyNodeConfig, ProxySnapshot, SyncScope } from '../types.js';
import { isAffinitySetName, isServiceObjectName, MAX_SHARDS, shardTableName, tableName } from './names.js';
import { EMPTY_APPLIED, renderNftables, type NftablesApplied, type NftablesRenderOptions } from './render.js';

export interface NftablesBackendDeps {
  readonly nft: Nft;
  readonly nodeConfig: ProxyNodeConfig;
  readonly log: Logger;
  readonly options?: NftablesRenderOptions;
  /** Milliseconds clock for the stats; default Date.now. */
  readonly now?: () => number;
  /**
   * Partial syncs go through the executor's own netlink batch when it offers
   * one (Nft.applyViaNetlink) and knows every line; default true.
   */
  readonly netlinkPartial?: boolean;
  /**
   * Full syncs too, as one big batch (acks only for errors and the last
   * message). Default: FULL_SYNC_VIA_NETLINK, or the environment's
   * NODENET_NFT_NETLINK_FULL (1/0) when set.
   */
  readonly netlinkFull?: boolean;
}

/**
 * Full syncs go as our own netlink batch by default. Measured at 30,000
 * Services (465,076 commands, an 85 MB batch), in one busy window (load
 * 14 on 2 cores, so every figure is inflated): into an empty namespace
 * `nft -f` 69.4 s, the netlink batch 40.5 s (parse + encode + kernel);
 * over an existing table 38.2 s vs 19.7 s; `nft list table` identical
 * after both. bench:proxy (load ~3, same hour): full sync 28.3 s -> 12.9 s,
 * 10,000: 5.0 s -> 4.5 s; agent RSS 470 -> 522 MiB (the script is parsed and
 * encoded a line at a time). Most of our time is the JS parse and encode.
 * netlink-full.priv.test.ts proves the tables equal for every construct.
 */
export const FULL_SYNC_VIA_NETLINK = true;

function fullSyncViaNetlinkDefault(): boolean {
  const env = process.env['NODENET_NFT_NETLINK_FULL'];
  if (env === '1') return true;
  if (env === '0') return false;
  return FULL_SYNC_VIA_NETLINK;
}

/**
 * What to reserve for a full sync's netlink batch: about 3 KB per service
 * port (88 MB for 30,000 ports of 2 endpoints); the encoder grows it if short.
 */
function batchSizeHint(snapshot: ProxySnapshot): number {
  return Math.max(1 << 20, snapshot.services.size * 3000);
}

export interface NftablesSyncStats {
  readonly full: boolean;
  readonly ruleCount: number;
  readonly elementCount: number;
  readonly chainsWritten: number;
  /** Size of the transaction text; 0 for a full sync rendered straight into the netlink batch (no text). */
  readonly bytes: number;
  /** How it was applied: `nft -f`, or nodenet's own nf_tables netlink batch. */
  readonly via: 'nft' | 'netlink';
  readonly renderMs: number;
  readonly applyMs: number;
  /**
   * Of applyMs, the time the kernel took over the netlink batch (sendmsg to
   * its last answer); null through `nft -f`.
   */
  readonly kernelMs: number | null;
  readonly durationMs: number;
}

export class NftablesBackend implements ProxyBackend {
  readonly mode = 'nftables' as const;
  /** Our table's name (`kube-proxy` for prefix KUBE). */
  readonly table: string;
  private readonly log: Logger;
  private readonly now: () => number;
  /** What the kernel holds after our last successful sync; null: unknown (list the kernel before the next, full, sync). */
  private applied: NftablesApplied | null = null;
  /** The next sync must be full whatever the scope says. */
  private forceFull = true;
  private last: NftablesSyncStats | null = null;

  constructor(private readonly deps: NftablesBackendDeps) {
    this.table = tableName(deps.nodeConfig.prefix);
    this.log = deps.log.child({ [F.subsys]: 'proxy/nftables' });
    this.now = deps.now ?? Date.now;
  }

  /** The record of what the last successful sync applied (null when unknown). */
  get appliedState(): NftablesApplied | null {
    return this.applied;
  }

  get lastSync(): NftablesSyncStats | null {
    return this.last;
  }

  /** Rules plus set/map elements the last successful sync wrote. */
  lastSyncRuleCount(): number | null {
    return this.last ? this.last.ruleCount + this.last.elementCount : null;
  }

  /** How many shard tables the layout has (1: kube-proxy's one table, no shard tables). */
  private get shards(): number {
    return Math.max(1, Math.floor(this.deps.options?.shards ?? 1));
  }

  /** Every shard table name this backend may ever have made (`kube-proxy-0` ... `kube-proxy-63`). */
  private allShardTables(): string[] {
    return Array.from({ length: MAX_SHARDS }, (_, i) => shardTableName(this.deps.nodeConfig.prefix, i));
  }

  /** Our tables: the main one, and the shard tables of the sharded layout. */
  private ourTables(): string[] {
    const n = this.shards;
    return [this.table, ...(n > 1 ? this.allShardTables().slice(0, n) : [])];
  }

  /**
   * The per-service objects our tables hold now, from the kernel (names only). When any table holds another
   * layout (the main table with DNAT chains while sharded, or shard tables of another count), every table of ours
   * found is named for a reset instead: the full sync deletes and rebuilds them in its one transaction.
   */
  private async existingFromKernel(): Promise<NftablesApplied> {
    const n = this.shards;
    const shardTables = this.allShardTables();
    const all = [this.table, ...shardTables];
    const listed = this.deps.nft.listNamesMany
      ? await this.deps.nft.listNamesMany('ip', all)
      : new Map(await Promise.all(all.map(async (t) => [t, await this.deps.nft.listNames('ip', t)] as const)));
    const chains = new Set<string>();
    const affinitySets = new Map<string, number>();
    const found: string[] = [];
    let otherLayout = false;
    for (const t of all) {
      const names = listed.get(t);
      if (!names) continue;
      found.push(t);
      const perService = names.chains.filter(isServiceObjectName);
      if (t === this.table ? n > 1 && (names.chains.includes('services') || perService.some((c) => !c.startsWith('firewall-'))) : shardTables.indexOf(t) >= (n > 1 ? n : 0)) otherLayout = true;
      for (const c of perService) chains.add(c);
      for (const s of names.sets) if (isAffinitySetName(s.name)) affinitySets.set(s.name, s.timeout ?? 10800);
    }
    if (!found.length) return EMPTY_APPLIED;
    if (otherLayout) {
      this.log.info({ [F.mode]: 'nftables' }, `tables ${found.join(', ')} hold another layout than ${n > 1 ? `${n} shards` : 'one table'}: the full sync rebuilds them`);
      return { ...EMPTY_APPLIED, resetTables: found };
    }
    return { chains, affinitySets, elements: EMPTY_APPLIED.elements, services: new Map() };
  }

  async sync(snapshot: ProxySnapshot, scope: SyncScope): Promise<void> {
    const start = this.now();
    const full = scope.full || this.forceFull || this.applied === null;
    if (!scope.full && full) this.log.info('partial sync requested but the last sync did not succeed or none ran; doing a full sync');
    try {
      const existing = this.applied ?? (await this.existingFromKernel());
      const renderScope: SyncScope = full ? { full: true } : scope;
      const opts = this.deps.options ?? {};
      // A full sync through netlink is rendered straight into the batch: no text is built, nor parsed back.
      const stream = full && !this.log.isLevelEnabled('trace') && (this.deps.netlinkFull ?? fullSyncViaNetlinkDefault()) ? this.deps.nft.netlinkFullSync?.(batchSizeHint(snapshot), this.shards > 1 && !existing.resetTables?.length ? this.shards + 1 : 1) : undefined;
      const r = renderNftables(snapshot, this.deps.nodeConfig, renderScope, existing, opts, stream?.sink);
      const rendered = this.now();
      if (this.log.isLevelEnabled('trace')) this.log.trace({ [F.mode]: 'nftables' }, `nft transaction:\n${r.text}`);
      const text = (): string => (stream ? renderNftables(snapshot, this.deps.nodeConfig, renderScope, existing, opts).text : r.text);
      let via: 'nft' | 'netlink' = 'nft';
      let kernelMs: number | null = null;
      let bytes = r.text.length;
      try {
        if (stream) {
          const res = await stream.send(text);
          if (res.applied) {
            via = 'netlink';
            kernelMs = res.kernelMs ?? null;
          } else {
            this.log.debug({ [F.mode]: 'nftables', [F.reason]: res.reason }, `full sync through nft -f: line ${res.line} is not one the netlink encoder knows`);
            const t = text();
            bytes = t.length;
            await this.deps.nft.apply(t);
          }
        } else ({ via, kernelMs } = await this.apply(r.text, full));
      } catch (e) {
        // The batch was all-or-nothing, so the record still matches the
        // kernel; but a failed full sync may mean the kernel drifted from
        // it: list again next time.
        if (full) this.applied = null;
        else this.applied = existing;
        throw e;
      }
      this.applied = r.applied;
      this.forceFull = false;
      const end = this.now();
      this.last = {
        full,
        ruleCount: r.ruleCount,
        elementCount: r.elementCount,
        chainsWritten: r.chainsWritten,
        bytes,
        via,
        renderMs: rendered - start,
        applyMs: end - rendered,
        kernelMs,
        durationMs: end - start,
      };
      this.log.debug(
        { [F.durationMs]: this.last.durationMs },
        `nftables ${full ? 'full' : 'partial'} sync (${via === 'nft' ? 'nft -f' : 'netlink batch'}): ${r.ruleCount} rules, ${r.elementCount} elements, ${r.chainsWritten} chains written, ${r.lines} lines`,
      );
    } catch (e) {
      this.forceFull = true;
      const err = asNodenetError(e);
      // The caller (Proxier) logs it; `details` holds nft's message and the script lines around the failure.
      if (err.code === ErrorCode.RuleApply) throw err;
      throw new NodenetError(ErrorCode.RuleApply, `nftables ${full ? 'full' : 'partial'} sync failed: ${err.message}`, { cause: e });
    }
  }

  /**
   * The script goes as our own netlink batch when the executor can encode
   * every line of it (full syncs unless netlinkFull is off); otherwise `nft -f`.
   * Both are all-or-nothing, and both raise NN_ERR_RULE_APPLY.
   */
  private async apply(text: string, full: boolean): Promise<{ via: 'nft' | 'netlink'; kernelMs: number | null }> {
    const nft = this.deps.nft;
    const viaNetlink = full ? (this.deps.netlinkFull ?? fullSyncViaNetlinkDefault()) : this.deps.netlinkPartial !== false;
    if (viaNetlink && nft.applyViaNetlink) {
      const r = await nft.applyViaNetlink(text, full ? { big: true } : {});
      if (r.applied) return { via: 'netlink', kernelMs: r.kernelMs ?? null };
      this.log.debug(
        { [F.mode]: 'nftables', [F.reason]: r.reason },
        `${full ? 'full' : 'partial'} sync through nft -f: line ${r.line} is not one the netlink encoder knows`,
      );
    }
    await nft.apply(text);
    return { via: 'nft', kernelMs: null };
  }

  /** True when our table is gone (someone ran `nft flush ruleset` or deleted it): the kernel holds nothing of ours. */
  async canaryMissing(): Promise<boolean> {
    // One small fixed map, not the table list: listing tables makes nft 1.0.6 read the whole ruleset (0.85 s at
    // 10k Services), listing a chain every chain's rules (70 ms); this map holds only NodePorts without endpoints.
    const present = await this.deps.nft.objectExists('ip', this.table, 'map', 'no-endpoint-nodeports');
    if (!present) {
      this.log.warn({ [F.mode]: 'nftables' }, `table ip ${this.table} is gone: our rules were removed; the next sync is full`);
      // Sharded, the shard tables may still hold chains: list the kernel again.
      this.applied = this.shards > 1 ? null : EMPTY_APPLIED;
      this.forceFull = true;
      return true;
    }
    // The sharded layout: each shard's dispatch map (one small request each).
    for (const t of this.ourTables().slice(1)) {
      if (await this.deps.nft.objectExists('ip', t, 'map', 'service-ips')) continue;
      this.log.warn({ [F.mode]: 'nftables' }, `table ip ${t} is gone: our rules were removed; the next sync is full`);
      this.applied = null;
      this.forceFull = true;
      return true;
    }
    return false;
  }

  /** Deletes our tables (the shard tables of any count too) and everything in them. Idempotent. */
  async cleanup(): Promise<void> {
    this.applied = null;
    this.forceFull = true;
    try {
      await this.deps.nft.deleteTable('ip', this.table);
      const shards: string[] = [];
      for (const t of this.allShardTables()) {
        if (!(await this.deps.nft.tableExists('ip', t))) continue;
        await this.deps.nft.deleteTable('ip', t);
        shards.push(t);
      }
      this.log.info(`nftables table ip ${this.table}${shards.length ? ` and ${shards.join(', ')}` : ''} removed`);
    } catch (e) {
      throw new NodenetError(ErrorCode.RuleApply, `nftables cleanup failed: ${asNodenetError(e).message}`, { cause: e });
    }
  }
}
