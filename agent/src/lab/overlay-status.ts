/**
 * lab/overlay-status: what `nodenet lab status` shows of each node's overlay,
 * read from the node's agent: its /overlay/status (node/health-server.ts) on
 * the agent's metrics address, which is loopback inside the node's
 * namespace, so the request is made from there (a `node -e` fetch under
 * nsenter: no tool beyond node itself). The agent's answer holds the
 * backend, the peers it follows and those it does not route (host-gw), and
 * for bgp each session's state as BIRD's socket says it.
 *
 * overlayRows() turns the answers into the table's rows (pure): a row per
 * peer, with its state: Established / Active / Connect ... for bgp (BIRD's
 * words, its last error beside), routed or not routed (and why) otherwise.
 */
import type { Runner } from '../exec/runner.js';
import { parseOverlayStatus, type OverlayStatus } from '../overlay/status.js';

/** The agent's metrics address when its config names none (config.ts's default). */
export const DEFAULT_METRICS_ADDRESS = '127.0.0.1:10249';

export interface NodeOverlay {
  readonly node: string;
  readonly status: OverlayStatus | null;
  /** Why the agent gave no status (not running, no answer, not JSON...). */
  readonly error: string | null;
}

export const OVERLAY_HEADERS = ['NODE', 'BACKEND', 'PEER', 'PEER IP', 'STATE', 'SINCE', 'INFO'] as const;

/** The table's rows, a row per node and peer (pure). */
export function overlayRows(list: readonly NodeOverlay[]): string[][] {
  const rows: string[][] = [];
  for (const n of list) {
    const s = n.status;
    if (!s) {
      rows.push([n.node, '-', '-', '-', 'unknown', '-', n.error ?? 'no status']);
      continue;
    }
    if (s.bgp && 'error' in s.bgp) {
      rows.push([n.node, s.backend, '-', '-', 'unknown', '-', `BIRD did not answer: ${s.bgp.error}`]);
      continue;
    }
    if (s.bgp) {
      if (!s.bgp.sessions.length) rows.push([n.node, s.backend, '-', '-', 'no sessions', '-', s.peers.length ? `peers ${s.peers.join(', ')} but no BGP session` : 'no peers']);
      for (const p of s.bgp.sessions) rows.push([n.node, s.backend, p.node ?? '?', p.peerIP, p.state, p.since || '-', p.detail || '-']);
      continue;
    }
    if (!s.peers.length && !s.unreachable.length) rows.push([n.node, s.backend, '-', '-', 'no peers', '-', '-']);
    const unreachable = new Map(s.unreachable.map((u) => [u.node, u] as const));
    for (const p of s.peers) {
      const u = unreachable.get(p);
      rows.push(u ? [n.node, s.backend, p, u.publicIP, 'not routed', '-', u.reason] : [n.node, s.backend, p, '-', 'routed', '-', '-']);
    }
    for (const u of s.unreachable) if (!s.peers.includes(u.node)) rows.push([n.node, s.backend, u.node, u.publicIP, 'not routed', '-', u.reason]);
  }
  return rows;
}

/** A fetch of `url` whose body goes to stdout; exit 1 on an HTTP error (the body then says why), 2 when none answered. */
function fetchScript(url: string): string {
  return `fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(4000) }).then(async (r) => { const b = await r.text(); if (r.ok) process.stdout.write(b); else process.stderr.write('HTTP ' + r.status + ': ' + b); process.exitCode = r.ok ? 0 : 1; }, (e) => { process.stderr.write(String(e && e.cause ? e.cause.message || e.cause : e)); process.exitCode = 2; });`;
}

/** A node agent's overlay status, asked in its namespace (`netns`, a path) at its metrics address. Never throws. */
export async function readNodeOverlay(runner: Runner, node: string, netns: string, metricsAddress = DEFAULT_METRICS_ADDRESS): Promise<NodeOverlay> {
  const url = `http://${metricsAddress}/overlay/status`;
  try {
    const r = await runner.run([process.execPath, '-e', fetchScript(url)], { netns, allowFailure: true, timeoutMs: 8_000 });
    if (r.exitCode !== 0) return { node, status: null, error: `${url}: ${r.stderr.trim() || `exit ${r.exitCode}`}` };
    return { node, status: parseOverlayStatus(url, r.stdout), error: null };
  } catch (e) {
    return { node, status: null, error: e instanceof Error ? e.message : String(e) };
  }
}
