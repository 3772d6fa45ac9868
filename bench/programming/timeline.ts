/**
 * bench/programming/timeline: where a fresh agent's time goes, and which
 * sync applied each change, read from the logs the processes already write.
 * Pure: the caller reads the files.
 *
 * Both logs are pino JSON lines with an ISO `time` (ms). The agent's (its
 * node.logFile, at debug) has the markers; the control plane's logs one
 * line per request (`msg: "request"`, verb, path, user, durationMs), so the
 * moment the agent's lists reached the server is on the server's side:
 *   spawn (the bench's clock)
 *   → the agent's first request to the API server (process start-up: Node, the bundle, the config)
 *   → "pod CIDR from the Node object" (registration: the Node, its Lease, node IPAM's podCIDR)
 *   → its LIST of Services / EndpointSlices received (the rest of start-up: metrics and CNI servers,
 *     masquerade, sysctls, removing the other mode's rules)
 *   → both lists served (the later of the two LIST lines' end)
 *   → both watches requested (a WATCH line is written when the watch ends, with its duration: read
 *     the server's log after the agent stopped): in between, client-node decoded the lists and the
 *     proxy's handlers took every object
 *   → "proxy started" (both watches open: client-node resolves its start() then)
 *   → the first sync starts (its "proxy rules synced" line's time minus its durationMs)
 *   → it ends (of which the backend's own line: render + apply)
 *   → the status file showing every Service (written after the sync, then noticed by the bench).
 * One clock: the processes run on this machine.
 */

export interface LogLine {
  /** Epoch ms. */
  readonly time: number;
  readonly msg: string;
  readonly level: number;
  readonly subsys: string | null;
  readonly durationMs: number | null;
  readonly scope: string | null;
  readonly verb: string | null;
  readonly path: string | null;
  readonly user: string | null;
  /** The error's message, when the line carries one (pino's `err`). */
  readonly err: string | null;
}

const str = (o: Record<string, unknown>, k: string): string | null => (typeof o[k] === 'string' ? (o[k] as string) : null);
const num = (o: Record<string, unknown>, k: string): number | null => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? (o[k] as number) : null);

/** The lines that are pino JSON with a time and a message; anything else (a crash's stack on stderr) is skipped. */
export function parseLog(text: string): LogLine[] {
  const out: LogLine[] = [];
  for (const raw of text.split('\n')) {
    if (!raw.startsWith('{')) continue;
    let o: unknown;
    try {
      o = JSON.parse(raw);
    } catch {
      continue;
    }
    if (typeof o !== 'object' || o === null) continue;
    const r = o as Record<string, unknown>;
    const t = typeof r['time'] === 'string' ? Date.parse(r['time']) : num(r, 'time');
    const msg = str(r, 'msg');
    if (t === null || !Number.isFinite(t) || msg === null) continue;
    const e = r['err'];
    const err = typeof e === 'object' && e !== null ? str(e as Record<string, unknown>, 'message') : typeof e === 'string' ? e : null;
    out.push({
      time: t, msg, level: num(r, 'level') ?? 0, subsys: str(r, 'subsys'), durationMs: num(r, 'durationMs'), scope: str(r, 'scope'),
      verb: str(r, 'verb'), path: str(r, 'path'), user: str(r, 'user'), err,
    });
  }
  return out;
}

export const SERVICES_LIST_PATH = '/api/v1/services';
export const SLICES_LIST_PATH = '/apis/discovery.k8s.io/v1/endpointslices';
const SYNCED = 'proxy rules synced';
const FAILED = 'proxy sync failed';
const isBackendLine = (l: LogLine) => (l.subsys === 'proxy/nftables' || l.subsys === 'proxy/iptables') && / sync: /.test(l.msg) && l.durationMs !== null;

export interface SyncLine {
  readonly start: number;
  readonly end: number;
  readonly durationMs: number;
  readonly scope: string | null;
  /** The backend's own time (render + apply) from its debug line; null when not logged. */
  readonly backendMs: number | null;
  /** The rules its debug line counts ("... sync: N rules"). */
  readonly rules: number | null;
}

/** The sync whose "proxy rules synced" line is `line`, with the backend line logged just before it. */
function syncOf(lines: readonly LogLine[], i: number): SyncLine {
  const l = lines[i]!;
  let backendMs: number | null = null;
  let rules: number | null = null;
  for (let j = i - 1; j >= 0 && lines[j]!.time >= l.time - l.durationMs! - 1; j--) {
    const b = lines[j]!;
    if (isBackendLine(b)) {
      backendMs = b.durationMs;
      const m = / sync: (\d+) rules/.exec(b.msg);
      rules = m ? Number(m[1]) : null;
      break;
    }
    if (b.msg.startsWith(SYNCED)) break;
  }
  return { start: l.time - l.durationMs!, end: l.time, durationMs: l.durationMs!, scope: l.scope, backendMs, rules };
}

/** The sync attempts the agent logged as failed from `since` (epoch ms) on, and the first one's error. */
export function failedSyncs(agent: readonly LogLine[], since: number): { count: number; firstError: string | null } {
  const failed = agent.filter((l) => l.msg.startsWith(FAILED) && l.time >= since);
  return { count: failed.length, firstError: failed[0]?.err ?? null };
}

