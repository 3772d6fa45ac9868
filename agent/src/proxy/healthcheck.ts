/**
 * proxy/healthcheck: kube-proxy's service health server
 * (pkg/proxy/healthcheck/service_health.go). A LoadBalancer Service with
 * externalTrafficPolicy Local has a `healthCheckNodePort`; the cloud load
 * balancer probes it on every node and sends traffic only to the nodes that
 * answer 200, because only those have an endpoint the traffic may use.
 *
 * For each such Service the proxy listens on that port, on every address
 * that serves NodePorts ("0.0.0.0" when all of them do, as kube-proxy does),
 * and answers any request with
 *   200 (local endpoints and a healthy proxy) or 503 (otherwise), and
 *   {"service": {"namespace": .., "name": ..}, "localEndpoints": N, "serviceProxyHealthy": bool}
 * plus kube-proxy's headers (X-Load-Balancing-Endpoint-Weight: N). N counts
 * the distinct IPs of this node's ready endpoints over all the Service's
 * ports (kube-proxy's LocalReadyEndpoints: terminating ones do not count).
 *
 * Driven after every successful sync from the applied snapshot: update()
 * opens servers for new Services, closes those whose Service went (or
 * changed port), and sets the counts. A port that cannot be opened (taken)
 * is logged and tried again at the next update, as kube-proxy does. Updates
 * run one after another (an internal chain), so callers may fire and
 * forget. The process runs in the node's network namespace, so the node's
 * addresses are local ones.
 */
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { ProxySnapshot, ServiceKey } from './types.js';

/** One open listener. close() is idempotent and resolves once the port is free. */
export interface HealthListener {
  close(): Promise<void>;
}

/** Opens a listener on ip:port; rejects when it cannot (EADDRINUSE, EADDRNOTAVAIL). */
export type HealthListen = (ip: string, port: number, handler: RequestListener) => Promise<HealthListener>;

/** node:http on ip:port; open connections are cut on close. */
export const httpListen: HealthListen = (ip, port, handler) =>
  new Promise((resolve, reject) => {
    const server = createServer(handler);
    const sockets = new Set<Socket>();
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    server.once('error', reject);
    server.listen({ host: ip, port, exclusive: true }, () => {
      server.off('error', reject);
      let closed: Promise<void> | null = null;
      resolve({
        close: () =>
          (closed ??= new Promise<void>((done) => {
            server.close(() => done());
            for (const s of sockets) s.destroy();
          })),
      });
    });
  });

export interface ServiceHealthServerDeps {
  readonly log: Logger;
  /** Where to listen: the node's NodePort addresses, or ['0.0.0.0'] when every address serves them. */
  readonly addresses: readonly string[];
  /** kube-proxy's serviceProxyHealthy: the proxy's rules are current. */
  readonly proxyHealthy: () => boolean;
  /** Default httpListen (tests inject failures). */
  readonly listen?: HealthListen;
}

interface Instance {
  readonly port: number;
  readonly listeners: readonly HealthListener[];
  endpoints: number;
}

/** healthCheckNodePort per Service ("ns/name") in the snapshot; a Service's ports all carry the same one. */
export function healthCheckNodePorts(snapshot: ProxySnapshot): Map<ServiceKey, number> {
  const out = new Map<ServiceKey, number>();
  for (const svc of snapshot.services.values()) {
    if (svc.healthCheckNodePort !== 0) out.set(`${svc.spn.namespace}/${svc.spn.name}`, svc.healthCheckNodePort);
  }
  return out;
}

/** Distinct IPs of this node's ready endpoints per Service (kube-proxy's EndpointsMap.LocalReadyEndpoints). */
export function localReadyEndpoints(snapshot: ProxySnapshot): Map<ServiceKey, number> {
  const ips = new Map<ServiceKey, Set<string>>();
  for (const [name, svc] of snapshot.services) {
    const key = `${svc.spn.namespace}/${svc.spn.name}`;
    for (const e of snapshot.endpoints.get(name) ?? []) {
      if (!e.isLocal || !e.ready) continue;
      let s = ips.get(key);
      if (!s) ips.set(key, (s = new Set()));
      s.add(e.ip);
    }
  }
  return new Map([...ips].map(([k, s]) => [k, s.size]));
}

