/**
 * overlay/status: what an agent says of its overlay (its /status `overlay`
 * and /overlay/status), and the one reader of it (`nodenet lab status`).
 * Pure.
 *
 * - backend: the backend this node runs (vxlan, host-gw, bgp);
 * - peers: the Nodes whose leases it follows;
 * - unreachable: the peers it makes no route to, and why (host-gw: not on
 *   this node's L2 network), as Overlay.unreachable() has them;
 * - bgp: each BGP session's state as BIRD's socket says it (`birdc show
 *   protocols`), with the Node it is to; or why BIRD did not answer.
 * overlayHealth() is the part /healthz tells beside kube-proxy's fields.
 */
import { readJsonText, type ObjectReader } from '../../../lib/json/read.js';
import type { UnreachablePeer } from './backend.js';

/** A BGP session as the status shows it (bgp/backend.ts BgpPeerStatus's fields). */
export interface BgpSessionStatus {
  readonly node: string | null;
  readonly peerIP: string;
  readonly protocol: string;
  /** Established, Active, Connect, OpenSent, ... (BIRD's words); Down when BIRD stopped it. */
  readonly state: string;
  readonly established: boolean;
  readonly since: string;
  /** BIRD's last error for it, '' when none. */
  readonly detail: string;
}

export interface OverlayStatus {
  readonly backend: string;
  readonly peers: readonly string[];
  readonly unreachable: readonly UnreachablePeer[];
  /** bgp only: the sessions, or why BIRD's socket did not answer. */
  readonly bgp?: { readonly sessions: readonly BgpSessionStatus[] } | { readonly error: string };
}

/** An agent's overlay status from its JSON text. @throws StateFileError naming the field when it is not one */
export function parseOverlayStatus(source: string, text: string): OverlayStatus {
  return readJsonText(source, text, (r) => {
    const bgp = r.optObject('bgp');
    return {
      backend: r.string('backend'),
      peers: r.stringArray('peers'),
      unreachable: r.objects('unreachable').map((u) => ({ node: u.string('node'), publicIP: u.string('publicIP'), reason: u.string('reason') })),
      ...(bgp ? { bgp: bgp.optString('error') !== undefined ? { error: bgp.string('error') } : { sessions: bgp.objects('sessions').map(session) } } : {}),
    };
  });
}

function session(s: ObjectReader): BgpSessionStatus {
  const node = s.raw('node');
  return {
    node: typeof node === 'string' ? node : null,
    peerIP: s.string('peerIP'),
    protocol: s.string('protocol'),
    state: s.string('state'),
    established: s.bool('established'),
    since: s.optString('since') ?? '',
    detail: s.optString('detail') ?? '',
  };
}

/** What /healthz adds of the overlay (pure): bgp's session state by peer (its Node, else its IP), the peers not routed; null when there is nothing to say. */
export function overlayHealth(s: OverlayStatus): { readonly overlay: Readonly<Record<string, unknown>> } | null {
  const notRouted = s.unreachable.map((u) => u.node);
  if (!s.bgp && !notRouted.length) return null;
  const bgp = !s.bgp ? undefined : 'error' in s.bgp ? { error: s.bgp.error } : Object.fromEntries(s.bgp.sessions.map((p) => [p.node ?? p.peerIP, p.state]));
  return { overlay: { backend: s.backend, ...(bgp ? { bgp } : {}), ...(notRouted.length ? { notRouted } : {}) } };
}
