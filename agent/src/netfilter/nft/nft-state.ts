/**
 * netfilter/nft-state: an in-memory picture of one nftables table.
 *
 * The validating fake (nft.fake.ts) keeps its state in this shape, the
 * listing parser (nft-listing.ts) turns `nft list table` text into it, and
 * the packet tracer (trace/nft-tracer.ts) walks it. Rules are kept as text
 * (the tracer recognises the pieces we write with narrow regexps, as
 * kube-proxy's helpers_test.go does); set and map elements are parsed into
 * key/value strings so lookups are exact.
 */

export type NftFamily = 'ip' | 'ip6' | 'inet';

export interface NftBaseChain {
  /** filter | nat | route */
  readonly type: string;
  /** prerouting | input | forward | output | postrouting */
  readonly hook: string;
  /** Numeric priority (named priorities such as dstnat resolved). */
  readonly priority: number;
}

export interface NftChainState {
  readonly name: string;
  /** null for a regular chain (reached only by jump/goto). */
  base: NftBaseChain | null;
  comment: string | null;
  rules: string[];
}

export interface NftElementState {
  /** The verdict or value of a map element ("goto chain", "drop"); null in a plain set. */
  readonly value: string | null;
  readonly comment: string | null;
}

export interface NftSetState {
  readonly name: string;
  readonly kind: 'set' | 'map';
  /** Key types in order, e.g. ['ipv4_addr', 'inet_proto', 'inet_service']. */
  readonly keyTypes: readonly string[];
  /** The data type of a map ('verdict'); null for a set. */
  readonly dataType: string | null;
  flags: string[];
  /** Default element timeout in seconds, or null. */
  timeout: number | null;
  comment: string | null;
  /** Keyed by the element key joined with ' . ' (e.g. "172.30.0.41 . tcp . 80"). */
  elements: Map<string, NftElementState>;
}

export interface NftTableState {
  readonly family: NftFamily;
  readonly name: string;
  comment: string | null;
  chains: Map<string, NftChainState>;
  /** Sets and maps share one namespace in a table. */
  sets: Map<string, NftSetState>;
}

export function tableKey(family: NftFamily, name: string): string {
  return `${family} ${name}`;
}

export function emptyTable(family: NftFamily, name: string): NftTableState {
  return { family, name, comment: null, chains: new Map(), sets: new Map() };
}

export function cloneTable(t: NftTableState): NftTableState {
  const chains = new Map<string, NftChainState>();
  for (const [k, c] of t.chains) chains.set(k, { name: c.name, base: c.base, comment: c.comment, rules: [...c.rules] });
  const sets = new Map<string, NftSetState>();
  for (const [k, s] of t.sets) {
    sets.set(k, {
      name: s.name,
      kind: s.kind,
      keyTypes: s.keyTypes,
      dataType: s.dataType,
      flags: [...s.flags],
      timeout: s.timeout,
      comment: s.comment,
      elements: new Map(s.elements),
    });
  }
  return { family: t.family, name: t.name, comment: t.comment, chains, sets };
}

/** Named base-chain priorities as nft prints them (`priority dstnat + 10`). */
export const NAMED_PRIORITIES: Readonly<Record<string, number>> = {
  raw: -300,
  mangle: -150,
  dstnat: -100,
  filter: 0,
  security: 50,
  srcnat: 100,
};

/** Parses "-110", "dstnat", "dstnat + 10", "filter - 5". Returns null when it is none of these. */
export function parsePriority(s: string): number | null {
  const t = s.trim();
  if (/^-?\d+$/.test(t)) return Number(t);
  const m = /^([a-z]+)\s*(?:([+-])\s*(\d+))?$/.exec(t);
  if (!m) return null;
  const base = NAMED_PRIORITIES[m[1]!];
  if (base === undefined) return null;
  if (!m[2]) return base;
  return m[2] === '+' ? base + Number(m[3]) : base - Number(m[3]);
}
