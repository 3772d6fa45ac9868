/**
 * errors: one error hierarchy for the whole agent.
 *
 * Every error nodenet raises on purpose is a NodenetError with a stable `code`
 * from the registry below (documented in docs/errors.md, every column
 * checked by a test). The constructor takes only the code: the CNI error
 * code it becomes at the CNI boundary and the HTTP status it becomes at the
 * API boundary come from the registry, so one code never maps two ways.
 * Anything else that escapes to the CNI boundary becomes CNI code 999
 * (internal), as containernetworking/cni's skel does.
 *
 * Subclass only where a caller branches on the kind of failure.
 */

import { CniCode } from '../../proto/cni/v1/contract.js';

export { CniCode };

/** The `reason` of a Kubernetes `metav1.Status` (k8s.io/apimachinery's StatusReason values nodenet uses). */
export type StatusReason =
  | 'BadRequest' | 'Unauthorized' | 'Forbidden' | 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Gone' | 'Expired' | 'Invalid'
  | 'MethodNotAllowed' | 'NotAcceptable' | 'RequestEntityTooLarge' | 'UnsupportedMediaType' | 'TooManyRequests' | 'Timeout'
  | 'InternalError' | 'ServiceUnavailable';

/**
 * The registry: every stable code with the CNI error code it becomes at the
 * CNI boundary, and the HTTP status and Status reason it becomes at the API
 * boundary (the embedded control plane). One row per code, fixed here; docs/errors.md has
 * the same table and a test compares every column.
 */
export const ERRORS = {
  NN_ERR_INTERNAL: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_INVALID_CONFIG: { cni: CniCode.InvalidNetworkConfig, http: 400, reason: 'BadRequest' },
  NN_ERR_INCOMPATIBLE_VERSION: { cni: CniCode.IncompatibleVersion, http: 400, reason: 'BadRequest' },
  NN_ERR_UNSUPPORTED_FIELD: { cni: CniCode.UnsupportedField, http: 400, reason: 'BadRequest' },
  NN_ERR_INVALID_ENV: { cni: CniCode.InvalidEnvironment, http: 400, reason: 'BadRequest' },
  NN_ERR_DECODING: { cni: CniCode.DecodingFailure, http: 400, reason: 'BadRequest' },
  NN_ERR_NETNS_NOT_FOUND: { cni: CniCode.UnknownContainer, http: 404, reason: 'NotFound' },
  NN_ERR_LINK_NOT_FOUND: { cni: CniCode.Internal, http: 404, reason: 'NotFound' },
  NN_ERR_LINK_EXISTS: { cni: CniCode.Internal, http: 409, reason: 'AlreadyExists' },
  NN_ERR_NETLINK: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_IPAM_EXHAUSTED: { cni: CniCode.Internal, http: 503, reason: 'ServiceUnavailable' },
  NN_ERR_IPAM_INVALID: { cni: CniCode.InvalidNetworkConfig, http: 400, reason: 'BadRequest' },
  NN_ERR_IPAM_STORE: { cni: CniCode.IOFailure, http: 500, reason: 'InternalError' },
  NN_ERR_TRY_AGAIN_LATER: { cni: CniCode.TryAgainLater, http: 503, reason: 'ServiceUnavailable' },
  NN_ERR_NOT_AVAILABLE: { cni: CniCode.PluginNotAvailable, http: 503, reason: 'ServiceUnavailable' },
  NN_ERR_EXEC: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_CHECK_FAILED: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_UNKNOWN_CONTAINER: { cni: CniCode.UnknownContainer, http: 404, reason: 'NotFound' },
  NN_ERR_INVALID_OBJECT: { cni: CniCode.InvalidNetworkConfig, http: 422, reason: 'Invalid' },
  NN_ERR_RULE_APPLY: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_POD: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_IPTABLES_PARSE: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_IPTABLES_MIXED: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_MASQUERADE: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_NOT_FOUND: { cni: CniCode.Internal, http: 404, reason: 'NotFound' },
  NN_ERR_ALREADY_EXISTS: { cni: CniCode.Internal, http: 409, reason: 'AlreadyExists' },
  NN_ERR_CONFLICT: { cni: CniCode.Internal, http: 409, reason: 'Conflict' },
  NN_ERR_EXPIRED: { cni: CniCode.Internal, http: 410, reason: 'Expired' },
  NN_ERR_BAD_REQUEST: { cni: CniCode.Internal, http: 400, reason: 'BadRequest' },
  NN_ERR_UNAUTHORIZED: { cni: CniCode.Internal, http: 401, reason: 'Unauthorized' },
  NN_ERR_FORBIDDEN: { cni: CniCode.Internal, http: 403, reason: 'Forbidden' },
  NN_ERR_METHOD_NOT_ALLOWED: { cni: CniCode.Internal, http: 405, reason: 'MethodNotAllowed' },
  NN_ERR_NOT_ACCEPTABLE: { cni: CniCode.Internal, http: 406, reason: 'NotAcceptable' },
  NN_ERR_TOO_LARGE: { cni: CniCode.Internal, http: 413, reason: 'RequestEntityTooLarge' },
  NN_ERR_UNSUPPORTED_MEDIA: { cni: CniCode.Internal, http: 415, reason: 'UnsupportedMediaType' },
  NN_ERR_TOO_MANY_REQUESTS: { cni: CniCode.Internal, http: 429, reason: 'TooManyRequests' },
  NN_ERR_TIMEOUT: { cni: CniCode.Internal, http: 504, reason: 'Timeout' },
  NN_ERR_STORE: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_STORE_LOCKED: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_STORE_UNAVAILABLE: { cni: CniCode.Internal, http: 503, reason: 'ServiceUnavailable' },
  NN_ERR_STORE_UNREADABLE: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_LIMITS_NOT_ENFORCED: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
  NN_ERR_PEER_NOT_DIRECT: { cni: CniCode.Internal, http: 500, reason: 'InternalError' },
} as const satisfies Record<string, { readonly cni: CniCode; readonly http: number; readonly reason: StatusReason }>;

