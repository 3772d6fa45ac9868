/**
 * overlay/masquerade: flannel's masquerade rules (its MasqRules), as one
 * nftables table of the overlay's own, written with one `nft -f` when the
 * overlay starts (idempotent: the chain is flushed and rewritten):
 *
 *   table ip nodenet-overlay {
 *     chain postrouting {
 *       type nat hook postrouting priority srcnat; policy accept;
 *       ip saddr <cluster> ip daddr <cluster> return                  # pod to pod: the source stays
 *       ip saddr != <cluster> ip daddr <this node's pods> return      # from outside to a pod here: untouched
 *       ip saddr <cluster> ip daddr != 224.0.0.0/4 masquerade fully-random   # a pod leaving the cluster network
 *       ip saddr != <cluster> ip daddr <cluster> masquerade fully-random     # the host (or outside) to a remote pod
 *     }
 *   }
 *
 * flannel also returns early for kube-proxy's masquerade mark; with nftables
 * that would change nothing (a `return` in one nat base chain does not stop
 * another one at the same hook), and the proxy masquerades those itself.
 * For the same reason the CNI's own ipMasq table must not masquerade the
 * pods of an overlay node (their CNI config says ipMasq false): it would
 * hide pod sources from each other.
 */
import type { Nft } from '../netfilter/nft/nft.js';

export const OVERLAY_TABLE = 'nodenet-overlay';

/** The table's script. Pure. */
export function overlayMasqueradeScript(o: { readonly clusterCIDR: string; readonly podCIDR: string }): string {
  const t = `ip ${OVERLAY_TABLE}`;
  const c = o.clusterCIDR;
  return [
    `add table ${t} { comment "nodenet overlay: flannel's masquerade rules"; }`,
    `add chain ${t} postrouting { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} postrouting`,
    `add rule ${t} postrouting ip saddr ${c} ip daddr ${c} return comment "pod to pod keeps its source"`,
    `add rule ${t} postrouting ip saddr != ${c} ip daddr ${o.podCIDR} return comment "from outside to this node's pods"`,
    `add rule ${t} postrouting ip saddr ${c} ip daddr != 224.0.0.0/4 masquerade fully-random comment "pods leaving the cluster network"`,
    `add rule ${t} postrouting ip saddr != ${c} ip daddr ${c} masquerade fully-random comment "the host to remote pods"`,
    '',
  ].join('\n');
}

export async function setupOverlayMasquerade(nft: Nft, o: { readonly clusterCIDR: string; readonly podCIDR: string }): Promise<void> {
  await nft.apply(overlayMasqueradeScript(o));
}

/** Removes the table. Idempotent. */
export async function removeOverlayMasquerade(nft: Nft): Promise<void> {
  await nft.deleteTable('ip', OVERLAY_TABLE);
}
