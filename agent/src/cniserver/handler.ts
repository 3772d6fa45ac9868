/**
 * cniserver/handler: what the CNI gRPC service calls into. The agent's sandbox
 * logic implements CniHandler; the server (server.ts) and the DEL replay
 * (replay-deletions.ts) only translate to and from the wire.
 */
import { asNodenetError } from '../../../lib/errors/errors.js';
import type { CniCallRequest } from '../../../proto/cni/v1/contract.js';

export type { CniCallRequest };

/**
 * The agent's CNI operations. The shim has already checked the environment,
 * that `config` is a JSON object with a valid `name`, and that `cniVersion` is
 * supported and allows the command; everything else is the handler's to check.
 * To fail with a specific CNI code, throw a NodenetError (its cniCode, message
 * and details go back in band); anything else thrown becomes code 999.
 * The runtime does not run two operations for the same container at once, but
 * the server does run calls for different containers concurrently.
 */
export interface CniHandler {
  /**
   * ADD. Resolves to the result JSON already encoded in the config's
   * cniVersion (cnitypes encodeResult), printed by the shim as is.
   * Not idempotent: the runtime never ADDs the same attachment twice without a DEL.
   */
  add(req: CniCallRequest): Promise<Uint8Array>;
  /**
   * DEL. Idempotent and best-effort: a missing netns, link or IP is success.
   * Also called by replayDeletions for DELs queued while the agent was down,
   * possibly long after the fact and possibly more than once.
   */
  del(req: CniCallRequest): Promise<void>;
  /** CHECK: resolves if the attachment matches config.prevResult, else throws. No side effects. */
  check(req: CniCallRequest): Promise<void>;
  /** STATUS: resolves if the agent can serve ADDs now; else throw with CNI code 50 (or 51). No side effects. */
  status(req: CniCallRequest): Promise<void>;
  /** GC: release what belongs to no attachment in config["cni.dev/valid-attachments"]. Idempotent. */
  gc(req: CniCallRequest): Promise<void>;
}

export interface CniErrorFields {
  readonly code: number;
  readonly msg: string;
  readonly details: string;
}

/** The in-band error for anything a handler throws: a NodenetError keeps its CNI code, anything else is 999. */
export function cniErrorOf(e: unknown): CniErrorFields {
  const n = asNodenetError(e);
  return { code: n.cniCode, msg: n.message, details: n.details };
}
