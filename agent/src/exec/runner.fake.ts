/**
 * A fake Runner that records calls and answers from registered handlers.
 * It rejects any command no handler claims, so a test cannot silently run
 * something it did not expect.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { wrapNetns, type RunOptions, type RunResult, type Runner } from './runner.js';

export type FakeHandler = (argv: readonly string[], opts: RunOptions) => RunResult | undefined;

export class FakeRunner implements Runner {
  readonly calls: { argv: string[]; opts: RunOptions }[] = [];
  private handlers: FakeHandler[] = [];

  on(handler: FakeHandler): this {
    this.handlers.push(handler);
    return this;
  }

  async run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    this.calls.push({ argv: [...argv], opts });
    for (const h of this.handlers) {
      const r = h(argv, opts);
      if (r) {
        if (r.exitCode !== 0 && !opts.allowFailure) {
          throw new NodenetError(ErrorCode.Exec, `${wrapNetns(argv, opts.netns).join(' ')} exited ${r.exitCode}: ${r.stderr}`);
        }
        return r;
      }
    }
    throw new NodenetError(ErrorCode.Exec, `FakeRunner: no handler for ${argv.join(' ')}`);
  }
}
