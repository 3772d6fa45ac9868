/** ipam/ipam-errors: constructors for the IPAM module's NodenetErrors, so codes and CNI codes stay consistent. */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';

/** An invalid IPAM config field or request; the message starts with the field's path. */
export function ipamInvalid(field: string, msg: string): NodenetError {
  return new NodenetError(ErrorCode.IpamInvalid, `${field}: ${msg}`, { details: field });
}

export function ipamExhausted(rangeSet: string): NodenetError {
  return new NodenetError(ErrorCode.IpamExhausted, `no IP addresses available in range set ${rangeSet}`);
}

export function ipamStoreError(msg: string, cause?: unknown): NodenetError {
  return new NodenetError(ErrorCode.IpamStore, msg, cause === undefined ? undefined : { cause });
}

/** A precondition of the Store contract was violated by the caller (a bug, not bad input). */
export function storeMisuse(msg: string): NodenetError {
  return new NodenetError(ErrorCode.Internal, `ipam store misuse: ${msg}`);
}
