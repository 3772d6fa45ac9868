/**
 * pods/serve: the small test server pods run in demos and tests (`nodenet
 * serve`), in the role agnhost's netexec and serve-hostname play in
 * Kubernetes' e2e tests. It answers "who are you, who am I" over TCP, UDP
 * and HTTP, so a Service's load balancing, source NAT and established
 * connections can be seen from a client:
 * - TCP: on connect writes "<name> <clientip>:<clientport>\n", then echoes
 *   what it receives until the client closes;
 * - UDP: answers every datagram with "<name> <clientip>:<clientport>\n";
 * - HTTP: / and /hostname (the name), /clientip (ip:port), /echo?msg=X (X,
 *   exactly), /healthz, /readyz (toggled by /readyz?set=fail|ok; 503 while
 *   terminating), /exit?code=N (answers, then the process exits N at once),
 *   /shutdown (answers, then a graceful stop), /leader (with --leader-elect:
 *   `leader <me>` or `follower <leader>`, pods/serve-leader.ts). Text bodies
 *   but /echo end in a newline.
 *
 * It logs one line per request through the logger it is given (the CLI
 * sends it to stdout, so `kubectl logs` shows something). terminate() is
 * SIGTERM's path: with a delay, it keeps serving (not ready) for that long
 * before it closes. It never exits the process itself: `done` resolves with
 * the exit code, and the caller exits.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';

export interface ServeOptions {
  readonly name: string;
  /** The address every listener binds: 0.0.0.0 in a pod, 127.0.0.1 in unit tests. */
  readonly bind: string;
  /** Ports to listen on; 0 picks a free one (see ServeServer.ports). */
  readonly tcp: readonly number[];
  readonly udp: readonly number[];
  readonly http: readonly number[];
  /** How long terminate() keeps serving (not ready) before it closes. */
  readonly termDelayMs: number;
  readonly log: Logger;
  /** `--leader-elect NAME` (serve-leader.ts): /leader answers `leader <me>` or `follower <leader>`. */
  readonly leader?: { answer(): string };
}

export interface ServeExit {
  readonly code: number;
  readonly reason: 'exit' | 'shutdown' | 'terminated';
}

export interface ServeServer {
  /** The ports actually bound, in the order given. */
  readonly ports: { readonly tcp: readonly number[]; readonly udp: readonly number[]; readonly http: readonly number[] };
  /** Resolves once every listener is closed, with the code the process should exit with. */
  readonly done: Promise<ServeExit>;
  /** A graceful stop (SIGTERM): not ready, wait termDelayMs, then close; exit 0. Idempotent. */
  terminate(): void;
}

/** "ip:port" of a peer, with IPv4-mapped IPv6 addresses shown as IPv4. */
export function peerAddress(address: string | undefined, port: number | undefined): string {
  return `${(address ?? '?').replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1')}:${port ?? 0}`;
}

