/**
 * out: the shim's stdout and stderr, written straight to fds 1 and 2.
 *
 * Why: the first touch of process.stdout builds a stream (node:stream, and a
 * net.Socket when fd 1 is a pipe, as under a runtime): ~6 ms of CPU in a shim
 * that loaded neither (measured here, Node 20), for one write of a few hundred
 * bytes. A synchronous write(2) is what the shim needs: it prints once and
 * exits.
 *
 * A runtime may hand the shim a non-blocking pipe: on EAGAIN the rest goes
 * to the fd's Node stream, which waits until the pipe takes it, and every
 * later write to that fd follows the same way, so the order holds. `flushed`
 * resolves when such a stream has written everything (the shim exits then).
 * Any other write error drops that fd's output: the reader is gone (EPIPE)
 * and the exit code still tells the runtime what happened.
 */

/** writeSync's shape: bytes written, or throws (an `code` of EAGAIN when the fd would block). */
export type WriteSync = (fd: number, data: Uint8Array) => number;

/** The fallback: a stream for the fd that calls `done` once `data` is written. */
export type StreamWrite = (fd: number, data: Uint8Array, done: () => void) => void;

function isEagain(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'EAGAIN';
}

export class Output {
  private readonly viaStream = new Set<number>();
  private readonly dropped = new Set<number>();
  private pending = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly writeSync: WriteSync, private readonly streamWrite: StreamWrite) {}

  write(fd: number, data: string | Uint8Array): void {
    if (this.dropped.has(fd)) return;
    let rest = typeof data === 'string' ? Buffer.from(data) : data;
    if (!this.viaStream.has(fd)) {
      try {
        while (rest.length > 0) rest = rest.subarray(this.writeSync(fd, rest));
        return;
      } catch (e) {
        if (!isEagain(e)) {
          this.dropped.add(fd);
          return;
        }
        this.viaStream.add(fd);
      }
    }
    this.pending++;
    this.streamWrite(fd, rest, () => {
      if (--this.pending === 0) for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Resolves once everything written so far has reached its fd. */
  flushed(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
