/**
 * errors: one error hierarchy for the whole agent.
 *
 * Every error nodenet raises on purpose is a NodenetError with a stable `code`
 * (from the registry below, documented in docs/errors.md and checked by a
 * test) and the CNI error code it maps to when it crosses the CNI boundary.
 * Anything else that escapes to the CNI boundary becomes CNI code 999
 * (internal), as containernetworking/cni's skel does.
 *
 * Subclass only where a caller branches on the kind of failure.
 */

/** CNI spec error codes (SPEC.md "Error" section); 999 is skel's internal code. */
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

/** The registry of stable error codes. Each must be documented in docs/errors.md. */
export const ErrorCode = {
  Internal: 'NN_ERR_INTERNAL',
  InvalidConfig: 'NN_ERR_INVALID_CONFIG',
  IncompatibleVersion: 'NN_ERR_INCOMPATIBLE_VERSION',
  UnsupportedField: 'NN_ERR_UNSUPPORTED_FIELD',
  InvalidEnvironment: 'NN_ERR_INVALID_ENV',
  DecodingFailure: 'NN_ERR_DECODING',
  NetnsNotFound: 'NN_ERR_NETNS_NOT_FOUND',
  LinkNotFound: 'NN_ERR_LINK_NOT_FOUND',
  LinkExists: 'NN_ERR_LINK_EXISTS',
  Netlink: 'NN_ERR_NETLINK',
  IpamExhausted: 'NN_ERR_IPAM_EXHAUSTED',
  IpamInvalid: 'NN_ERR_IPAM_INVALID',
  IpamStore: 'NN_ERR_IPAM_STORE',
  TryAgainLater: 'NN_ERR_TRY_AGAIN_LATER',
  Exec: 'NN_ERR_EXEC',
  CheckFailed: 'NN_ERR_CHECK_FAILED',
  UnknownContainer: 'NN_ERR_UNKNOWN_CONTAINER',
  InvalidObject: 'NN_ERR_INVALID_OBJECT',
  RuleApply: 'NN_ERR_RULE_APPLY',
  Pod: 'NN_ERR_POD',
  IptablesParse: 'NN_ERR_IPTABLES_PARSE',
  IptablesMixed: 'NN_ERR_IPTABLES_MIXED',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class NodenetError extends Error {
  override name = 'NodenetError';
  constructor(
    readonly code: ErrorCode,
    msg: string,
    readonly cniCode: CniCode = CniCode.Internal,
    opts?: { cause?: unknown; details?: string },
  ) {
    super(msg, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.details = opts?.details ?? '';
  }
  /** Free text for the CNI error's `details` field. */
  readonly details: string;
}

export class NetnsNotFoundError extends NodenetError {
  override name = 'NetnsNotFoundError';
  constructor(readonly path: string, opts?: { cause?: unknown }) {
    super(ErrorCode.NetnsNotFound, `network namespace ${path} does not exist`, CniCode.UnknownContainer, opts);
  }
}

export class LinkNotFoundError extends NodenetError {
  override name = 'LinkNotFoundError';
  constructor(readonly link: string, opts?: { cause?: unknown }) {
    super(ErrorCode.LinkNotFound, `link ${link} not found`, CniCode.Internal, opts);
  }
}

export class TryAgainLaterError extends NodenetError {
  override name = 'TryAgainLaterError';
  constructor(msg: string, opts?: { cause?: unknown; details?: string }) {
    super(ErrorCode.TryAgainLater, msg, CniCode.TryAgainLater, opts);
  }
}

export class IncompatibleVersionError extends NodenetError {
  override name = 'IncompatibleVersionError';
  constructor(msg: string, opts?: { cause?: unknown; details?: string }) {
    super(ErrorCode.IncompatibleVersion, msg, CniCode.IncompatibleVersion, opts);
  }
}

/** An invalid Kubernetes object or config; `field` is the JSON path of the offending field. */
export class InvalidObjectError extends NodenetError {
  override name = 'InvalidObjectError';
  constructor(readonly field: string, msg: string) {
    super(ErrorCode.InvalidObject, `${field}: ${msg}`, CniCode.InvalidNetworkConfig);
  }
}

export function isNodenetError(e: unknown): e is NodenetError {
  return e instanceof NodenetError;
}

/** Wrap anything into a NodenetError without wrapping a NodenetError twice. */
export function asNodenetError(e: unknown): NodenetError {
  if (e instanceof NodenetError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new NodenetError(ErrorCode.Internal, msg, CniCode.Internal, { cause: e });
}
