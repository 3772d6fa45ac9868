/**
 * netlink/netlink-error: a kernel refusal of a netlink request. Callers
 * branch on `errno` (e.g. 'EEXIST', 'ENETUNREACH').
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';

export class NetlinkError extends NodenetError {
  override name = 'NetlinkError';
  constructor(
    /** The operation, e.g. 'addRoute 10.0.0.0/24 via 10.1.0.1'. */
    readonly op: string,
    /** The errno name ('EEXIST', ...) when the kernel gave one. */
    readonly errno: string | undefined,
    opts?: { cause?: unknown; details?: string },
  ) {
    super(ErrorCode.Netlink, `netlink ${op}: ${errno ?? 'failed'}`, opts);
  }
}

/**
 * The errno name of an error thrown by the `netlink` package (0.3.0 throws a
 * plain Error "Request rejected: EEXIST" for kernel NACKs; socket errors are
 * ErrnoExceptions with `code`).
 */
export function errnoOf(e: unknown): string | undefined {
  const name = rawErrnoOf(e);
  // Node names errno 95 ENOTSUP; the kernel (and iproute2, and the docs) say EOPNOTSUPP.
  return name === 'ENOTSUP' ? 'EOPNOTSUPP' : name;
}

function rawErrnoOf(e: unknown): string | undefined {
  if (e instanceof NetlinkError) return e.errno;
  if (typeof e !== 'object' || e === null) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  const msg = (e as { message?: unknown }).message;
  if (typeof msg === 'string') {
    const m = /Request rejected: (E[A-Z0-9]+)/.exec(msg);
    if (m) return m[1];
  }
  return undefined;
}
