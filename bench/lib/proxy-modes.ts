/**
 * bench/lib/proxy-modes: the proxy modes the Service benches (bench:proxy,
 * bench:programming) run, how a flag names them and how a table labels them.
 * Pure.
 *
 * `iptables` is whatever `iptables -V` reports (nf_tables here);
 * `iptables-legacy` forces the legacy backend; `nftables` is kube-proxy's
 * one-table layout and `nftables-sharded` the agent's default, BENCH_NFT_SHARDS
 * shard tables; `ipvs` needs the kernel's IPVS.
 */
import { FlagError } from '../../agent/src/cli/flags.js';

export const BENCH_MODES = ['iptables', 'nftables', 'iptables-legacy', 'nftables-sharded', 'ipvs'] as const;
export type BenchMode = (typeof BENCH_MODES)[number];
/** The shard count of mode nftables-sharded (the agent's nftablesShards default). */
export const BENCH_NFT_SHARDS = 8;

export function isBenchMode(v: unknown): v is BenchMode {
  return typeof v === 'string' && (BENCH_MODES as readonly string[]).includes(v);
}

/** One of BENCH_MODES. @throws FlagError naming the flag */
export function mode(flag: string, s: string): BenchMode {
  if (!isBenchMode(s)) throw new FlagError(`--${flag}: unknown mode ${JSON.stringify(s)} (one of ${BENCH_MODES.join(', ')})`);
  return s;
}

/** A table's label for a mode: the iptables backend it ran on, the shard count, where IPVS ran. */
export function modeLabel(r: { readonly mode: BenchMode; readonly iptablesBackend: 'nft' | 'legacy' | null; readonly where?: string }): string {
  if (r.mode === 'nftables-sharded') return `nftables (${BENCH_NFT_SHARDS} shards)`;
  if (r.mode === 'ipvs') return r.where ? `IPVS (${r.where})` : 'IPVS';
  return r.mode === 'nftables' ? 'nftables' : `iptables (${r.iptablesBackend ?? (r.mode === 'iptables-legacy' ? 'legacy' : '?')})`;
}
