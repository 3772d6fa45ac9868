/**
 * node/health-server: the agent's HTTP endpoints, on two listeners as
 * kube-proxy has them (loopback by default):
 *   metricsBindAddress (127.0.0.1:10249): /metrics (Prometheus text),
 *     /status (what <runDir>/proxy-status.json holds, live, and the
 *     overlay's status under `overlay`; also /proxy/status),
 *     /overlay/status (the overlay's alone: its backend, its peers, those
 *     it does not route and why, each BGP session's state from BIRD's
 *     socket), /proxyMode, and the health endpoints below;
 *   healthzBindAddress (127.0.0.1:10256): /healthz, /livez, /readyz.
 * When both name the same address (but port 0), one listener serves
 * everything. Port 0 binds a free port; the bound addresses are on the returned object and in
 * the log.
 *
 * /healthz and /livez mean what kube-proxy's mean: 200 unless a change has
 * waited too long for a successful sync, with a JSON body
 * {"lastUpdated": ..., "currentTime": ...} (RFC 3339 here; kube-proxy prints
 * Go's time format). As upstream, lastUpdated is now while healthy, the last
 * successful sync otherwise (Go's zero time before any). kube-proxy's
 * nodeEligible (a Node being deleted fails /healthz) is not tracked. With
 * the bgp backend (or peers the overlay does not route) the body also says
 * `overlay`: each BGP session's state by peer, read from BIRD's socket at
 * each probe; it never turns the verdict.
 * /readyz: 200 once the agent serves CNI calls and, with a proxy mode, the
 * proxy's first sync with its source succeeded; 503 with the reason before.
 *
 * The server only speaks HTTP: what it reports comes from a HealthSource the
 * agent builds (node/agent.ts) over AgentMetrics (node/agent-metrics.ts).
 * A listener that cannot bind fails start() naming its config field.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { splitBindAddress } from '../config/config.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { HealthReport } from './agent-metrics.js';
import type { ProxyStatus } from './proxy-status.js';
import type { OverlayStatus } from '../overlay/status.js';

export interface HealthSource {
  /** The /healthz or /livez verdict (each call is one probe: it is counted). */
  probe(kind: 'healthz' | 'livez'): HealthReport;
  /** Null when ready, else why not (the /readyz body). */
  notReady(): string | null;
  metrics(): Promise<{ readonly contentType: string; readonly text: string }>;
  /** The proxy's status; 'none' without a proxy mode, 'starting' before the proxy started. */
  status(): ProxyStatus | 'none' | 'starting';
  proxyMode(): string;
  /** The overlay's status (overlay/status.ts); absent without an overlay, null before it started. */
  overlayStatus?(): Promise<OverlayStatus | null>;
  /** Fields /healthz and /livez add to kube-proxy's body (the overlay's BGP sessions); null: none. Never changes the verdict. */
  healthDetail?(): Promise<Readonly<Record<string, unknown>> | null>;
}

export interface HealthServerOptions {
  /** "IP:PORT" (config metricsBindAddress); null: no metrics listener. */
  readonly metricsBindAddress: string | null;
  /** "IP:PORT" (config healthzBindAddress); null: no healthz listener. */
  readonly healthzBindAddress: string | null;
  readonly source: HealthSource;
  readonly log: Logger;
}

export interface HealthServer {
  /** The metrics listener's bound address ("127.0.0.1:41234"), null when off. */
  readonly metricsAddress: string | null;
  /** The healthz listener's bound address, null when off (the metrics one's when both were the same). */
  readonly healthzAddress: string | null;
  /** Stops both listeners and drops open connections. Idempotent. */
  close(): Promise<void>;
}

/** Go's zero time.Time, which kube-proxy prints for "never". */
const ZERO_TIME = '0001-01-01T00:00:00Z';

/** What /healthz and /livez answer: kube-proxy's body, and nodenet's detail after its two fields when there is one. */
export function healthBody(r: HealthReport, detail?: Readonly<Record<string, unknown>> | null): string {
  const iso = (ms: number | null) => (ms === null ? ZERO_TIME : new Date(ms).toISOString());
  const own = { lastUpdated: iso(r.lastUpdated), currentTime: iso(r.currentTime) };
  // kube-proxy's fields first, and never overwritten by the detail.
  return `${JSON.stringify(detail ? Object.assign({ ...own }, detail, own) : own)}\n`;
}

type Route = (src: HealthSource) => Promise<{ readonly code: number; readonly type: string; readonly body: string }>;

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';

const probe = (kind: 'healthz' | 'livez'): Route => async (src) => {
  const r = src.probe(kind);
  // The detail is told, never judged: a BGP session down is the network's state, not the agent's health.
  const detail = src.healthDetail ? await src.healthDetail().catch(() => null) : null;
  return { code: r.healthy ? 200 : 503, type: JSON_TYPE, body: healthBody(r, detail) };
};

const HEALTH_ROUTES: Readonly<Record<string, Route>> = {
  '/healthz': probe('healthz'),
  '/livez': probe('livez'),
  '/readyz': async (src) => {
    const why = src.notReady();
    return why === null ? { code: 200, type: TEXT_TYPE, body: 'ok\n' } : { code: 503, type: TEXT_TYPE, body: `not ready: ${why}\n` };
  },
};

