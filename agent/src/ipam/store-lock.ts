/**
 * ipam/store-lock: the in-process half of a Store's lock: a FIFO async mutex
 * that also knows, through AsyncLocalStorage, whether the current async
 * context is inside it. Stores use `held()` to enforce "mutations only under
 * the lock" and to turn a reentrant withLock (which would deadlock) into an
 * error. The cross-process half (flock) is layered on top by the disk store.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { storeMisuse } from './ipam-errors.js';

interface Token {
  readonly owner: StoreLock;
  active: boolean;
}

export class StoreLock {
  private tail: Promise<void> = Promise.resolve();
  private readonly als = new AsyncLocalStorage<Token>();

  constructor(private readonly what: string) {}

  /** True when the caller's async context is inside run() of this lock and run() has not returned yet. */
  held(): boolean {
    const t = this.als.getStore();
    return t !== undefined && t.owner === this && t.active;
  }

  /** Throws unless held(); `op` names the method for the message. */
  assertHeld(op: string): void {
    if (!this.held()) throw storeMisuse(`${op} on ${this.what} called outside withLock`);
  }

  /**
   * Run fn exclusively (FIFO). `acquire`, if given, runs once the in-process
   * turn is ours and returns a release function (e.g. a file lock).
   */
  async run<T>(fn: () => Promise<T>, acquire?: () => Promise<() => Promise<void>>): Promise<T> {
    if (this.held()) throw storeMisuse(`withLock on ${this.what} is not reentrant`);
    const prev = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((r) => (done = r));
    try {
      await prev;
      const release = acquire ? await acquire() : undefined;
      const token: Token = { owner: this, active: true };
      try {
        return await this.als.run(token, fn);
      } finally {
        token.active = false;
        if (release) await release();
      }
    } finally {
      done();
    }
  }
}