/** Starts every listener; rejects (after closing what it opened) if one cannot bind. */
export async function startServe(o: ServeOptions): Promise<ServeServer> {
  const log = o.log.child({ [F.subsys]: 'serve' });
  const tcpServers: TcpServer[] = [];
  const udpSockets: UdpSocket[] = [];
  const httpServers: HttpServer[] = [];
  const conns = new Set<Socket>();
  let ready = true;
  let stopping: Promise<void> | null = null;
  let resolveDone!: (e: ServeExit) => void;
  const done = new Promise<ServeExit>((r) => (resolveDone = r));

  const closeAll = async (abrupt: boolean): Promise<void> => {
    const closing: Promise<void>[] = [];
    for (const s of tcpServers) closing.push(new Promise((r) => s.close(() => r())));
    for (const s of httpServers) {
      closing.push(new Promise((r) => s.close(() => r())));
      if (abrupt) s.closeAllConnections();
      else s.closeIdleConnections();
    }
    for (const u of udpSockets) {
      closing.push(new Promise((r) => {
        try { u.close(() => r()); } catch { r(); } // never bound, or closed already
      }));
    }
    // Open echo connections: a graceful stop ends them (the client sees EOF), an exit drops them.
    for (const c of conns) (abrupt ? c.destroy() : c.end());
    const t = setTimeout(() => {
      for (const c of conns) c.destroy();
      for (const s of httpServers) s.closeAllConnections();
    }, abrupt ? 0 : 2_000);
    await Promise.all(closing);
    clearTimeout(t);
  };
  const stop = (exit: ServeExit, abrupt: boolean, delayMs = 0): void => {
    if (stopping) return;
    ready = false;
    stopping = (async () => {
      if (delayMs > 0) {
        log.info({ [F.durationMs]: delayMs }, `terminating: not ready, serving for ${delayMs} ms more`);
        await sleep(delayMs);
      }
      await closeAll(abrupt);
      log.info({ [F.code]: exit.code, [F.reason]: exit.reason }, `stopped (${exit.reason}), exit ${exit.code}`);
      resolveDone(exit);
    })();
  };

  const onTcp = (c: Socket): void => {
    const peer = peerAddress(c.remoteAddress, c.remotePort);
    conns.add(c);
    log.info({ [F.kind]: 'tcp', [F.endpoint]: peer }, `tcp connection from ${peer}`);
    c.on('error', () => c.destroy());
    c.on('close', () => conns.delete(c));
    c.write(`${o.name} ${peer}\n`);
    c.pipe(c);
  };

  const reply = (res: ServerResponse, status: number, body: string, after?: () => void): void => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body, after);
  };
  const onHttp = (req: IncomingMessage, res: ServerResponse): void => {
    const peer = peerAddress(req.socket.remoteAddress, req.socket.remotePort);
    const url = new URL(req.url ?? '/', 'http://serve');
    res.on('finish', () => log.info({ [F.kind]: 'http', [F.endpoint]: peer, [F.path]: url.pathname, [F.code]: res.statusCode }, `${req.method ?? '?'} ${req.url ?? '/'} ${res.statusCode} from ${peer}`));
    switch (url.pathname) {
      case '/':
      case '/hostname':
        return reply(res, 200, `${o.name}\n`);
      case '/clientip':
        return reply(res, 200, `${peer}\n`);
      case '/leader':
        return o.leader ? reply(res, 200, `${o.leader.answer()}\n`) : reply(res, 404, 'not electing a leader (--leader-elect NAME)\n');
      case '/echo':
        return reply(res, 200, url.searchParams.get('msg') ?? '');
      case '/healthz':
        return reply(res, 200, 'ok\n');
      case '/readyz': {
        const set = url.searchParams.get('set');
        if (set === null) return ready ? reply(res, 200, 'ok\n') : reply(res, 503, stopping ? 'terminating\n' : 'not ready\n');
        if (set !== 'ok' && set !== 'fail') return reply(res, 400, `set must be ok or fail, got ${JSON.stringify(set)}\n`);
        if (!stopping) ready = set === 'ok';
        return reply(res, 200, `readyz set to ${set}\n`);
      }
      case '/exit': {
        const raw = url.searchParams.get('code') ?? '0';
        if (!/^\d{1,3}$/.test(raw) || Number(raw) > 255) return reply(res, 400, `code must be 0..255, got ${JSON.stringify(raw)}\n`);
        const code = Number(raw);
        return reply(res, 200, `exiting ${code}\n`, () => stop({ code, reason: 'exit' }, true));
      }
      case '/shutdown':
        return reply(res, 200, 'shutting down\n', () => stop({ code: 0, reason: 'shutdown' }, false));
      default:
        return reply(res, 404, `no ${url.pathname}: try /hostname /clientip /echo?msg= /healthz /readyz /exit?code= /shutdown\n`);
    }
  };

  const listen = (s: TcpServer | HttpServer, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, o.bind, () => {
        s.off('error', reject);
        resolve((s.address() as { port: number }).port);
      });
    });
  const ports = { tcp: [] as number[], udp: [] as number[], http: [] as number[] };
  try {
    for (const port of o.tcp) {
      const s = createTcpServer(onTcp);
      tcpServers.push(s);
      ports.tcp.push(await listen(s, port));
    }
    for (const port of o.http) {
      const s = createHttpServer(onHttp);
      s.keepAliveTimeout = 5_000;
      httpServers.push(s);
      ports.http.push(await listen(s, port));
    }
    for (const port of o.udp) {
      const u = createSocket('udp4');
      udpSockets.push(u);
      u.on('message', (msg, rinfo) => {
        const peer = peerAddress(rinfo.address, rinfo.port);
        log.info({ [F.kind]: 'udp', [F.endpoint]: peer, [F.count]: msg.length }, `udp datagram from ${peer}`);
        u.send(`${o.name} ${peer}\n`, rinfo.port, rinfo.address);
      });
      ports.udp.push(
        await new Promise<number>((resolve, reject) => {
          u.once('error', reject);
          u.bind(port, o.bind, () => {
            u.off('error', reject);
            resolve(u.address().port);
          });
        }),
      );
    }
  } catch (e) {
    await closeAll(true).catch(() => undefined);
    throw e;
  }
  return {
    ports,
    done,
    terminate: () => stop({ code: 0, reason: 'terminated' }, false, o.termDelayMs),
  };
}
