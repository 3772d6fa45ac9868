/**
 * watch/api-balancer: client-side failover to every API server, as k3s's
 * agent load balancer does it (pkg/agent/loadbalancer): every client in the
 * agent (the node's registration and Lease, the proxy's and the overlay's
 * watches, the embedded kubelet) dials a TCP listener on this node's
 * 127.0.0.1, which passes each connection on to one API server.
 *
 * - It starts from the configured server (the kubeconfig's, usually a load
 *   balancer's address), then follows the `kubernetes` EndpointSlice,
 *   which lists the live API servers (controlplane/controllers/apiserver-
 *   endpoints.ts), watched through itself. The configured server stays the
 *   fallback for when no listed server answers.
 * - Every server is health-checked every second (GET /readyz over TLS with
 *   the cluster's CA): a server that fails, or whose /readyz is red (it is
 *   stopping), is passed over, and the connections it carries are closed at
 *   once, so that the clients' watches break and resume on another server
 *   from their last resourceVersion instead of hanging on a dead one.
 * - A new connection goes to the server in use while it is healthy (no
 *   flapping), else to the next healthy one in the list's order.
 * - TLS is end to end: the balancer sees bytes only. Clients dial
 *   https://127.0.0.1:<port>, so every server's certificate must cover
 *   127.0.0.1 (nodenet's always do, as k3s's do); when the configured
 *   server's does not, the balancer is not used and the agent says why.
 *
 * selectServer() is the pure rule; ApiBalancer the sockets and timers.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { request } from 'node:https';
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';

export interface ServerAddr {
  readonly host: string;
  readonly port: number;
}

export const addrKey = (a: ServerAddr): string => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);

/**
 * The server a new connection goes to: the current one while it is healthy, else the first healthy one after it
 * in the list (wrapping), else the configured default if healthy, else the current or the first, to try anyway.
 */
export function selectServer(servers: readonly string[], healthy: ReadonlySet<string>, current: string | null, fallback: string): string {
  if (current && servers.includes(current) && healthy.has(current)) return current;
  const start = current ? servers.indexOf(current) + 1 : 0;
  for (let i = 0; i < servers.length; i++) {
    const s = servers[(start + i) % servers.length]!;
    if (healthy.has(s)) return s;
  }
  if (healthy.has(fallback)) return fallback;
  return current && (servers.includes(current) || current === fallback) ? current : servers[0] ?? fallback;
}

/** The API servers an EndpointSlice of the `kubernetes` Service lists (ready endpoints, its https port). */
export function serversFromSlice(slice: unknown): string[] {
  const s = slice as { endpoints?: { addresses?: string[]; conditions?: { ready?: boolean } }[]; ports?: { name?: string; port?: number }[] } | null;
  const port = (s?.ports ?? []).find((p) => p.name === 'https')?.port ?? s?.ports?.[0]?.port;
  if (!port) return [];
  return (s?.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses ?? []).map((host) => addrKey({ host, port }));
}

function parseKey(k: string): ServerAddr {
  const m = /^\[(.+)\]:(\d+)$/.exec(k) ?? /^([^:]+):(\d+)$/.exec(k);
  return { host: m![1]!, port: Number(m![2]) };
}

export interface ApiBalancerOptions {
  /** The configured server (the kubeconfig's). */
  readonly server: ServerAddr;
  /** The cluster CA (PEM) the health checks verify servers with. */
  readonly ca: string | undefined;
  readonly log: Logger;
  readonly clock: Clock;
  readonly healthEveryMs?: number;
  readonly healthTimeoutMs?: number;
}

export interface HealthResult {
  readonly ok: boolean;
  readonly why: string;
  /** Whether the server's certificate covers 127.0.0.1 (null: no handshake happened). */
  readonly coversLoopback: boolean | null;
}

export class ApiBalancer {
  private listener: Server | null = null;
  private readonly fallback: string;
  private servers: string[];
  private readonly healthy = new Set<string>();
  private readonly conns = new Map<string, Set<Socket>>();
  private current: string | null = null;
  private timer: unknown = null;
  private running = false;
  private checking: Promise<void> = Promise.resolve();
  private readonly lastWhy = new Map<string, string>();
  port = 0;

  constructor(private readonly o: ApiBalancerOptions) {
    this.fallback = addrKey(o.server);
    this.servers = [this.fallback];
  }

  /** Checks every server once, then listens on 127.0.0.1 (a free port) and checks every second. */
  async start(): Promise<void> {
    this.running = true;
    await this.checkAll();
    const l = createServer((c) => this.accept(c));
    await new Promise<void>((resolve, reject) => {
      l.once('error', reject);
      l.listen(0, '127.0.0.1', () => resolve());
    });
    this.listener = l;
    this.port = (l.address() as { port: number }).port;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.checking;
    for (const set of this.conns.values()) for (const s of set) s.destroy();
    this.conns.clear();
    const l = this.listener;
    this.listener = null;
    if (l) await new Promise<void>((r) => l.close(() => r()));
  }

