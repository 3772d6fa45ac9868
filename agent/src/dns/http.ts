/**
 * dns/http: `nodenet dns`'s HTTP side, as CoreDNS's three plugins, each on its own port as in the kubeadm
 * Corefile and the coredns Deployment's probes:
 * - `prometheus :9153`: GET /metrics, the DnsMetrics registry (metrics.ts) in Prometheus text format;
 * - `health :8080`: GET /health, 200 "OK" while the process runs (CoreDNS: "We're always healthy"; with
 *   `lameduck` it keeps answering OK while the server drains, the liveness probe must not kill it);
 * - `ready :8181`: GET /ready, 200 "OK" once every plugin that reports readiness is ready, else 503 with
 *   their names sorted and comma-separated ("kubernetes" until its caches synced, as the ready plugin);
 *   "Shutting down" 503 once shutdown began (the lameduck window: the EndpointSlice drops the replica
 *   while it still answers).
 * Any other path is 404. A port of null turns that server off; 0 picks a free one (tests).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { DnsMetrics } from './metrics.js';

/** The ready plugin's list: plugins that say whether they are ready. */
export class Readiness {
  private readonly state = new Map<string, boolean>();
  private shuttingDown = false;

  /** `plugins` start not ready (default: kubernetes, the only one that waits for anything). */
  constructor(plugins: readonly string[] = ['kubernetes']) {
    for (const p of plugins) this.state.set(p, false);
  }

  /** Marks one plugin (kubernetes: the first index built). */
  set(plugin: string, ready: boolean): void {
    this.state.set(plugin, ready);
  }

  /** Marks every plugin at once (the CLI's synced hook). */
  setReady(ready: boolean): void {
    for (const p of this.state.keys()) this.state.set(p, ready);
  }

  /** From now on /ready is 503 "Shutting down" (SIGTERM's lameduck). */
  shutdown(): void {
    this.shuttingDown = true;
  }

  /** null when ready, else the body of the 503. */
  notReady(): string | null {
    if (this.shuttingDown) return 'Shutting down';
    const names = [...this.state].filter(([, r]) => !r).map(([n]) => n).sort();
    return names.length === 0 ? null : names.join(',');
  }
}

export interface DnsHttpOptions {
  readonly host: string;
  /** null: off. Defaults: 9153, 8080, 8181. */
  readonly metricsPort?: number | null;
  readonly healthPort?: number | null;
  readonly readyPort?: number | null;
  readonly metrics: DnsMetrics;
  readonly readiness: Readiness;
  readonly log: Logger;
}

export interface DnsHttp {
  /** The bound ports, null for a server turned off. */
  readonly metricsPort: number | null;
  readonly healthPort: number | null;
  readonly readyPort: number | null;
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>;

const text = (res: http.ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
};

export async function startDnsHttp(o: DnsHttpOptions): Promise<DnsHttp> {
  const log = o.log.child({ [F.subsys]: 'dns/http' });
  const servers: http.Server[] = [];
  const serve = async (port: number | null, path: string, h: Handler): Promise<number | null> => {
    if (port === null) return null;
    const srv = http.createServer((req, res) => {
      const url = (req.url ?? '').split('?')[0];
      if (url !== path) return text(res, 404, '404 page not found\n');
      Promise.resolve(h(req, res)).catch((e: unknown) => {
        log.warn({ [F.err]: e, [F.path]: path }, 'HTTP handler failed');
        if (!res.headersSent) text(res, 500, 'internal error\n');
      });
    });
    // CoreDNS's plugins: 5 s read, write and idle timeouts.
    srv.requestTimeout = 5000;
    srv.keepAliveTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, o.host, () => {
        srv.off('error', reject);
        resolve();
      });
    });
    servers.push(srv);
    return (srv.address() as AddressInfo).port;
  };
  try {
    const metricsPort = await serve(o.metricsPort === undefined ? 9153 : o.metricsPort, '/metrics', async (_req, res) => {
      text(res, 200, await o.metrics.metrics(), o.metrics.registry.contentType);
    });
    const healthPort = await serve(o.healthPort === undefined ? 8080 : o.healthPort, '/health', (_req, res) => text(res, 200, 'OK'));
    const readyPort = await serve(o.readyPort === undefined ? 8181 : o.readyPort, '/ready', (_req, res) => {
      const not = o.readiness.notReady();
      if (not === null) text(res, 200, 'OK');
      else text(res, 503, not);
    });
    return {
      metricsPort, healthPort, readyPort,
      close: async () => {
        await Promise.all(servers.map((s) => new Promise<void>((r) => {
          s.close(() => r());
          s.closeAllConnections();
        })));
      },
    };
  } catch (e) {
    for (const s of servers) s.close();
    throw e;
  }
}
