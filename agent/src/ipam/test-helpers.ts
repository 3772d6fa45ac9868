/** ipam/test-helpers: assertions shared by the ipam tests (not a test file itself). */
import type { Test } from 'tap';
import { NodenetError, type ErrorCode } from '../../../lib/errors/errors.js';

/** Await `p` (or call it) and assert it rejects with a NodenetError of `code` whose message matches `re`. */
export async function rejectsWith(t: Test, p: Promise<unknown> | (() => unknown), code: ErrorCode, re: RegExp): Promise<NodenetError | undefined> {
  try {
    await (typeof p === 'function' ? p() : p);
    t.fail(`expected ${code} matching ${re}`);
    return undefined;
  } catch (e) {
    if (!(e instanceof NodenetError)) {
      t.fail(`expected a NodenetError, got ${String(e)}`);
      return undefined;
    }
    t.equal(e.code, code, `code ${code}`);
    t.match(e.message, re);
    return e;
  }
}
