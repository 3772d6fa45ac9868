/**
 * netfilter/ipvsadm: the Ipvs executor over the `ipvsadm` tool, for nodes
 * where the generic netlink path cannot be used, and as the reference the
 * VM tests compare the genl executor with. A batch is one `ipvsadm -R`
 * (stdin: ipvsadm-parse.ts's renderIpvsadmRestore), a listing one
 * `ipvsadm -Ln`: one spawn per sync, never one per virtual server.
 *
 * `ipvsadm -R` stops at the first line the kernel refuses and does not say
 * which: the error carries the batch, and `applied` is null (unknown); the
 * proxier lists the kernel again before its next sync.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Runner } from '../../exec/runner.js';
import { ipvsadmSaysNoIpvs, ipvsadmSaysNoService, listOneArgs, parseIpvsadmList, renderIpvsadmRestore } from './ipvsadm-parse.js';
import { IpvsApplyError, noIpvsError, type Ipvs, type IpvsOp, type RealServerState, type VirtualServer, type VirtualServerState } from './ipvs-types.js';

export interface IpvsadmDeps {
  readonly runner: Runner;
  /** Run inside this network namespace (a path). */
  readonly netns?: string;
}

export class IpvsadmExecutor implements Ipvs {
  readonly kind = 'ipvsadm' as const;
  constructor(private readonly deps: IpvsadmDeps) {}

  private opts(extra: { input?: string } = {}): { netns?: string; input?: string; allowFailure: true } {
    return { ...(this.deps.netns === undefined ? {} : { netns: this.deps.netns }), ...extra, allowFailure: true };
  }

  async list(): Promise<VirtualServerState[]> {
    const r = await this.deps.runner.run(['ipvsadm', '-L', '-n'], this.opts());
    if (r.exitCode !== 0) {
      if (ipvsadmSaysNoIpvs(r.stderr)) throw noIpvsError(`ipvsadm -Ln: ${r.stderr.trim().split('\n')[0] ?? ''}`);
      throw new NodenetError(ErrorCode.Exec, `ipvsadm -Ln exited ${r.exitCode}: ${r.stderr.trim().slice(0, 500)}`);
    }
    return parseIpvsadmList(r.stdout);
  }

  async listDests(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<RealServerState[] | null> {
    const r = await this.deps.runner.run(['ipvsadm', ...listOneArgs(vs)], this.opts());
    if (r.exitCode !== 0) {
      if (ipvsadmSaysNoService(r.stderr)) return null;
      throw new NodenetError(ErrorCode.Exec, `ipvsadm ${listOneArgs(vs).join(' ')} exited ${r.exitCode}: ${r.stderr.trim().slice(0, 500)}`);
    }
    return parseIpvsadmList(r.stdout)[0]?.dests.slice() ?? null;
  }

  async apply(ops: readonly IpvsOp[]): Promise<void> {
    if (ops.length === 0) return;
    const input = renderIpvsadmRestore(ops);
    const r = await this.deps.runner.run(['ipvsadm', '-R'], this.opts({ input }));
    if (r.exitCode !== 0) {
      const head = input.split('\n').slice(0, 20).join('\n');
      throw new IpvsApplyError(`ipvsadm -R of ${ops.length} ops exited ${r.exitCode}: ${r.stderr.trim().slice(0, 500)}`, null, { details: `input (first lines):\n${head}` });
    }
  }

  async flush(): Promise<void> {
    const r = await this.deps.runner.run(['ipvsadm', '-C'], this.opts());
    if (r.exitCode !== 0 && !ipvsadmSaysNoIpvs(r.stderr)) throw new NodenetError(ErrorCode.Exec, `ipvsadm -C exited ${r.exitCode}: ${r.stderr.trim().slice(0, 500)}`);
  }

  close(): void {}
}
