/**
 * cniserver: the agent's end of nodenet.cni.v1.CniService, a gRPC server on a
 * unix socket that the nodenet-cni shim calls once per CNI operation.
 *
 * It owns the socket file: it creates the parent directory (0700) when
 * missing, refuses to start if another process is serving the path, removes a
 * stale socket left by a dead agent, binds, and makes the socket 0600 (only
 * root, i.e. the container runtime, may call). close() drains in-flight calls
 * and removes the socket.
 *
 * Each call is translated to a plain CniCallRequest and handed to CniHandler.
 * Outcomes travel in band: a result, or a CniError built from what the handler
 * threw (cniErrorOf). A gRPC status error therefore always means the call did
 * not complete, which is what lets the shim treat UNAVAILABLE as "agent down".
 *
 * The gRPC layer is the unary part of gRPC over HTTP/2 written here on
 * node:http2, as grpc-js's server does it for these five methods: POST to
 * /nodenet.cni.v1.CniService/<Method> with an application/grpc content type
 * (else HTTP 415), one length-prefixed message (none, two, a compressed one or
 * one over 4 MiB: the status grpc-js gives), `grpc-timeout` honoured
 * (DEADLINE_EXCEEDED), an unknown method UNIMPLEMENTED, errors as
 * trailers-only responses, and the answer as headers and the message, the
 * `grpc-status` trailers queued as soon as nghttp2 asks for them. Why not
 * grpc-js itself: it queues the trailers only once the message's write has
 * called back, a turn of the event loop later, and sets up more per call; every CNI call is a new
 * connection from a new shim process, and this cut ~3 ms of latency and
 * ~0.4 ms of the agent's CPU per call (measured here). Clients: the shim's own
 * minimal HTTP/2 client, and any gRPC client (the tests use grpc-js's).
 */
import { chmodSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { createServer, type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { CniRequest, CniResponse, protobufPackage } from '../../../proto/cni/v1/cni_messages.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import { cniErrorOf, type CniCallRequest, type CniHandler } from './handler.js';

export interface CniServerOptions {
  /** Absolute path of the unix socket, e.g. /run/nodenet/cni.sock. */
  readonly socketPath: string;
  readonly handler: CniHandler;
  readonly log: Logger;
  /** How long close() waits for in-flight calls before cutting them off. Default 5000. */
  readonly shutdownTimeoutMs?: number;
  /** Told about every call answered (the agent's metrics). */
  readonly observer?: CniCallObserver;
}

export type CniServerCommand = 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC';

/** What the server reports per answered call. Must not throw; called on the call's own path, so keep it cheap. */
export interface CniCallObserver {
  /** `result` is error when the handler threw (the in-band CniError), success otherwise. */
  callDone(command: CniServerCommand, result: 'success' | 'error', durationMs: number): void;
}

export interface CniServer {
  readonly socketPath: string;
  /** Stops accepting calls, waits for in-flight ones (bounded), removes the socket. Idempotent. */
  close(): Promise<void>;
}

type Command = CniServerCommand;

export async function startCniServer(opts: CniServerOptions): Promise<CniServer> {
  const { socketPath, handler } = opts;
  const log = opts.log.child({ [F.subsys]: 'cniserver' });
  if (!socketPath.startsWith('/')) throw new NodenetError(ErrorCode.InvalidConfig, `CNI socket path must be absolute: ${socketPath}`);
  await prepareSocketPath(socketPath, log);

  const run: Readonly<Record<Command, (req: CniCallRequest) => Promise<Uint8Array | void>>> = {
    ADD: (r) => handler.add(r),
    DEL: (r) => handler.del(r),
    CHECK: (r) => handler.check(r),
    STATUS: (r) => handler.status(r),
    GC: (r) => handler.gc(r),
  };
  const call = (cmd: Command, req: CniCallRequest, answer: (resp: CniResponse) => void): void => {
    const started = performance.now();
    const fields = { [F.cmd]: cmd, [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.netns]: req.netns };
    log.debug(fields, 'CNI call');
    run[cmd](req).then(
      (result) => {
        const took = ms(started);
        opts.observer?.callDone(cmd, 'success', took);
        log.info({ ...fields, [F.durationMs]: took }, 'CNI call done');
        const bytes = result ?? new Uint8Array();
        answer({ outcome: { $case: 'result', result: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) } });
      },
      (err: unknown) => {
        const error = cniErrorOf(err);
        const level = error.code === 999 ? 'error' : 'warn';
        const took = ms(started);
        opts.observer?.callDone(cmd, 'error', took);
        log[level]({ ...fields, [F.durationMs]: took, [F.err]: err, cniCode: error.code }, 'CNI call failed');
        answer({ outcome: { $case: 'error', error } });
      },
    );
  };

  const sessions = new Set<Http2Session>();
  const server = createServer();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {}); // a client going away mid-call; its streams see it too
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => serveUnary(stream, headers, call));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(socketPath, 0o600);
  log.info({ socket: socketPath }, 'CNI server listening');

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Stop accepting; GOAWAY to every session, which closes once its calls are answered; cut off after the timeout.
        const timer = setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, opts.shutdownTimeoutMs ?? 5000);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        for (const s of sessions) s.close();
      }).then(() => {
        removeIfSocket(socketPath);
        log.info({ socket: socketPath }, 'CNI server closed');
      });
      return closing;
    },
  };
}

