/**
 * pods/kubelet-server: the kubelet's HTTPS endpoint the API server proxies
 * `kubectl logs` to, as kube-apiserver proxies to a kubelet's :10250.
 *
 * GET /containerLogs/{namespace}/{pod}/{container}?tailLines=&follow=&previous=&limitBytes=
 * answers the container's output as text/plain (stdout and stderr as the
 * process wrote them, in one file per run); with follow, it streams what
 * the run writes until the run ends or the client goes. Errors are
 * Kubernetes Status objects (404 pod, 400 container, waiting to start,
 * no previous run). timestamps, sinceSeconds and sinceTime are refused:
 * the output is kept raw (a per-line time would need a logging process
 * between the container and its file, which would not survive the agent).
 *
 * It listens on the node's primary IP (the Node's InternalIP, port in
 * status.daemonEndpoints.kubeletEndpoint) with a self-signed certificate
 * made at start, and answers only requests bearing the node's own token,
 * which the control plane holds (it issued it): no one else reads logs
 * here. As kube-apiserver without --kubelet-certificate-authority, the
 * control plane does not verify this certificate.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import { issue } from '../../../lib/pki/pki.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import { Query } from '../../../lib/net/query.js';
import type { Kubelet, LogTarget } from './kubelet.js';

export interface KubeletServerOptions {
  readonly kubelet: Pick<Kubelet, 'logTarget'>;
  readonly host: string;
  readonly port: number;
  /** The bearer token a request must carry (the node's own). */
  readonly token: string;
  readonly log: Logger;
  /** How often a follow looks for more output (ms; default 200). */
  readonly followPollMs?: number;
}

export interface KubeletServer {
  readonly address: AddressInfo;
  close(): Promise<void>;
}

const MAX_READ = 16 * 1024 * 1024;

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }).end(body);
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function readFrom(file: string, from: number, max: number): Buffer {
  let fd: number;
  try { fd = openSync(file, 'r'); } catch { return Buffer.alloc(0); }
  try {
    const size = statSync(file).size;
    const n = Math.max(0, Math.min(size - from, max));
    const buf = Buffer.alloc(n);
    let off = 0;
    while (off < n) {
      const r = readSync(fd, buf, off, n - off, from + off);
      if (r <= 0) break;
      off += r;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

function sizeOf(file: string): number {
  try { return statSync(file).size; } catch { return 0; }
}

/** The last `n` lines of `buf` (a final line without a newline counts). */
export function tailLines(buf: Buffer, n: number): Buffer {
  if (n <= 0) return Buffer.alloc(0);
  let end = buf.length;
  if (end > 0 && buf[end - 1] === 0x0a) end--;
  let i = end;
  let lines = 0;
  while (i > 0) {
    if (buf[i - 1] === 0x0a) {
      lines++;
      if (lines === n) break;
    }
    i--;
  }
  return buf.subarray(i);
}

export async function startKubeletServer(o: KubeletServerOptions): Promise<KubeletServer> {
  const cert = issue({ commonName: 'nodenet-kubelet', hosts: [o.host], days: 365 });
  const sockets = new Set<Socket>();
  const follows = new Set<() => void>();
  const server: Server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => void handle(req, res));
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://x');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m || !same(m[1]!, o.token)) return status(res, 401, 'Unauthorized', 'Unauthorized');
    if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', 'only GET');
    const segs = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (segs[0] !== 'containerLogs' || segs.length !== 4) return status(res, 404, 'NotFound', `no such path ${url.pathname}`);
    const [, ns, pod, container] = segs as [string, string, string, string];
    // PodLogOptions, read as the kubelet converts them (net/query): any value but false and 0 is true.
    const q = Query.of(url);
    for (const k of ['timestamps', 'sinceSeconds', 'sinceTime']) {
      if (q.has(k) && !(k === 'timestamps' && !q.bool(k))) return status(res, 400, 'BadRequest', `${k}: nodenet keeps containers' output as written, without per-line times: --timestamps, --since and --since-time are not available`);
    }
    let tail: number | undefined;
    let limit: number | undefined;
    try {
      tail = q.int64('tailLines');
      limit = q.int64('limitBytes');
    } catch (e) {
      return status(res, 400, 'BadRequest', e instanceof Error ? e.message : String(e));
    }
    if (tail !== undefined && tail < 0) return status(res, 400, 'BadRequest', `tailLines: must be a non-negative integer, not ${tail}`);
    if (limit !== undefined && limit < 1) return status(res, 400, 'BadRequest', `limitBytes: must be a positive integer, not ${limit}`);
    const found = o.kubelet.logTarget(ns, pod, container, q.bool('previous'));
    if ('error' in found) return status(res, found.error === 'pod' ? 404 : 400, found.error === 'pod' ? 'NotFound' : 'BadRequest', found.message);
    const t: LogTarget = found.target;
    let budget = limit ?? Infinity;
    let at = sizeOf(t.file);
    let first = readFrom(t.file, Math.max(0, at - MAX_READ), Math.min(at, MAX_READ));
    if (tail !== undefined) first = tailLines(first, tail);
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Cache-Control': 'no-cache, private' });
    const write = (b: Buffer): boolean => {
      if (budget <= 0) return false;
      const part = b.length > budget ? b.subarray(0, budget) : b;
      budget -= part.length;
      if (part.length) res.write(part);
      return budget > 0;
    };
    if (!write(first) || !q.bool('follow')) return void res.end();
    o.log.debug({ [F.pod]: `${ns}/${pod}`, container }, 'following logs');
    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const end = () => {
        if (timer) clearTimeout(timer);
        follows.delete(end);
        if (!res.writableEnded) res.end();
        resolve();
      };
      follows.add(end);
      res.on('close', end);
      const tick = () => {
        const live = t.live();
        const size = sizeOf(t.file);
        if (size > at) {
          const more = readFrom(t.file, at, size - at);
          at += more.length;
          if (!write(more)) return end();
        }
        if (!live) return end();
        timer = setTimeout(tick, o.followPollMs ?? 200);
      };
      timer = setTimeout(tick, o.followPollMs ?? 200);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return {
    address: server.address() as AddressInfo,
    async close() {
      for (const f of [...follows]) f();
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