export interface FreshPhases {
  /** spawn → the agent's first API request received. */
  readonly startupMs: number;
  /** → its pod CIDR known (registration). */
  readonly registrationMs: number;
  /** → its first LIST received by the server. */
  readonly agentStartMs: number;
  /** → "proxy started": both lists served, decoded and handed to the proxy, both watches open. */
  readonly listMs: number;
  /** Of it: → both lists served (the server's side, the two lists concurrent). */
  readonly servedMs: number;
  /** → both watches requested: client-node's decoding and the handlers; null without the WATCH lines. */
  readonly deliverMs: number | null;
  /** → "proxy started"; null without the WATCH lines. */
  readonly watchOpenMs: number | null;
  /** → the first successful sync starts (failed attempts before it are in here). */
  readonly queueMs: number;
  /** Sync attempts that failed before the first success, and the first one's error. */
  readonly failedSyncs: number;
  readonly firstError: string | null;
  /** The first (full) sync, as the agent reports it. */
  readonly syncMs: number;
  /** Of it, the backend's render + apply (null when its debug line is missing). */
  readonly backendMs: number | null;
  /** The rules the backend counted in it. */
  readonly rules: number | null;
  /** Sync end → the bench saw the status file with every Service (status write + notice). */
  readonly statusMs: number;
  /** spawn → seen. */
  readonly totalMs: number;
}

/**
 * The phases of a fresh agent's start, or a list of what is missing from
 * the logs. `user` is the agent's API user (system:node:<name>); only
 * lines after `spawnAt` count.
 */
export function freshPhases(o: { spawnAt: number; seenAt: number; agent: readonly LogLine[]; server: readonly LogLine[]; user: string }): FreshPhases | { missing: string[] } {
  const after = (l: LogLine) => l.time >= Math.floor(o.spawnAt);
  const startOf = (l: LogLine) => l.time - (l.durationMs ?? 0);
  // A request line is written at its end: what counts is when it was received.
  const reqs = o.server.filter((l) => startOf(l) >= Math.floor(o.spawnAt) && l.msg === 'request' && l.user === o.user).sort((a, b) => startOf(a) - startOf(b));
  const agent = o.agent.filter(after);
  const missing: string[] = [];
  const first = reqs[0];
  if (!first) missing.push(`a request by ${o.user} in the server's log`);
  const lists = [SERVICES_LIST_PATH, SLICES_LIST_PATH].map((p) => reqs.find((l) => l.verb === 'list' && l.path === p));
  if (lists.some((l) => !l)) missing.push('the agent\'s LISTs of Services and EndpointSlices in the server\'s log');
  // With a configured pod CIDR the agent logs no "pod CIDR from the Node object": registration ends at "node registered".
  const cidr = agent.find((l) => l.msg === 'pod CIDR from the Node object') ?? agent.find((l) => l.msg === 'node registered');
  if (!cidr) missing.push('"pod CIDR from the Node object" in the agent\'s log');
  const started = agent.find((l) => l.msg.startsWith('proxy started'));
  if (!started) missing.push('"proxy started" in the agent\'s log');
  const si = agent.findIndex((l) => l.msg.startsWith(SYNCED) && l.scope === 'full' && l.durationMs !== null);
  if (si < 0) missing.push('the first full "proxy rules synced" in the agent\'s log');
  if (missing.length || !first || !cidr || !started || si < 0) return { missing };
  const ls = lists as LogLine[];
  const listStart = Math.min(...ls.map(startOf));
  const served = Math.max(...ls.map((l) => l.time));
  // Each watch is requested after its own list was delivered (the later of the two, after both: no negative phase).
  const watches = ls.map((list) => reqs.find((l) => l.verb === 'watch' && l.path === list.path && startOf(l) >= list.time - 1));
  const watched = watches.every((w) => w) ? Math.max(...(watches as LogLine[]).map(startOf)) : null;
  const firstAt = startOf(first);
  const sync = syncOf(agent, si);
  const failed = failedSyncs(agent.slice(0, si), started.time);
  return {
    startupMs: firstAt - o.spawnAt,
    registrationMs: cidr.time - firstAt,
    agentStartMs: listStart - cidr.time,
    listMs: started.time - listStart,
    servedMs: served - listStart,
    deliverMs: watched === null ? null : watched - served,
    watchOpenMs: watched === null ? null : started.time - watched,
    queueMs: sync.start - started.time,
    failedSyncs: failed.count,
    firstError: failed.firstError,
    syncMs: sync.durationMs,
    backendMs: sync.backendMs,
    rules: sync.rules,
    statusMs: o.seenAt - sync.end,
    totalMs: o.seenAt - o.spawnAt,
  };
}

/**
 * The sync that applied a change written at `sentAt` and seen in the status
 * at `seenAt` (epoch ms): the last one to end in between. Log times are
 * whole ms, so the window is widened by 1 ms each side.
 */
export function syncFor(agent: readonly LogLine[], sentAt: number, seenAt: number): SyncLine | null {
  for (let i = agent.length - 1; i >= 0; i--) {
    const l = agent[i]!;
    if (l.time > seenAt + 1) continue;
    if (l.time < sentAt - 1) return null;
    if (l.msg.startsWith(SYNCED) && l.durationMs !== null) return syncOf(agent, i);
  }
  return null;
}
