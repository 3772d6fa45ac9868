/** bench/lookup/modes: the proxy modes the lookup benchmark compares. Pure. */
export const LOOKUP_MODES = ['iptables', 'iptables-legacy', 'nftables', 'ipvs'] as const;
export type LookupMode = (typeof LOOKUP_MODES)[number];

/** A mode's name in tables and charts; `iptables` says which backend the system's iptables is. */
export function modeLabel(m: LookupMode, iptablesBackend: 'nft' | 'legacy' | null = null): string {
  if (m === 'iptables') return iptablesBackend ? `iptables (${iptablesBackend})` : 'iptables';
  if (m === 'iptables-legacy') return 'iptables (legacy)';
  return m;
}
