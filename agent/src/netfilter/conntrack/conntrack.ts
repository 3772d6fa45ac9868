/**
 * netfilter/conntrack: deleting stale UDP conntrack entries after a proxy
 * sync. UDP has no connection end, so a flow DNATed to an endpoint keeps
 * going there (and a flow that met "no endpoint" keeps missing) for as long
 * as its entry lives, whatever the new rules say. kube-proxy deletes them;
 * so do we, through the `conntrack` tool (conntrack-tools 1.4.x), inside the
 * node's network namespace when given one.
 *
 * Filters: the original destination (a Service IP and port, or any address
 * with a NodePort as port) and, for one endpoint, the reply source: a flow
 * DNATed to E has E as the reply's source. `--reply-src` is used rather than
 * `--dst-nat` because it also matches entries the kernel did not mark as
 * NATed yet (and was verified against conntrack 1.4.7 here).
 *
 * `conntrack -D` exits 1 with "0 flow entries have been deleted." when
 * nothing matched: that is success (idempotent), as in kube-proxy.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Runner } from '../../exec/runner.js';
import { isIPv4, type IPv4 } from '../../../../lib/net/ip.js';

/** Where the flows were sent: a Service IP (ClusterIP or external IP) and port, or a NodePort on any node address. */
export type ConntrackTarget =
  | { readonly kind: 'serviceIP'; readonly ip: IPv4; readonly port: number }
  | { readonly kind: 'nodePort'; readonly port: number };

export interface Conntrack {
  /**
   * Deletes the UDP flows sent to `target` and DNATed to `endpointIP`.
   * Idempotent: nothing to delete is success. Returns how many were deleted.
   * @throws RangeError for an invalid IP or port; NodenetError(NN_ERR_EXEC) if conntrack fails.
   */
  deleteUDPEndpoint(target: ConntrackTarget, endpointIP: IPv4): Promise<number>;
  /**
   * Deletes every UDP flow sent to `target` (a Service that had no endpoint
   * and now has one, or that is gone). Idempotent. Returns how many.
   */
  deleteUDPService(target: ConntrackTarget): Promise<number>;
}

function checkPort(port: number, what: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`conntrack: ${what} must be an integer in 1..65535, got ${port}`);
}

function checkIP(ip: string, what: string): void {
  if (typeof ip !== 'string' || !isIPv4(ip)) throw new RangeError(`conntrack: ${what} must be an IPv4 address, got ${JSON.stringify(ip)}`);
}

/** Validates a target (what the fake and the executor both refuse). */
export function checkTarget(target: ConntrackTarget): void {
  if (target.kind === 'serviceIP') {
    checkIP(target.ip, 'service IP');
    checkPort(target.port, 'service port');
  } else if (target.kind === 'nodePort') {
    checkPort(target.port, 'node port');
  } else {
    throw new RangeError(`conntrack: unknown target kind ${JSON.stringify((target as { kind: unknown }).kind)}`);
  }
}

/** The `conntrack -D` argv for a deletion (pure). */
export function conntrackDeleteArgv(target: ConntrackTarget, endpointIP?: IPv4): string[] {
  checkTarget(target);
  const argv = ['conntrack', '-D', '-p', 'udp'];
  if (target.kind === 'serviceIP') argv.push('--orig-dst', target.ip);
  argv.push('--orig-port-dst', String(target.port));
  if (endpointIP !== undefined) {
    checkIP(endpointIP, 'endpoint IP');
    argv.push('--reply-src', endpointIP);
  }
  return argv;
}

/** Parses "N flow entries have been deleted." from conntrack's stderr; null when absent. */
export function parseDeletedCount(stderr: string): number | null {
  const m = /(\d+) flow entries have been deleted/.exec(stderr);
  return m ? Number(m[1]) : null;
}

export interface ConntrackExecutorDeps {
  readonly runner: Runner;
  /** Run inside this network namespace (a path); the caller's namespace when absent. */
  readonly netns?: string;
}

export class ConntrackExecutor implements Conntrack {
  constructor(private readonly deps: ConntrackExecutorDeps) {}

  deleteUDPEndpoint(target: ConntrackTarget, endpointIP: IPv4): Promise<number> {
    return this.run(conntrackDeleteArgv(target, endpointIP));
  }

  deleteUDPService(target: ConntrackTarget): Promise<number> {
    return this.run(conntrackDeleteArgv(target));
  }

  private async run(argv: string[]): Promise<number> {
    const r = await this.deps.runner.run(argv, { allowFailure: true, ...(this.deps.netns ? { netns: this.deps.netns } : {}) });
    const n = parseDeletedCount(r.stderr);
    if (r.exitCode === 0) return n ?? 0;
    if (r.exitCode === 1 && n === 0) return 0;
    throw new NodenetError(ErrorCode.Exec, `${argv.join(' ')} exited ${r.exitCode}: ${r.stderr.trim().slice(0, 500)}`, { details: r.stderr.slice(0, 4000) });
  }
}
