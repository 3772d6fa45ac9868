/**
 * A Conntrack that keeps a small table of UDP flows and deletes from it as
 * the kernel would: a target matches a flow by original destination (IP and
 * port, or port only for a NodePort), an endpoint by reply source. It
 * refuses what conntrack would refuse (bad IPs, ports out of range) and
 * records every call, so tests can assert both the calls and their effect.
 */
import { NodenetError, ErrorCode } from '../../../../lib/errors/errors.js';
import { isIPv4, type IPv4 } from '../../../../lib/net/ip.js';
import { checkTarget, type Conntrack, type ConntrackTarget } from './conntrack.js';

/** One UDP flow: where the client sent it, and where the reply comes from (the endpoint after DNAT). */
export interface FakeFlow {
  readonly origDst: IPv4;
  readonly origPortDst: number;
  readonly replySrc: IPv4;
}

export type ConntrackCall =
  | { readonly op: 'deleteUDPEndpoint'; readonly target: ConntrackTarget; readonly endpointIP: IPv4; readonly deleted: number }
  | { readonly op: 'deleteUDPService'; readonly target: ConntrackTarget; readonly deleted: number };

export class FakeConntrack implements Conntrack {
  readonly calls: ConntrackCall[] = [];
  private flows: FakeFlow[] = [];
  private failures: Error[] = [];

  /** Adds a flow to the table (validated). */
  addFlow(f: FakeFlow): this {
    if (!isIPv4(f.origDst) || !isIPv4(f.replySrc)) throw new RangeError(`FakeConntrack: bad flow ${JSON.stringify(f)}`);
    if (!Number.isInteger(f.origPortDst) || f.origPortDst < 1 || f.origPortDst > 65535) throw new RangeError(`FakeConntrack: bad port ${f.origPortDst}`);
    this.flows.push({ ...f });
    return this;
  }

  /** The flows left. */
  get table(): readonly FakeFlow[] {
    return this.flows;
  }

  /** The next call fails with this error (conntrack missing, netns gone, ...). */
  failNext(err: Error = new NodenetError(ErrorCode.Exec, 'FakeConntrack: conntrack exited 2')): this {
    this.failures.push(err);
    return this;
  }

  async deleteUDPEndpoint(target: ConntrackTarget, endpointIP: IPv4): Promise<number> {
    checkTarget(target);
    if (!isIPv4(endpointIP)) throw new RangeError(`FakeConntrack: endpoint IP must be IPv4, got ${JSON.stringify(endpointIP)}`);
    const failure = this.failures.shift();
    if (failure) throw failure;
    const deleted = this.remove((f) => matches(target, f) && f.replySrc === endpointIP);
    this.calls.push({ op: 'deleteUDPEndpoint', target, endpointIP, deleted });
    return deleted;
  }

  async deleteUDPService(target: ConntrackTarget): Promise<number> {
    checkTarget(target);
    const failure = this.failures.shift();
    if (failure) throw failure;
    const deleted = this.remove((f) => matches(target, f));
    this.calls.push({ op: 'deleteUDPService', target, deleted });
    return deleted;
  }

  /** Calls as short strings, for readable assertions: "endpoint 10.96.0.1:53 -> 10.244.1.2", "service *:30053". */
  describe(): string[] {
    return this.calls.map((c) => {
      const where = c.target.kind === 'serviceIP' ? `${c.target.ip}:${c.target.port}` : `*:${c.target.port}`;
      return c.op === 'deleteUDPEndpoint' ? `endpoint ${where} -> ${c.endpointIP}` : `service ${where}`;
    });
  }

  private remove(pred: (f: FakeFlow) => boolean): number {
    const before = this.flows.length;
    this.flows = this.flows.filter((f) => !pred(f));
    return before - this.flows.length;
  }
}

function matches(target: ConntrackTarget, f: FakeFlow): boolean {
  if (target.kind === 'serviceIP') return f.origDst === target.ip && f.origPortDst === target.port;
  return f.origPortDst === target.port;
}
