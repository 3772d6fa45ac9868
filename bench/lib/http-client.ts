/**
 * bench/lib/http-client: the load generator's side of the wire,
 * node:https (or node:http for a plain server) with keep-alive agents, the
 * kubeconfig's CA and bearer token. Effectful; the timing it reports is
 * performance.now() in this process.
 *
 * - `ApiClient.send`: one request, the body buffered; resolves with the
 *   status, the body and when the request left and the response ended.
 * - `closedLoop` / `openLoop`: the two ways the bench offers load: N
 *   clients each sending its next request when the last one is answered,
 *   or requests at fixed times whatever the answers (latency measured
 *   from the scheduled time, so a stall is not hidden by sending less).
 * - `openWatch`: a watch stream, its lines handed over as they arrive.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ApiTarget } from './kubeconfig.js';
import { LineSplitter } from './ndjson.js';

export interface Reply {
  readonly status: number;
  readonly body: Buffer;
  readonly sentAt: number;
  readonly endAt: number;
}

export class ApiClient {
  private readonly agent: HttpAgent;

  constructor(readonly target: ApiTarget, opts: { readonly maxSockets: number; readonly keepAlive?: boolean }) {
    const a = { keepAlive: opts.keepAlive ?? true, maxSockets: opts.maxSockets, maxFreeSockets: opts.maxSockets };
    this.agent = target.server.protocol === 'https:' ? new HttpsAgent({ ...a, ca: target.caPem ?? undefined }) : new HttpAgent(a);
  }

  options(method: string, path: string, headers: Record<string, string | number> = {}): RequestOptions {
    return {
      host: this.target.server.hostname,
      port: this.target.server.port,
      method,
      path,
      agent: this.agent,
      headers: { Authorization: `Bearer ${this.target.token}`, Accept: 'application/json', ...headers },
    };
  }

  start(o: RequestOptions, onResponse: (res: IncomingMessage) => void): ClientRequest {
    return this.target.server.protocol === 'https:' ? httpsRequest(o, onResponse) : httpRequest(o, onResponse);
  }

  send(method: string, path: string, body?: unknown): Promise<Reply> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = data === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) };
    return new Promise((resolve, reject) => {
      const sentAt = performance.now();
      const req = this.start(this.options(method, path, headers), (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), sentAt, endAt: performance.now() }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(data);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface Outcome {
  readonly ok: boolean;
  readonly latencyMs: number;
  readonly error?: string;
}

/** What one create's reply means: 201 is success; anything else is an error with the server's message. */
export function outcomeOf(r: Reply, startedAt: number = r.sentAt): Outcome {
  if (r.status === 201) return { ok: true, latencyMs: r.endAt - startedAt };
  let msg = r.body.toString('utf8').slice(0, 200);
  try {
    const s = JSON.parse(r.body.toString('utf8')) as { message?: unknown };
    if (typeof s.message === 'string') msg = s.message;
  } catch {
    /* not JSON: keep the text */
  }
  return { ok: false, latencyMs: r.endAt - startedAt, error: `${r.status} ${msg}` };
}

/** `clients` loops, each sending request i as soon as its previous one is answered, until n are done. */
export async function closedLoop(n: number, clients: number, one: (i: number) => Promise<Outcome>): Promise<{ outcomes: Outcome[]; wallMs: number }> {
  const outcomes: Outcome[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(clients, n) }, async () => {
    while (next < n) {
      const i = next++;
      outcomes.push(await one(i).catch((e: unknown): Outcome => ({ ok: false, latencyMs: NaN, error: e instanceof Error ? e.message : String(e) })));
    }
  }));
  return { outcomes, wallMs: performance.now() - t0 };
}

/**
 * Request i at t0 + i/qps, whether or not earlier ones are answered.
 * `one` gets the scheduled time and measures from it.
 */
export async function openLoop(n: number, qps: number, one: (i: number, scheduledAt: number) => Promise<Outcome>): Promise<{ outcomes: Outcome[]; wallMs: number; maxLagMs: number }> {
  const pending: Promise<Outcome>[] = [];
  const t0 = performance.now();
  let maxLagMs = 0;
  for (let i = 0; i < n; i++) {
    const at = t0 + (i * 1000) / qps;
    // Never early (timers truncate to whole ms): a late send counts against the server, since latency runs from `at`.
    for (let wait = at - performance.now(); wait > 0; wait = at - performance.now()) await new Promise((r) => setTimeout(r, Math.ceil(wait)));
    maxLagMs = Math.max(maxLagMs, performance.now() - at);
    pending.push(one(i, at).catch((e: unknown): Outcome => ({ ok: false, latencyMs: NaN, error: e instanceof Error ? e.message : String(e) })));
  }
  const outcomes = await Promise.all(pending);
  return { outcomes, wallMs: performance.now() - t0, maxLagMs };
}

export interface WatchStream {
  /** Resolves when the stream ends (the server closed it, or close()). */
  readonly ended: Promise<void>;
  close(): void;
}

/**
 * A watch: GET `path` (which carries ?watch=1&resourceVersion=...) on a
 * connection of its own; `onLine(line, receivedAt)` for each event line,
 * `onHeaders` when the response headers arrive.
 */
export function openWatch(client: ApiClient, path: string, onLine: (line: string, at: number) => void, onError: (e: Error) => void, onHeaders: () => void = () => {}): WatchStream {
  let req: ClientRequest;
  let closing = false;
  const ended = new Promise<void>((resolve) => {
    req = client.start(client.options('GET', path), (res) => {
      onHeaders();
      if (res.statusCode !== 200) onError(new Error(`watch ${path}: HTTP ${res.statusCode}`));
      const lines = new LineSplitter();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.now();
        for (const l of lines.push(chunk)) onLine(l, at);
      });
      res.on('end', () => resolve());
      res.on('error', () => resolve());
      res.on('close', () => resolve());
    });
    req.on('error', (e) => {
      if (!closing) onError(e);
      resolve();
    });
    req.on('close', () => resolve());
    req.end();
  });
  return {
    ended,
    close: () => {
      closing = true;
      req.destroy();
    },
  };
}
