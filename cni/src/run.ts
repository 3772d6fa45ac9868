/**
 * run: one nodenet-cni invocation, start to exit code, over injected I/O.
 *
 * skel decides what the call is; this module forwards it to the agent and maps
 * what comes back onto CNI output. Only the ADD result or the error JSON goes
 * to stdout; notes go to stderr.
 *
 * When the agent cannot be reached (no socket, refused, deadline passed):
 * - ADD, CHECK, GC: code 11 "try again later"; the runtime retries.
 * - STATUS: code 50 "plugin not available", the code SPEC 1.1 defines for
 *   STATUS when the plugin cannot service ADDs (11 is not a STATUS code).
 * - DEL: the request is queued on disk for the agent to replay and DEL
 *   succeeds, since DEL is idempotent and a failing DEL blocks pod teardown.
 *   If even the queue cannot be written, code 11.
 * A CNI error from the agent is printed as is (with the config's cniVersion);
 * anything else that goes wrong is 999.
 */
import type { AgentReply, CallAgent } from './agent-reply.js';
import { DEFAULT_AGENT_SOCKET, deletionQueueDir, deletionRecordOf, type DeletionRecord } from '../../proto/cni/v1/contract.js';
import { CniErrorCode, dispatch, formatError, SUPPORTED_VERSIONS, type CniCommand, type CniEnv, type CniErrorJson } from './skel.js';

export { DEFAULT_AGENT_SOCKET };

/** Per-call deadlines when the config sets no `agentTimeoutMs`. */
export const DEFAULT_TIMEOUT_MS: Readonly<Record<CniCommand, number>> = {
  ADD: 30_000,
  DEL: 30_000,
  CHECK: 30_000,
  STATUS: 10_000,
  GC: 60_000,
};

export interface ShimDeps {
  readonly env: CniEnv;
  /** All of stdin. Not called for VERSION. */
  readStdin(): Promise<Uint8Array>;
  readonly callAgent: CallAgent;
  /** Writes the record into `dir` atomically; throws on failure. Returns the path written. */
  queueDeletion(dir: string, record: DeletionRecord): string;
  now(): Date;
  stdout(data: string | Uint8Array): void;
  stderr(text: string): void;
}

/** Runs one invocation and returns the process exit code. Never rejects. */
export async function runShim(deps: ShimDeps): Promise<number> {
  const printError = (e: CniErrorJson): number => {
    deps.stdout(formatError(e));
    return 1;
  };
  try {
    const isVersion = deps.env['CNI_COMMAND'] === 'VERSION';
    let stdin: Uint8Array = new Uint8Array();
    if (!isVersion && (deps.env['CNI_COMMAND'] ?? '') !== '') {
      try {
        stdin = await deps.readStdin();
      } catch (e) {
        return printError({ cniVersion: '1.1.0', code: CniErrorCode.IOFailure, msg: `error reading from stdin: ${message(e)}`, details: '' });
      }
    }
    const outcome = dispatch(deps.env, stdin);
    if (outcome.kind === 'version') {
      deps.stdout(outcome.output);
      return 0;
    }
    if (outcome.kind === 'error') {
      if ((deps.env['CNI_COMMAND'] ?? '') === '') {
        deps.stderr(`nodenet-cni: CNI plugin of the nodenet agent; CNI protocol versions supported: ${SUPPORTED_VERSIONS.join(', ')}\n`);
      }
      return printError(outcome.error);
    }

    const { command, request, cniVersion, config } = outcome;
    const cniError = (code: number, msg: string, details = ''): number => printError({ cniVersion, code, msg, details });

    const socket = config['agentSocket'] ?? DEFAULT_AGENT_SOCKET;
    if (typeof socket !== 'string' || !socket.startsWith('/')) {
      return cniError(CniErrorCode.InvalidNetworkConfig, 'agentSocket: must be an absolute path');
    }
    const timeout = config['agentTimeoutMs'] ?? DEFAULT_TIMEOUT_MS[command];
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout <= 0) {
      return cniError(CniErrorCode.InvalidNetworkConfig, 'agentTimeoutMs: must be a positive integer');
    }

    const reply: AgentReply = await deps.callAgent(socket, command, request, timeout);
    switch (reply.kind) {
      case 'ok':
        if (command === 'ADD') {
          if (reply.result.length === 0) return cniError(CniErrorCode.Internal, 'the agent returned an empty ADD result');
          deps.stdout(reply.result);
        }
        return 0;
      case 'cni-error':
        return cniError(reply.code === 0 ? CniErrorCode.Internal : reply.code, reply.msg, reply.details);
      case 'failed':
        return cniError(CniErrorCode.Internal, 'call to the nodenet agent failed', reply.detail);
      case 'unreachable':
      case 'timeout': {
        const what = reply.kind === 'timeout' ? `did not answer within ${timeout} ms` : `is not reachable at ${socket}`;
        if (command === 'STATUS') return cniError(CniErrorCode.PluginNotAvailable, `the nodenet agent ${what}`, reply.detail);
        if (command !== 'DEL') return cniError(CniErrorCode.TryAgainLater, `the nodenet agent ${what}; try again later`, reply.detail);
        const dir = deletionQueueDir(socket);
        try {
          const file = deps.queueDeletion(dir, deletionRecordOf(request, deps.now()));
          deps.stderr(`nodenet-cni: the agent ${what} (${reply.detail}); DEL queued in ${file} for the agent to replay\n`);
          return 0;
        } catch (e) {
          return cniError(CniErrorCode.TryAgainLater, `the nodenet agent ${what} and the DEL could not be queued; try again later`, `${reply.detail}; queue ${dir}: ${message(e)}`);
        }
      }
    }
  } catch (e) {
    return printError({ cniVersion: '1.1.0', code: CniErrorCode.Internal, msg: message(e), details: '' });
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
