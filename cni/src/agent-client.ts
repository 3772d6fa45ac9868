/**
 * agent-client: one unary gRPC call to the agent's nodenet.cni.v1.CniService
 * over its unix socket, spoken directly over node:http2.
 *
 * Why not @grpc/grpc-js: the shim is a process started for every pod, and
 * loading grpc-js tripled its own CPU cost (measured on these machines, per
 * call: bare node ~20 ms, this client ~35 ms, grpc-js ~64 ms). A unary call is
 * a small, fixed part of the gRPC-over-HTTP/2 protocol: one POST to
 * /<package>.<Service>/<Method> with `content-type: application/grpc`, a body
 * of one length-prefixed message (1 byte compressed flag, 4 bytes big-endian
 * length), and a response message followed by `grpc-status`/`grpc-message`
 * trailers (or a trailers-only response on error). Messages are encoded by the
 * messages-only ts-proto output. The e2e test runs this client against the
 * real grpc-js server.
 *
 * Mapping (what run.ts branches on):
 * - socket missing or refusing, connection lost before the answer, or
 *   grpc-status UNAVAILABLE: 'unreachable';
 * - our deadline passed, or grpc-status DEADLINE_EXCEEDED: 'timeout';
 * - any other gRPC or HTTP/2 failure or a malformed answer: 'failed';
 * - a decoded CniResponse: 'ok' or 'cni-error'.
 * main.ts imports this module lazily: VERSION never loads node:http2.
 */
import { connect as http2Connect, constants, type ClientHttp2Session } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { CniRequest, CniResponse, protobufPackage } from '../../proto/cni/v1/cni_messages.js';
import type { AgentReply, CallAgent } from './agent-reply.js';
import type { CniCommand } from './skel.js';

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

export const callAgent: CallAgent = (socketPath, command, request, timeoutMs) =>
  new Promise<AgentReply>((resolve) => {
    let session: ClientHttp2Session | undefined;
    let settled = false;
    const finish = (reply: AgentReply): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session?.destroy();
      resolve(reply);
    };
    const timer = setTimeout(() => finish({ kind: 'timeout', detail: `no answer within ${timeoutMs} ms` }), timeoutMs);

    const body = CniRequest.encode({
      containerId: request.containerId,
      netns: request.netns,
      ifName: request.ifName,
      args: request.args,
      path: request.path,
      config: Buffer.from(request.config.buffer, request.config.byteOffset, request.config.byteLength),
    }).finish();
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);

    session = http2Connect('http://localhost', { createConnection: () => netConnect(socketPath) });
    session.on('error', (e: NodeJS.ErrnoException) => {
      const detail = `connect ${socketPath}: ${e.code ?? e.message}`;
      finish(e.code === 'ENOENT' || e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET' ? { kind: 'unreachable', detail } : { kind: 'failed', detail });
    });
    session.on('close', () => finish({ kind: 'unreachable', detail: 'connection closed before an answer' }));

    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: methodPath(command),
      [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
      'grpc-timeout': `${Math.min(timeoutMs, 99_999_999)}m`,
    });
    const chunks: Buffer[] = [];
    let httpStatus = 0;
    let contentType = '';
    let grpcStatus: number | undefined;
    let grpcMessage = '';
    const readStatus = (h: Record<string, unknown>): void => {
      if (h['grpc-status'] === undefined) return;
      grpcStatus = Number(h['grpc-status']);
      grpcMessage = percentDecode(String(h['grpc-message'] ?? ''));
    };
    stream.on('response', (h) => {
      httpStatus = Number(h[constants.HTTP2_HEADER_STATUS]);
      contentType = String(h[constants.HTTP2_HEADER_CONTENT_TYPE] ?? '');
      readStatus(h);
    });
    stream.on('trailers', (h) => readStatus(h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', (e: Error) => finish({ kind: 'unreachable', detail: `stream: ${e.message}` }));
    stream.on('close', () => {
      // No response at all, or a reset stream without a gRPC status: the agent
      // went away mid-call (as grpc-js, call it UNAVAILABLE).
      if (httpStatus === 0 || (grpcStatus === undefined && stream.rstCode !== constants.NGHTTP2_NO_ERROR)) {
        finish({ kind: 'unreachable', detail: `connection lost before an answer (stream reset ${stream.rstCode})` });
        return;
      }
      finish(toReply(httpStatus, contentType, grpcStatus, grpcMessage, Buffer.concat(chunks)));
    });
    stream.end(frame);
  });

/** Exported for tests: the reply for a finished HTTP/2 exchange. */
export function toReply(httpStatus: number, contentType: string, grpcStatus: number | undefined, grpcMessage: string, data: Buffer): AgentReply {
  if (grpcStatus !== undefined && grpcStatus !== 0) {
    const detail = `grpc ${GRPC_STATUS_NAMES[grpcStatus] ?? grpcStatus}: ${grpcMessage}`;
    if (grpcStatus === UNAVAILABLE) return { kind: 'unreachable', detail };
    if (grpcStatus === DEADLINE_EXCEEDED) return { kind: 'timeout', detail };
    return { kind: 'failed', detail };
  }
  if (httpStatus !== 200) return { kind: 'failed', detail: `HTTP/2 status ${httpStatus}` };
  if (!contentType.startsWith('application/grpc')) return { kind: 'failed', detail: `unexpected content-type ${JSON.stringify(contentType)}` };
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