export type ErrorCode = keyof typeof ERRORS;

/** Names for the codes, so call sites read `ErrorCode.InvalidConfig`. */
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
  NotAvailable: 'NN_ERR_NOT_AVAILABLE',
  Exec: 'NN_ERR_EXEC',
  CheckFailed: 'NN_ERR_CHECK_FAILED',
  UnknownContainer: 'NN_ERR_UNKNOWN_CONTAINER',
  InvalidObject: 'NN_ERR_INVALID_OBJECT',
  RuleApply: 'NN_ERR_RULE_APPLY',
  Pod: 'NN_ERR_POD',
  IptablesParse: 'NN_ERR_IPTABLES_PARSE',
  IptablesMixed: 'NN_ERR_IPTABLES_MIXED',
  Masquerade: 'NN_ERR_MASQUERADE',
  NotFound: 'NN_ERR_NOT_FOUND',
  AlreadyExists: 'NN_ERR_ALREADY_EXISTS',
  Conflict: 'NN_ERR_CONFLICT',
  Expired: 'NN_ERR_EXPIRED',
  BadRequest: 'NN_ERR_BAD_REQUEST',
  Unauthorized: 'NN_ERR_UNAUTHORIZED',
  Forbidden: 'NN_ERR_FORBIDDEN',
  MethodNotAllowed: 'NN_ERR_METHOD_NOT_ALLOWED',
  NotAcceptable: 'NN_ERR_NOT_ACCEPTABLE',
  RequestEntityTooLarge: 'NN_ERR_TOO_LARGE',
  UnsupportedMediaType: 'NN_ERR_UNSUPPORTED_MEDIA',
  TooManyRequests: 'NN_ERR_TOO_MANY_REQUESTS',
  Timeout: 'NN_ERR_TIMEOUT',
  Store: 'NN_ERR_STORE',
  StoreLocked: 'NN_ERR_STORE_LOCKED',
  StoreUnavailable: 'NN_ERR_STORE_UNAVAILABLE',
  StoreUnreadable: 'NN_ERR_STORE_UNREADABLE',
  LimitsNotEnforced: 'NN_ERR_LIMITS_NOT_ENFORCED',
  PeerNotDirect: 'NN_ERR_PEER_NOT_DIRECT',
} as const satisfies Record<string, ErrorCode>;

export interface ErrorOptions {
  readonly cause?: unknown;
  /** Free text for the CNI error's `details` field. */
  readonly details?: string;
}

export class NodenetError extends Error {
  override name = 'NodenetError';
  /** The CNI error code, from the registry. */
  readonly cniCode: CniCode;
  /** The HTTP status, from the registry. */
  readonly httpStatus: number;
  /** The Kubernetes Status reason, from the registry. */
  readonly reason: StatusReason;
  /** Free text for the CNI error's `details` field. */
  readonly details: string;
  constructor(readonly code: ErrorCode, msg: string, opts: ErrorOptions = {}) {
    super(msg, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.cniCode = ERRORS[code].cni;
    this.httpStatus = ERRORS[code].http;
    this.reason = ERRORS[code].reason;
    this.details = opts.details ?? '';
  }
}

export class NetnsNotFoundError extends NodenetError {
  override name = 'NetnsNotFoundError';
  constructor(readonly path: string, opts?: { cause?: unknown }) {
    super(ErrorCode.NetnsNotFound, `network namespace ${path} does not exist`, opts);
  }
}

export class LinkNotFoundError extends NodenetError {
  override name = 'LinkNotFoundError';
  constructor(readonly link: string, opts?: { cause?: unknown }) {
    super(ErrorCode.LinkNotFound, `link ${link} not found`, opts);
  }
}

export class TryAgainLaterError extends NodenetError {
  override name = 'TryAgainLaterError';
  constructor(msg: string, opts?: { cause?: unknown; details?: string }) {
    super(ErrorCode.TryAgainLater, msg, opts);
  }
}

export class IncompatibleVersionError extends NodenetError {
  override name = 'IncompatibleVersionError';
  constructor(msg: string, opts?: { cause?: unknown; details?: string }) {
    super(ErrorCode.IncompatibleVersion, msg, opts);
  }
}

/** An invalid Kubernetes object or config; `field` is the JSON path of the offending field. */
export class InvalidObjectError extends NodenetError {
  override name = 'InvalidObjectError';
  constructor(readonly field: string, msg: string) {
    super(ErrorCode.InvalidObject, `${field}: ${msg}`, { details: field });
  }
}

export function isNodenetError(e: unknown): e is NodenetError {
  return e instanceof NodenetError;
}

/** Wrap anything into a NodenetError without wrapping a NodenetError twice. */
export function asNodenetError(e: unknown): NodenetError {
  if (e instanceof NodenetError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new NodenetError(ErrorCode.Internal, msg, { cause: e });
}
