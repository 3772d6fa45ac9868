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
 */
import { chmodSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { Server, ServerCredentials, type handleUnaryCall } from '@grpc/grpc-js';
import { CniServiceService, type CniRequest, type CniResponse } from '../../../proto/cni/v1/cni.js';
import { ErrorCode, NodenetError } from '../errors/errors.js';
import { F } from '../log/fields.js';
import type { Logger } from '../log/log.js';
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

  const unary = (cmd: Command, run: (req: CniCallRequest) => Promise<Uint8Array | void>): handleUnaryCall<CniRequest, CniResponse> =>
    (call, callback) => {
      const req = toCallRequest(call.request);
      const started = performance.now();
      const fields = { [F.cmd]: cmd, [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.netns]: req.netns };
      log.debug(fields, 'CNI call');
      run(req).then(
        (result) => {
          const took = ms(started);
          opts.observer?.callDone(cmd, 'success', took);
          log.info({ ...fields, [F.durationMs]: took }, 'CNI call done');
          const bytes = result ?? new Uint8Array();
          callback(null, { outcome: { $case: 'result', result: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) } });
        },
        (err: unknown) => {
          const error = cniErrorOf(err);
          const level = error.code === 999 ? 'error' : 'warn';
          const took = ms(started);
          opts.observer?.callDone(cmd, 'error', took);
          log[level]({ ...fields, [F.durationMs]: took, [F.err]: err, cniCode: error.code }, 'CNI call failed');
          callback(null, { outcome: { $case: 'error', error } });
        },
      );
    };

  // No channelz: nothing here reads it, and its per-connection and per-call bookkeeping runs on every CNI call,
  // each on a connection of its own (one shim process per call): ~5% of the server's CPU per call, measured.
  const server = new Server({ 'grpc.enable_channelz': 0 });
  server.addService(CniServiceService, {
    add: unary('ADD', (r) => handler.add(r)),
    del: unary('DEL', (r) => handler.del(r)),
    check: unary('CHECK', (r) => handler.check(r)),
    status: unary('STATUS', (r) => handler.status(r)),
    gc: unary('GC', (r) => handler.gc(r)),
  });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix:${socketPath}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });
  chmodSync(socketPath, 0o600);
  log.info({ socket: socketPath }, 'CNI server listening');

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    close() {
      closing ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), opts.shutdownTimeoutMs ?? 5000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }).then(() => {
        removeIfSocket(socketPath);
        log.info({ socket: socketPath }, 'CNI server closed');
      });
      return closing;
    },
  };
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