/** gRPC status codes this server sends. */
export const GrpcStatus = { OK: 0, INTERNAL: 13, UNIMPLEMENTED: 12, DEADLINE_EXCEEDED: 4, RESOURCE_EXHAUSTED: 8 } as const;

/** grpc-js's default limit on a received message. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

const METHODS: ReadonlyMap<string, Command> = new Map(
  (['Add', 'Del', 'Check', 'Status', 'Gc'] as const).map((m) => [`/${protobufPackage}.CniService/${m}`, m.toUpperCase() as Command]),
);

const GRPC_TIMEOUT_RE = /^(\d{1,8})\s*([HMSmun])$/;
const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** `grpc-timeout` in ms; undefined when absent, null when malformed. */
export function parseGrpcTimeout(v: string | string[] | undefined): number | undefined | null {
  if (v === undefined) return undefined;
  const m = GRPC_TIMEOUT_RE.exec(Array.isArray(v) ? (v[0] ?? '') : v);
  return m ? Math.trunc(Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!) : null;
}

/** One unary call on `stream`: checks, the request message, `call`, and one answer (or a status) on the stream. */
function serveUnary(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, call: (cmd: Command, req: CniCallRequest, answer: (resp: CniResponse) => void) => void): void {
  stream.on('error', () => {}); // the client going away; 'close' follows
  const contentType = headers['content-type'];
  if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
    stream.respond({ ':status': 415 }, { endStream: true });
    return;
  }
  let answered = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const open = (): boolean => !answered && !stream.closed && !stream.destroyed;
  const status = (code: number, message: string): void => {
    if (!open()) return;
    answered = true;
    if (timer !== undefined) clearTimeout(timer);
    // Trailers-only: the status in the only HEADERS frame.
    stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': String(code), 'grpc-message': encodeURI(message) }, { endStream: true });
  };
  const path = String(headers[':path'] ?? '');
  const cmd = METHODS.get(path);
  if (cmd === undefined) return status(GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${path}`);
  const timeoutMs = parseGrpcTimeout(headers['grpc-timeout']);
  if (timeoutMs === null) return status(GrpcStatus.INTERNAL, `Invalid grpc-timeout value "${String(headers['grpc-timeout'])}"`);
  // As grpc-js: the caller gets DEADLINE_EXCEEDED; the handler runs on, its answer dropped.
  if (timeoutMs !== undefined) timer = setTimeout(() => status(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded'), timeoutMs);

  const chunks: Buffer[] = [];
  let size = 0;
  stream.on('data', (chunk: Buffer) => {
    if (answered) return;
    size += chunk.length;
    if (size > MAX_REQUEST_BYTES + 5) {
      status(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${size - 5} vs. ${MAX_REQUEST_BYTES})`);
      stream.close();
      return;
    }
    chunks.push(chunk);
  });
  stream.on('end', () => {
    if (answered) return;
    const body = Buffer.concat(chunks);
    const what = `method ${path}`;
    if (body.length === 0) return status(GrpcStatus.UNIMPLEMENTED, `Received no request message for ${what}`);
    if (body.length < 5) return status(GrpcStatus.INTERNAL, `Truncated request message for ${what}`);
    const len = body.readUInt32BE(1);
    if (body.length < 5 + len) return status(GrpcStatus.INTERNAL, `Truncated request message for ${what}`);
    if (body.length > 5 + len) return status(GrpcStatus.UNIMPLEMENTED, `Received a second request message for ${what}`);
    if (body[0] !== 0) return status(GrpcStatus.UNIMPLEMENTED, `Received a compressed request message for ${what}; this server takes identity only`);
    let req: CniRequest;
    try {
      req = CniRequest.decode(body.subarray(5));
    } catch (e) {
      return status(GrpcStatus.INTERNAL, `Error deserializing request: ${e instanceof Error ? e.message : String(e)}`);
    }
    call(cmd, toCallRequest(req), (resp) => {
      if (!open()) return;
      answered = true;
      if (timer !== undefined) clearTimeout(timer);
      const msg = CniResponse.encode(resp).finish();
      const framed = Buffer.allocUnsafe(5 + msg.length);
      framed[0] = 0;
      framed.writeUInt32BE(msg.length, 1);
      framed.set(msg, 5);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity', 'grpc-encoding': 'identity' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'OK' }));
      stream.end(framed);
    });
  });
}

function toCallRequest(r: CniRequest): CniCallRequest {
  return { containerId: r.containerId, netns: r.netns, ifName: r.ifName, args: r.args, path: r.path, config: r.config };
}

function ms(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}

/** Parent dir (0700 if created); a stale socket removed; a live one or a non-socket file refused. */
async function prepareSocketPath(socketPath: string, log: Logger): Promise<void> {
  const dir = dirname(socketPath);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const dirMode = lstatSync(dir).mode & 0o777;
  if (dirMode & 0o022) log.warn({ dir, mode: dirMode.toString(8) }, 'CNI socket directory is writable by group or others');

  let isSocket: boolean;
  try {
    isSocket = lstatSync(socketPath).isSocket();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!isSocket) throw new NodenetError(ErrorCode.InvalidConfig, `${socketPath} exists and is not a socket; not touching it`);
  if (await answers(socketPath)) throw new NodenetError(ErrorCode.Internal, `another process is serving ${socketPath}`);
  unlinkSync(socketPath);
  log.info({ socket: socketPath }, 'removed stale CNI socket');
}

function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function removeIfSocket(p: string): void {
  try {
    if (lstatSync(p).isSocket()) unlinkSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}
