/**
 * stdin: all of the shim's stdin, read synchronously.
 *
 * A synchronous read of fd 0 is the cheap way (process.stdin builds a
 * stream, ~3 ms of a cold start; readFileSync's stat and buffer juggling
 * ~0.2 ms more than read(2) into one buffer). A runtime may hand a
 * non-blocking pipe: on EAGAIN the bytes read so far are kept and the caller
 * reads the rest through the stream.
 */

/** readSync's shape: bytes read into `buf` at `offset` (0 at the end), or throws (`code` EAGAIN when it would block). */
export type ReadSync = (fd: number, buf: Uint8Array, offset: number, length: number) => number;

/** Reads `fd` to its end, or until it would block (`complete` false: the rest is still to come). */
export function readAllSync(read: ReadSync, fd: number): { bytes: Buffer; complete: boolean } {
  let buf = Buffer.allocUnsafe(16 * 1024);
  let len = 0;
  for (;;) {
    if (len === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, len);
      buf = bigger;
    }
    let n: number;
    try {
      n = read(fd, buf, len, buf.length - len);
    } catch (e) {
      if (typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'EAGAIN') return { bytes: buf.subarray(0, len), complete: false };
      throw e;
    }
    if (n === 0) return { bytes: buf.subarray(0, len), complete: true };
    len += n;
  }
}
