/**
 * netfilter/ipset: the ipset executor over a Runner (`ipset` 7.x). A batch
 * of set changes is one `ipset restore -exist` on stdin, a listing one
 * `ipset save`: a spawn each per sync, whatever the number of members.
 * Pure text forms in ipset-parse.ts.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Runner } from '../../exec/runner.js';
import { parseIpsetSave, renderIpsetRestore, type IpsetOp, type IpsetState } from './ipset-parse.js';

export interface Ipset {
  /** The sets whose names `keep` accepts, with their members. */
  list(keep: (name: string) => boolean): Promise<Map<string, IpsetState>>;
  /** Applies the ops in one batch, in order (with -exist). Throws NodenetError(RuleApply) naming ipset's complaint. */
  apply(ops: readonly IpsetOp[]): Promise<void>;
}

export class IpsetExecutor implements Ipset {
  constructor(private readonly deps: { readonly runner: Runner; readonly netns?: string }) {}

  private opts(input?: string): { netns?: string; input?: string; allowFailure: true } {
    return { ...(this.deps.netns === undefined ? {} : { netns: this.deps.netns }), ...(input === undefined ? {} : { input }), allowFailure: true };
  }

  async list(keep: (name: string) => boolean): Promise<Map<string, IpsetState>> {
    const r = await this.deps.runner.run(['ipset', 'save'], this.opts());
    if (r.exitCode !== 0) throw new NodenetError(ErrorCode.Exec, `ipset save exited ${r.exitCode}: ${r.stderr.trim().slice(0, 500)}`);
    return parseIpsetSave(r.stdout, keep);
  }

  async apply(ops: readonly IpsetOp[]): Promise<void> {
    if (ops.length === 0) return;
    const input = renderIpsetRestore(ops);
    const r = await this.deps.runner.run(['ipset', 'restore', '-exist'], this.opts(input));
    if (r.exitCode !== 0) {
      // "ipset v7.17: Error in line 3: ..." names the line.
      const m = /Error in line (\d+)/.exec(r.stderr);
      const lines = input.split('\n');
      const at = m ? Number(m[1]) : null;
      const around = at ? lines.slice(Math.max(0, at - 3), at + 2).join('\n') : lines.slice(0, 5).join('\n');
      throw new NodenetError(ErrorCode.RuleApply, `ipset restore of ${ops.length} ops failed: ${r.stderr.trim().slice(0, 500)}`, { details: around });
    }
  }
}
