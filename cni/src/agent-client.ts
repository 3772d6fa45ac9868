/**
 * agent-client: one unary gRPC call to the agent's nodenet.cni.v1.CniService
 * over its unix socket, on unix-stream.ts's byte stream (libuv's pipe handle,
 * or node:net) and h2.ts's minimal HTTP/2.
 *
 * Why neither @grpc/grpc-js nor node:http2 (nor, where avoidable, node:net):
 * the shim is a process started for every pod operation. Loading grpc-js
 * tripled its own CPU cost, node:http2 still costs ~13 ms of CPU per process
 * (h2.ts), and a net.Socket ~10 ms (unix-stream.ts). A unary call is a
 * small, fixed part of gRPC over HTTP/2: one POST to
 * /<package>.<Service>/<Method> with `content-type: application/grpc`, a
 * body of one length-prefixed message (1 byte compressed flag, 4 bytes
 * big-endian length), and a response message followed by
 * `grpc-status`/`grpc-message` trailers (or a trailers-only response on
 * error). Messages are encoded by the messages-only ts-proto output. The
 * tests run this client against the agent's server (node:http2) and raw
 * HTTP/2 servers answering as gRPC servers do.
 *
 * Mapping (what run.ts branches on):
 * - socket missing or refusing, connection lost before the answer, a
 *   refused stream, a GOAWAY before our stream, or grpc-status UNAVAILABLE:
 *   'unreachable';
 * - our deadline passed, or grpc-status DEADLINE_EXCEEDED: 'timeout';
 * - any other gRPC or HTTP/2 failure or a malformed answer: 'failed';
 * - a decoded CniResponse: 'ok' or 'cni-error'.
 * main.ts imports this module lazily: VERSION never loads it.
 */
import { CniRequest, CniResponse, protobufPackage } from '../../proto/cni/v1/cni_messages.js';
import type { AgentReply, CallAgent } from './agent-reply.js';
import { H2Client, type HeaderField } from './h2.js';
import type { CniCommand } from './skel.js';
import { unixTransport, type OpenUnixStream, type UnixStream } from './unix-stream.js';

/** gRPC method names of CniService, by CNI command. */
export const METHOD: Readonly<Record<CniCommand, string>> = { ADD: 'Add', DEL: 'Del', CHECK: 'Check', STATUS: 'Status', GC: 'Gc' };

export function methodPath(command: CniCommand): string {
  return `/${protobufPackage}.CniService/${METHOD[command]}`;
}

const GRPC_STATUS_NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE',
  'DATA_LOSS', 'UNAUTHENTICATED',
];
const UNAVAILABLE = 14;
const DEADLINE_EXCEEDED = 4;

const REFUSED_STREAM = 7;
const CANCEL = 8;

