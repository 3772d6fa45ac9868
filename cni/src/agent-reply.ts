/**
 * What came back from one call to the agent, as the shim needs to branch on it.
 * The transport (agent-client.ts) produces it; run.ts maps it to CNI output.
 */
import type { CniCallRequest, CniCommand } from './skel.js';

export type AgentReply =
  /** The agent handled the call. `result` is the ADD result JSON; empty for other commands. */
  | { readonly kind: 'ok'; readonly result: Uint8Array }
  /** The agent answered with a CNI error, in band. */
  | { readonly kind: 'cni-error'; readonly code: number; readonly msg: string; readonly details: string }
  /** No agent listens at the socket, or the connection broke before an answer. */
  | { readonly kind: 'unreachable'; readonly detail: string }
  /** The per-call deadline passed. The agent may still be working on it. */
  | { readonly kind: 'timeout'; readonly detail: string }
  /** Anything else (protocol mismatch, server bug): maps to 999. */
  | { readonly kind: 'failed'; readonly detail: string };

/** Sends one call. Never rejects: every failure is an AgentReply. */
export type CallAgent = (
  socketPath: string,
  command: CniCommand,
  request: CniCallRequest,
  timeoutMs: number,
) => Promise<AgentReply>;
