/**
 * unix-stream: the shim's byte stream to the agent's unix socket, without
 * node:net when the Node binary allows it.
 *
 * Why: `require('node:net')` loads the stream machinery (~4 ms of CPU per
 * shim process here), and a net.Socket's connect, first write and destroy
 * cost ~6 ms more, against ~1 ms for the same calls on libuv's pipe handle
 * directly (measured on this 2-core VM, Node 20). The shim is one process per
 * pod operation, so that is most of what it adds to a bare `node`.
 *
 * How: Node's own net.Socket is a JavaScript wrapper around the `Pipe`
 * handle of the `pipe_wrap` binding and the `WriteWrap` request of
 * `stream_wrap`. Both are on `process.binding()`'s allow-list in Node 20 to
 * 22 (DEP0111, a documentation-only deprecation). `pipeWrapStream` drives
 * them as net.js does: connect with a PipeConnectWrap whose `oncomplete`
 * gets the status; `readStart` and an `onread` that finds the byte count
 * (or a negative errno, UV_EOF at the end) in `streamBaseState`; writes
 * through `writeBuffer` with a WriteWrap, whose `oncomplete` runs only for a
 * write libuv could not finish at once. When a binding is missing or has
 * another shape (a later Node, the permission model), unixTransport falls
 * back to node:net (net-stream.ts), loaded only then. Both are tested against
 * the agent's real server.
 */
import { getSystemErrorName } from 'node:util';

export interface StreamHandlers {
  /** Connected: writes go out from now on. */
  connect(): void;
  data(chunk: Buffer): void;
  /** A failed connect, read or write, by errno name (ENOENT, ECONNREFUSED, EPIPE, ...). */
  error(code: string): void;
  /** The peer closed the connection. */
  end(): void;
}

export interface UnixStream {
  write(data: Uint8Array): void;
  /** Closes the connection; no handler runs after it. Idempotent. */
  close(): void;
}

export type OpenUnixStream = (path: string, handlers: StreamHandlers) => UnixStream;

interface ConnectReq {
  oncomplete?: (status: number) => void;
}
interface WriteReq {
  handle?: PipeHandle;
  oncomplete?: (status: number) => void;
  async?: boolean;
  buffer?: Uint8Array;
}
interface PipeHandle {
  /** Only ever a function: Node aborts the process on anything else. */
  onread: (buf?: ArrayBuffer) => void;
  connect(req: ConnectReq, path: string): number | undefined;
  readStart(): number;
  writeBuffer(req: WriteReq, data: Uint8Array): number;
  close(): void;
}
interface Bindings {
  readonly Pipe: new (type: number) => PipeHandle;
  readonly PipeConnectWrap: new () => ConnectReq;
  readonly WriteWrap: new () => WriteReq;
  readonly socketType: number;
  readonly state: Int32Array;
  readonly kReadBytesOrError: number;
  readonly kArrayBufferOffset: number;
}

const UV_EOF = -4095; // libuv's UV_EOF on every Unix

function prop(o: unknown, k: string): unknown {
  return typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[k] : undefined;
}

let cached: Bindings | null | undefined;

/** The two bindings, checked for the shape this module drives; null when they are not there. Exported for tests. */
export function pipeWrapBindings(): Bindings | null {
  if (cached !== undefined) return cached;
  cached = null;
  const binding = prop(process, 'binding');
  if (typeof binding !== 'function') return null;
  let pw: unknown;
  let sw: unknown;
  try {
    pw = (binding as (name: string) => unknown).call(process, 'pipe_wrap');
    sw = (binding as (name: string) => unknown).call(process, 'stream_wrap');
  } catch {
    return null;
  }
  const Pipe = prop(pw, 'Pipe');
  const PipeConnectWrap = prop(pw, 'PipeConnectWrap');
  const socketType = prop(prop(pw, 'constants'), 'SOCKET');
  const WriteWrap = prop(sw, 'WriteWrap');
  const state = prop(sw, 'streamBaseState');
  const k = ['kReadBytesOrError', 'kArrayBufferOffset'].map((n) => prop(sw, n));
  if (typeof Pipe !== 'function' || typeof PipeConnectWrap !== 'function' || typeof WriteWrap !== 'function') return null;
  if (typeof socketType !== 'number' || !(state instanceof Int32Array) || !k.every((x) => typeof x === 'number')) return null;
  const proto = (Pipe as { prototype?: unknown }).prototype;
  if (!['connect', 'readStart', 'writeBuffer', 'close'].every((m) => typeof prop(proto, m) === 'function')) return null;
  cached = {
    Pipe: Pipe as Bindings['Pipe'], PipeConnectWrap: PipeConnectWrap as Bindings['PipeConnectWrap'], WriteWrap: WriteWrap as Bindings['WriteWrap'],
    socketType, state, kReadBytesOrError: k[0] as number, kArrayBufferOffset: k[1] as number,
  };
  return cached;
}

function errName(status: number): string {
  try {
    return getSystemErrorName(status);
  } catch {
    return `errno ${status}`;
  }
}

/** A stream on libuv's pipe handle. The caller checked pipeWrapBindings() (else it throws). */
export function pipeWrapStream(path: string, h: StreamHandlers): UnixStream {
  const b = pipeWrapBindings();
  if (!b) throw new Error('the pipe_wrap binding is not available');
  const handle = new b.Pipe(b.socketType);
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    handle.close();
  };
  // Handlers run on later ticks (never inside the caller's own call), as net.Socket's events do.
  const fail = (status: number): void => {
    if (closed) return;
    close();
    h.error(errName(status));
  };
  handle.onread = (buf?: ArrayBuffer) => {
    if (closed) return;
    const n = b.state[b.kReadBytesOrError]!;
    if (n > 0 && buf) {
      h.data(Buffer.from(buf, b.state[b.kArrayBufferOffset]!, n));
    } else if (n === UV_EOF) {
      close();
      h.end();
    } else if (n < 0) {
      fail(n);
    }
  };
  const req = new b.PipeConnectWrap();
  req.oncomplete = (status: number) => {
    if (closed) return;
    if (status < 0) return fail(status);
    const err = handle.readStart();
    if (err < 0) return fail(err);
    h.connect();
  };
  const err = handle.connect(req, path);
  if (typeof err === 'number' && err < 0) setImmediate(() => fail(err));
  return {
    write(data) {
      if (closed) return;
      const w = new b.WriteWrap();
      w.handle = handle;
      w.async = false;
      w.buffer = data; // held until an asynchronous write completes
      w.oncomplete = (status: number) => {
        if (status < 0) fail(status);
      };
      const werr = handle.writeBuffer(w, data);
      if (werr < 0) setImmediate(() => fail(werr));
    },
    close,
  };
}

/** The transport for this Node: libuv's pipe handle when the bindings are there, node:net (loaded now) otherwise. */
export async function unixTransport(): Promise<OpenUnixStream> {
  if (pipeWrapBindings()) return pipeWrapStream;
  return (await import('./net-stream.js')).netStream;
}