/** kube-proxy's body, byte for byte (its dedented template). */
export function healthBody(key: ServiceKey, localEndpoints: number, proxyHealthy: boolean): string {
  const [namespace = '', name = ''] = key.split('/');
  return [
    '{',
    '\t"service": {',
    `\t\t"namespace": ${JSON.stringify(namespace)},`,
    `\t\t"name": ${JSON.stringify(name)}`,
    '\t},',
    `\t"localEndpoints": ${localEndpoints},`,
    `\t"serviceProxyHealthy": ${proxyHealthy}`,
    '}',
  ].join('\n');
}

export class ServiceHealthServer {
  private readonly log: Logger;
  private readonly listen: HealthListen;
  private readonly services = new Map<ServiceKey, Instance>();
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly deps: ServiceHealthServerDeps) {
    this.log = deps.log.child({ [F.subsys]: 'proxy/healthcheck' });
    this.listen = deps.listen ?? httpListen;
  }

  /** Brings servers and counts in line with an applied snapshot. Never rejects; runs after any update in flight. */
  update(snapshot: ProxySnapshot): Promise<void> {
    const ports = healthCheckNodePorts(snapshot);
    const counts = localReadyEndpoints(snapshot);
    return this.enqueue(async () => {
      await this.syncServices(ports);
      this.syncEndpoints(counts);
    });
  }

  /** Services with an open server, and their ports (for the status and tests). */
  listening(): Map<ServiceKey, number> {
    return new Map([...this.services].map(([k, i]) => [k, i.port]));
  }

  /** Closes every server; later updates do nothing. */
  close(): Promise<void> {
    return this.enqueue(async () => {
      this.closed = true;
      await this.syncServices(new Map());
    });
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const p = this.chain.then(fn).catch((err: unknown) => this.log.error({ [F.err]: err }, 'health check update failed'));
    this.chain = p;
    return p;
  }

  private async syncServices(want: ReadonlyMap<ServiceKey, number>): Promise<void> {
    for (const [key, inst] of [...this.services]) {
      if (want.get(key) === inst.port) continue;
      this.services.delete(key);
      this.log.info({ [F.svc]: key }, `closing health check server on port ${inst.port}`);
      await Promise.all(inst.listeners.map((l) => l.close()));
    }
    if (this.closed) return;
    for (const [key, port] of want) {
      if (this.services.has(key)) continue;
      const listeners: HealthListener[] = [];
      try {
        for (const ip of this.deps.addresses) listeners.push(await this.listen(ip, port, (req, res) => this.answer(key, req, res)));
      } catch (err) {
        await Promise.all(listeners.map((l) => l.close()));
        this.log.error({ [F.svc]: key, [F.err]: err }, `cannot open the health check server on port ${port} (${this.deps.addresses.join(', ')}); trying again at the next sync`);
        continue;
      }
      this.services.set(key, { port, listeners, endpoints: 0 });
      this.log.info({ [F.svc]: key }, `health check server on ${this.deps.addresses.map((ip) => `${ip}:${port}`).join(', ')}`);
    }
  }

  private syncEndpoints(counts: ReadonlyMap<ServiceKey, number>): void {
    for (const [key, inst] of this.services) inst.endpoints = counts.get(key) ?? 0;
  }

  private answer(key: ServiceKey, _req: IncomingMessage, res: ServerResponse): void {
    const inst = this.services.get(key);
    if (!inst) {
      // A request that raced the close.
      res.destroy();
      return;
    }
    const healthy = this.deps.proxyHealthy();
    const n = inst.endpoints;
    res.writeHead(n !== 0 && healthy ? 200 : 503, {
      'Content-Type': 'application/json',
      'X-Content-Type-Options': 'nosniff',
      'X-Load-Balancing-Endpoint-Weight': String(n),
    });
    res.end(healthBody(key, n, healthy));
  }
}
