/**
 * proto/cni/v1/contract: what the nodenet-cni shim and the agent must agree
 * on besides the protobuf messages, written once. The agent imports it; the
 * shim is C (cni/) and holds the same values (versions and codes in
 * cni/skel.[ch], the default socket in cni/nodenet-cni.c, the record in
 * cni/delqueue.c), checked against this file by cni/shim.test.ts. Pure:
 * constants, types and parsers, no I/O.
 *
 * - the CNI spec versions nodenet speaks, and the well-known CNI error codes;
 * - one CNI invocation as the shim forwards it (CniCallRequest, mirroring the
 *   CniRequest message);
 * - the agent's default socket;
 * - the deletion record: a DEL the shim could not hand to the agent, written
 *   under <dirname(socket)>/del-queue/ for the agent to replay.
 */

/** CNI spec versions nodenet speaks, oldest first. */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];
export const LATEST_VERSION: CniVersion = '1.1.0';

export function isSupportedVersion(v: unknown): v is CniVersion {
  return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC';

/** CNI spec error codes (SPEC.md "Error"); 999 is skel's code for anything else. */
export const CniCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IOFailure: 5,
  DecodingFailure: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  LimitedConnectivity: 51,
  Internal: 999,
} as const;
export type CniCode = (typeof CniCode)[keyof typeof CniCode];

/** One CNI invocation as the shim forwards it: the CNI_* variables plus stdin (mirrors the CniRequest message). */
export interface CniCallRequest {
  /** CNI_CONTAINERID; empty for STATUS and GC. */
  readonly containerId: string;
  /** CNI_NETNS; may be empty for DEL; empty for STATUS and GC. */
  readonly netns: string;
  /** CNI_IFNAME; empty for STATUS and GC. */
  readonly ifName: string;
  /** CNI_ARGS, verbatim. */
  readonly args: string;
  /** CNI_PATH, verbatim. */
  readonly path: string;
  /** The network configuration JSON (stdin), byte for byte. */
  readonly config: Uint8Array;
}

/** Where the agent listens when the config sets no `agentSocket`. */
export const DEFAULT_AGENT_SOCKET = '/run/nodenet/cni.sock';

export const DEL_QUEUE_DIRNAME = 'del-queue';

/** The queue directory for an agent socket: `<dirname(socket)>/del-queue`. */
export function deletionQueueDir(agentSocket: string): string {
  const slash = agentSocket.lastIndexOf('/');
  const dir = slash <= 0 ? '/' : agentSocket.slice(0, slash);
  return `${dir === '/' ? '' : dir}/${DEL_QUEUE_DIRNAME}`;
}

/** Version 1 of the on-disk record. `config` is the stdin JSON text, verbatim. */
export interface DeletionRecord {
  readonly version: 1;
  readonly command: 'DEL';
  readonly containerId: string;
  readonly netns: string;
  readonly ifName: string;
  readonly args: string;
  readonly path: string;
  readonly config: string;
  /** ISO 8601 time the shim queued it. */
  readonly queuedAt: string;
}

/** The record's file name in the queue. The skel has validated both parts (no '/', no leading '.'). */
export function deletionRecordName(containerId: string, ifName: string): string {
  return `${containerId}-${ifName}.json`;
}

/** The record for a DEL the shim could not deliver. */
export function deletionRecordOf(request: CniCallRequest, queuedAt: Date): DeletionRecord {
  return {
    version: 1,
    command: 'DEL',
    containerId: request.containerId,
    netns: request.netns,
    ifName: request.ifName,
    args: request.args,
    path: request.path,
    config: new TextDecoder().decode(request.config),
    queuedAt: queuedAt.toISOString(),
  };
}