/** A CallAgent over the transport `transport` gives (tests run each). */
export function makeCallAgent(transport: () => OpenUnixStream | Promise<OpenUnixStream>): CallAgent {
  return async (socketPath, command, request, timeoutMs) => {
    const open = await transport();
    return new Promise<AgentReply>((resolve) => {
      const started = performance.now();
      let settled = false;
      let sock: UnixStream | null = null;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const finish = (reply: AgentReply): void => {
        if (settled) return;
        settled = true;
        if (timer !== undefined) clearTimeout(timer);
        sock?.close();
        resolve(reply);
      };
      // The deadline counts from here, but its timer is armed once the request is written: the first
      // setTimeout of a process sets up Node's timers (~0.6 ms of CPU here), better spent while the agent
      // works. A unix socket's connect always completes at once (connected, refused, or EAGAIN on a full
      // backlog), so nothing waits unbounded before that.
      const armDeadline = (): void => {
        if (settled || timer !== undefined) return;
        timer = setTimeout(() => finish({ kind: 'timeout', detail: `no answer within ${timeoutMs} ms` }), Math.max(0, timeoutMs - (performance.now() - started)));
      };

      const body = CniRequest.encode({
        containerId: request.containerId,
        netns: request.netns,
        ifName: request.ifName,
        args: request.args,
        path: request.path,
        config: Buffer.from(request.config.buffer, request.config.byteOffset, request.config.byteLength),
      }).finish();
      const message = Buffer.alloc(5 + body.length);
      message.writeUInt32BE(body.length, 1);
      message.set(body, 5);
      const h2 = new H2Client(message);
      const headers: HeaderField[][] = [];
      const data: Buffer[] = [];

      const onData = (chunk: Buffer): void => {
        let out: ReturnType<H2Client['feed']>;
        try {
          out = h2.feed(chunk);
        } catch (e) {
          finish({ kind: 'failed', detail: (e as Error).message });
          return;
        }
        if (out.reply.length) sock?.write(out.reply);
        for (const ev of out.events) {
          if (ev.kind === 'goaway' && ev.lastStream < 1) return finish({ kind: 'unreachable', detail: `the agent is going away (GOAWAY ${ev.code})` });
          if (ev.kind === 'reset') {
            const detail = `stream reset ${ev.code}`;
            return finish(ev.code === REFUSED_STREAM || ev.code === CANCEL ? { kind: 'unreachable', detail } : { kind: 'failed', detail });
          }
          if (ev.kind === 'data') data.push(ev.data);
          if (ev.kind === 'headers') headers.push(ev.fields);
          if ((ev.kind === 'data' || ev.kind === 'headers') && ev.endStream) {
            const first = headers[0] ?? [];
            const last = headers[headers.length - 1] ?? [];
            const get = (fields: HeaderField[], name: string) => fields.find((f) => f.name === name);
            const status = get(first, ':status')?.value;
            const gs = get(last, 'grpc-status');
            const gm = get(last, 'grpc-message');
            const grpcStatus = gs === undefined ? undefined : gs.value === null || !/^\d+$/.test(gs.value) ? -1 : Number(gs.value);
            const grpcMessage = gm === undefined ? '' : gm.value === null ? '(message Huffman-coded, not decoded)' : percentDecode(gm.value);
            return finish(toReply(status === undefined || status === null ? 0 : Number(status), grpcStatus, grpcMessage, Buffer.concat(data)));
          }
        }
      };
      const handlers = {
        connect: () => {
          sock?.write(
            h2.start([
              [':method', 'POST'],
              [':scheme', 'http'],
              [':path', methodPath(command)],
              [':authority', 'localhost'],
              ['content-type', 'application/grpc'],
              ['te', 'trailers'],
              ['grpc-timeout', `${Math.min(timeoutMs, 99_999_999)}m`],
            ]),
          );
          armDeadline();
        },
        data: onData,
        error: (code: string) => {
          const detail = `connect ${socketPath}: ${code}`;
          finish(code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE' ? { kind: 'unreachable', detail } : { kind: 'failed', detail });
        },
        end: () => finish({ kind: 'unreachable', detail: 'connection lost before an answer' }),
      };
      // Handlers run on later turns of the loop, never inside open().
      sock = open(socketPath, handlers);
    });
  };
}

export const callAgent: CallAgent = makeCallAgent(unixTransport);

/**
 * Exported for tests: the reply for a finished HTTP/2 exchange. `grpcStatus`
 * is undefined when no grpc-status came, -1 when it could not be read.
 */
export function toReply(httpStatus: number, grpcStatus: number | undefined, grpcMessage: string, data: Buffer): AgentReply {
  if (grpcStatus !== undefined && grpcStatus !== 0) {
    const detail = `grpc ${grpcStatus < 0 ? 'status unreadable' : (GRPC_STATUS_NAMES[grpcStatus] ?? grpcStatus)}: ${grpcMessage}`;
    if (grpcStatus === UNAVAILABLE) return { kind: 'unreachable', detail };
    if (grpcStatus === DEADLINE_EXCEEDED) return { kind: 'timeout', detail };
    return { kind: 'failed', detail };
  }
  if (httpStatus !== 200) return { kind: 'failed', detail: `HTTP/2 status ${httpStatus}` };
  if (grpcStatus === undefined) return { kind: 'failed', detail: 'response without grpc-status' };
  if (data.length < 5) return { kind: 'failed', detail: 'response without a message' };
  if (data[0] !== 0) return { kind: 'failed', detail: 'compressed response message' };
  const len = data.readUInt32BE(1);
  if (data.length !== 5 + len) return { kind: 'failed', detail: `response message of ${data.length - 5} bytes, framed as ${len}` };
  let resp: CniResponse;
  try {
    resp = CniResponse.decode(data.subarray(5));
  } catch (e) {
    return { kind: 'failed', detail: `undecodable response: ${(e as Error).message}` };
  }
  const outcome = resp.outcome;
  if (outcome?.$case === 'error') {
    return { kind: 'cni-error', code: outcome.error.code, msg: outcome.error.msg, details: outcome.error.details };
  }
  return { kind: 'ok', result: outcome?.$case === 'result' ? outcome.result : new Uint8Array() };
}

function percentDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
