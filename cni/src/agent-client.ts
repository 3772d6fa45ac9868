/**
 * agent-client: one unary gRPC call to the node agent's CniService over its
 * unix socket (@grpc/grpc-js and the generated proto client).
 *
 * main.ts imports this module lazily, so VERSION and the calls the skel
 * rejects never load grpc-js (it dominates the shim's cold start).
 * A call does not wait for the agent to come up (waitForReady is off):
 * an absent or refusing socket fails at once as UNAVAILABLE.
 */
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { CniServiceClient, type CniRequest, type CniResponse } from '../../proto/cni/v1/cni.js';
import type { AgentReply, CallAgent } from './agent-reply.js';

export const callAgent: CallAgent = (socketPath, command, request, timeoutMs) => {
  const client = new CniServiceClient(`unix:${socketPath}`, credentials.createInsecure(), {
    // One call per process: no retries behind our back, no keepalive pings.
    'grpc.enable_retries': 0,
    'grpc.service_config_disable_resolution': 1,
  });
  const req: CniRequest = {
    containerId: request.containerId,
    netns: request.netns,
    ifName: request.ifName,
    args: request.args,
    path: request.path,
    config: Buffer.from(request.config.buffer, request.config.byteOffset, request.config.byteLength),
  };
  const options = { deadline: new Date(Date.now() + timeoutMs) };
  return new Promise<AgentReply>((resolve) => {
    const done = (err: ServiceError | null, resp: CniResponse | undefined): void => {
      client.close();
      resolve(toReply(err, resp));
    };
    const md = new Metadata();
    switch (command) {
      case 'ADD': client.add(req, md, options, done); break;
      case 'DEL': client.del(req, md, options, done); break;
      case 'CHECK': client.check(req, md, options, done); break;
      case 'STATUS': client.status(req, md, options, done); break;
      case 'GC': client.gc(req, md, options, done); break;
    }
  });
};

function toReply(err: ServiceError | null, resp: CniResponse | undefined): AgentReply {
  if (err) {
    const detail = `grpc ${status[err.code] ?? err.code}: ${err.details || err.message}`;
    if (err.code === status.UNAVAILABLE) return { kind: 'unreachable', detail };
    if (err.code === status.DEADLINE_EXCEEDED) return { kind: 'timeout', detail };
    return { kind: 'failed', detail };
  }
  const outcome = resp?.outcome;
  if (outcome?.$case === 'error') {
    return { kind: 'cni-error', code: outcome.error.code, msg: outcome.error.msg, details: outcome.error.details };
  }
  return { kind: 'ok', result: outcome?.$case === 'result' ? outcome.result : new Uint8Array() };
}