  /** The servers it balances over now (the EndpointSlice's, or the configured one until a slice is seen). */
  get serverList(): readonly string[] {
    return this.servers;
  }

  /** Which of them passed their last check. */
  get healthyServers(): readonly string[] {
    return this.servers.filter((s) => this.healthy.has(s));
  }

  /** The `kubernetes` EndpointSlice changed: these are the API servers now (empty: keep the last known list). */
  setServers(list: readonly string[]): void {
    if (!list.length) return;
    const next = [...new Set(list)];
    if (next.join(',') === this.servers.join(',')) return;
    const gone = this.servers.filter((s) => !next.includes(s) && s !== this.fallback);
    this.o.log.info({ [F.subsys]: 'api-balancer', servers: next.join(',') }, 'API servers from the kubernetes EndpointSlice');
    this.servers = next;
    // A server taken out of the slice (stopped, or its lease expired): its connections move now.
    for (const s of gone) this.closeConns(s, 'left the kubernetes EndpointSlice');
    void this.checkAll();
  }

  /** One health check (exported for the agent's start-up probe of the configured server). */
  check(key: string): Promise<HealthResult> {
    const { host, port } = parseKey(key);
    return new Promise((resolve) => {
      let settled = false;
      const done = (r: HealthResult) => {
        if (settled) return;
        settled = true;
        resolve(r);
      };
      const req = request({ host, port, path: '/readyz', method: 'GET', ...(this.o.ca ? { ca: this.o.ca } : { rejectUnauthorized: false }), agent: false, timeout: this.o.healthTimeoutMs ?? 1000 }, (res) => {
        const sock = res.socket as TLSSocket;
        const cert = sock.getPeerX509Certificate?.();
        const coversLoopback = cert ? coversIP(cert, '127.0.0.1') : null;
        res.resume();
        res.on('end', () => done({ ok: res.statusCode === 200, why: res.statusCode === 200 ? 'ready' : `/readyz answered ${res.statusCode}`, coversLoopback }));
        res.on('error', (e) => done({ ok: false, why: e.message, coversLoopback }));
      });
      req.on('timeout', () => {
        req.destroy();
        done({ ok: false, why: `no answer within ${this.o.healthTimeoutMs ?? 1000} ms`, coversLoopback: null });
      });
      req.on('error', (e) => done({ ok: false, why: e.message, coversLoopback: null }));
      req.end();
    });
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.checkAll().finally(() => this.schedule());
    }, this.o.healthEveryMs ?? 1000);
  }

  private checkAll(): Promise<void> {
    const targets = [...new Set([...this.servers, this.fallback])];
    this.checking = Promise.all(targets.map(async (s) => {
      const r = await this.check(s);
      const was = this.healthy.has(s);
      if (r.ok) this.healthy.add(s);
      else this.healthy.delete(s);
      if (was !== r.ok || (!r.ok && this.lastWhy.get(s) !== r.why)) {
        this.o.log[r.ok ? 'info' : 'warn']({ [F.subsys]: 'api-balancer', server: s, why: r.why }, r.ok ? 'API server healthy' : 'API server failed its health check');
      }
      this.lastWhy.set(s, r.why);
      if (!r.ok && was) this.closeConns(s, r.why);
    })).then(() => undefined);
    return this.checking;
  }

  private closeConns(server: string, why: string): void {
    const set = this.conns.get(server);
    if (!set?.size) return;
    this.o.log.info({ [F.subsys]: 'api-balancer', server, [F.count]: set.size / 2, why }, 'closing the connections to an API server');
    for (const s of set) s.destroy();
    set.clear();
    if (this.current === server) this.current = null;
  }

  /**
   * A client's connection: dialled to the server selectServer() gives; a dial refused (a server that died since
   * its last check) is tried on the next one, the client's bytes held meanwhile, as k3s's balancer dials on.
   */
  private accept(client: Socket): void {
    client.pause();
    client.on('error', () => client.destroy());
    const tried = new Set<string>();
    const dial = (): void => {
      if (client.destroyed) return;
      const server = selectServer(this.servers.filter((s) => !tried.has(s)), this.healthy, this.current, this.fallback);
      if (tried.has(server)) {
        client.destroy();
        return;
      }
      tried.add(server);
      this.current = server;
      const { host, port } = parseKey(server);
      const upstream = connect(port, host);
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        let set = this.conns.get(server);
        if (!set) this.conns.set(server, (set = new Set()));
        set.add(client).add(upstream);
        const end = () => {
          client.destroy();
          upstream.destroy();
          set.delete(client);
          set.delete(upstream);
        };
        client.on('close', end);
        upstream.on('close', end);
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      upstream.on('error', (e) => {
        upstream.destroy();
        if (connected) return client.destroy();
        // Refused: the server is down between checks. Passed over until its next check passes; the next one tried.
        if (this.healthy.delete(server)) this.o.log.warn({ [F.subsys]: 'api-balancer', server, why: e.message }, 'API server refused a connection');
        dial();
      });
    };
    dial();
  }
}

function coversIP(cert: X509Certificate, ip: string): boolean {
  return cert.checkIP(ip) !== undefined;
}