const status: Route = async (src) => {
  const st = src.status();
  if (st === 'none') return { code: 404, type: JSON_TYPE, body: `${JSON.stringify({ error: 'this agent runs without a proxy mode' })}\n` };
  if (st === 'starting') return { code: 503, type: JSON_TYPE, body: `${JSON.stringify({ error: 'the proxy is starting' })}\n` };
  const overlay = src.overlayStatus ? await src.overlayStatus() : null;
  return { code: 200, type: JSON_TYPE, body: `${JSON.stringify(overlay ? { ...st, overlay } : st, null, 2)}\n` };
};

const overlayStatus: Route = async (src) => {
  if (!src.overlayStatus) return { code: 404, type: JSON_TYPE, body: `${JSON.stringify({ error: 'this agent runs without an overlay' })}\n` };
  const st = await src.overlayStatus();
  if (!st) return { code: 503, type: JSON_TYPE, body: `${JSON.stringify({ error: 'the overlay is starting' })}\n` };
  return { code: 200, type: JSON_TYPE, body: `${JSON.stringify(st, null, 2)}\n` };
};

const METRICS_ROUTES: Readonly<Record<string, Route>> = {
  ...HEALTH_ROUTES,
  '/metrics': async (src) => {
    const m = await src.metrics();
    return { code: 200, type: m.contentType, body: m.text };
  },
  '/status': status,
  '/proxy/status': status,
  '/overlay/status': overlayStatus,
  '/proxyMode': async (src) => ({ code: 200, type: TEXT_TYPE, body: `${src.proxyMode()}\n` }),
};

function handler(routes: Readonly<Record<string, Route>>, src: HealthSource, log: Logger) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0]!;
    const send = (code: number, type: string, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(code, { 'Content-Type': type, 'X-Content-Type-Options': 'nosniff', 'Content-Length': Buffer.byteLength(body), ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    if (!route) return send(404, TEXT_TYPE, `404 page not found (try ${Object.keys(routes).sort().join(', ')})\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, TEXT_TYPE, `${req.method ?? '?'} not allowed\n`, { Allow: 'GET, HEAD' });
    route(src).then(
      (r) => send(r.code, r.type, r.body),
      (err: unknown) => {
        log.warn({ [F.err]: err, [F.path]: path }, 'health server request failed');
        send(500, TEXT_TYPE, 'internal error\n');
      },
    );
  };
}

function listen(server: Server, field: string, addr: string): Promise<string> {
  const hp = splitBindAddress(addr);
  if (!hp) return Promise.reject(new NodenetError(ErrorCode.InvalidConfig, `config ${field}: ${JSON.stringify(addr)} is not IP:PORT`));
  return new Promise((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) =>
      reject(new NodenetError(ErrorCode.InvalidConfig, `config ${field}: cannot listen on ${addr}: ${e.code ?? e.message}${e.code === 'EADDRINUSE' ? ' (another process has it; "" or 0 turns this listener off)' : ''}`, { cause: e }));
    server.once('error', onError);
    server.listen({ host: hp.host, port: hp.port }, () => {
      server.off('error', onError);
      const a = server.address() as AddressInfo;
      resolve(a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
    });
  });
}

function closeServer(s: Server): Promise<void> {
  return new Promise((resolve) => {
    s.close(() => resolve());
    s.closeAllConnections();
  });
}

export async function startHealthServer(o: HealthServerOptions): Promise<HealthServer> {
  const log = o.log.child({ [F.subsys]: 'health-server' });
  const servers: Server[] = [];
  const start = async (field: string, addr: string, routes: Readonly<Record<string, Route>>): Promise<string> => {
    const s = createServer(handler(routes, o.source, log));
    servers.push(s);
    return listen(s, field, addr);
  };
  let metricsAddress: string | null = null;
  let healthzAddress: string | null = null;
  try {
    if (o.metricsBindAddress) metricsAddress = await start('metricsBindAddress', o.metricsBindAddress, METRICS_ROUTES);
    // The same address twice is one listener (two binds would fail), but for port 0, which asks for two ports.
    if (o.healthzBindAddress && o.healthzBindAddress === o.metricsBindAddress && splitBindAddress(o.healthzBindAddress)?.port !== 0) healthzAddress = metricsAddress;
    else if (o.healthzBindAddress) healthzAddress = await start('healthzBindAddress', o.healthzBindAddress, HEALTH_ROUTES);
  } catch (e) {
    await Promise.all(servers.filter((s) => s.listening).map(closeServer));
    throw e;
  }
  if (metricsAddress) log.info(`metrics and status on http://${metricsAddress} (/metrics, /status, /overlay/status, /healthz, /livez, /readyz)`);
  if (healthzAddress && healthzAddress !== metricsAddress) log.info(`health checks on http://${healthzAddress} (/healthz, /livez, /readyz)`);
  let closing: Promise<void> | undefined;
  return {
    metricsAddress,
    healthzAddress,
    close() {
      closing ??= Promise.all(servers.map(closeServer)).then(() => undefined);
      return closing;
    },
  };
}
