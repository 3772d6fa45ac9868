/**
 * netns: network namespace paths and a synchronous "run this inside that
 * namespace" primitive.
 *
 * A NetnsPath is a branded string minted only by toNetnsPath, after checking
 * the path exists (a /proc/PID/ns/net file or a bind mount of one, such as
 * /var/run/netns/X or the pause holder's <runDir>/netns/<name>). A missing
 * path is a NetnsNotFoundError, which CNI DEL treats as success.
 *
 * withNetnsSync(path, fn) calls setns(2) on the current thread, runs fn
 * synchronously, and setns(2)s back, even if fn throws. Why this is safe in
 * Node although the Go CNI libraries go to great lengths (ns.Do, OS thread
 * locking): the namespace of a thread only matters for the syscalls it makes
 * while switched, and nothing else runs on the JS thread until fn returns.
 * The libuv threadpool threads never switch. So fn must be synchronous: a
 * socket created inside fn keeps the namespace it was created in after we
 * switch back (that is how netlink/ opens sockets in pod namespaces), but
 * the continuation of an async fn would run in the original namespace. A
 * thenable returned by fn is therefore rejected.
 *
 * The namespace to return to is the one the thread was in at its first call
 * (an fd to /proc/thread-self/ns/net kept open for the life of the process),
 * or the enclosing withNetnsSync's target when calls nest.
 *
 * Cost: one open(2) of the target and two setns(2): median 2.5 µs, p99 5 µs
 * per swap on these VMs (netns.priv.test.ts logs it). Creating a netlink
 * socket inside adds ~0.1-0.3 ms, all of it the socket, not the swap.
 */
import { closeSync, openSync, statSync } from 'node:fs';
import { ErrorCode, NetnsNotFoundError, NodenetError } from '../../../lib/errors/errors.js';
import { CLONE_NEWNET, SyscallError, setns } from './libc.js';

declare const netnsBrand: unique symbol;
/** A path to a network namespace file, checked to exist when it was minted. */
export type NetnsPath = string & { readonly [netnsBrand]: true };

/**
 * Mints a NetnsPath after an existence check. It does not open the namespace:
 * a bind-mount placeholder whose mount is gone passes here and fails with
 * NetnsNotFoundError when entered.
 * @throws NetnsNotFoundError if nothing exists at `p` or `p` is a directory.
 */
export function toNetnsPath(p: string): NetnsPath {
  if (!p || !p.startsWith('/')) throw new NetnsNotFoundError(p || '(empty)');
  let isDir: boolean;
  try {
    isDir = statSync(p).isDirectory();
  } catch (e) {
    throw new NetnsNotFoundError(p, { cause: e });
  }
  if (isDir) throw new NetnsNotFoundError(p);
  return p as NetnsPath;
}

/** The inode of the network namespace the calling thread is in (compare namespaces with it). */
export function currentNetnsInode(): number {
  return statSync('/proc/thread-self/ns/net').ino;
}

/** The inode of the network namespace at `path` (the same number for every path to one namespace). */
export function netnsInode(path: NetnsPath): number {
  try {
    return statSync(path).ino;
  } catch (e) {
    throw new NetnsNotFoundError(path, { cause: e });
  }
}

let originalFd: number | undefined;
/** The fd of the namespace to return to when withNetnsSync calls nest; undefined at top level. */
let currentFd: number | undefined;

function getOriginalFd(): number {
  if (originalFd === undefined) originalFd = openSync('/proc/thread-self/ns/net', 'r');
  return originalFd;
}

/**
 * Runs fn inside the network namespace at `path`, synchronously, and returns
 * to the namespace the thread was in before, even if fn throws.
 * Precondition: fn is synchronous (a returned thenable is an error, after restoring).
 * @throws NetnsNotFoundError if `path` cannot be opened or is not a network namespace.
 */
export function withNetnsSync<T>(path: NetnsPath, fn: () => T): T {
  const back = currentFd ?? getOriginalFd();
  let target: number;
  try {
    target = openSync(path, 'r');
  } catch (e) {
    throw new NetnsNotFoundError(path, { cause: e });
  }
  try {
    try {
      setns(target, CLONE_NEWNET);
    } catch (e) {
      // EINVAL: the file is not a network namespace (e.g. a placeholder whose bind mount is gone).
      if (e instanceof SyscallError && e.code === 'EINVAL') throw new NetnsNotFoundError(path, { cause: e });
      throw new NodenetError(ErrorCode.Internal, `setns(${path}): ${String(e)}`, { cause: e });
    }
    const saved = currentFd;
    currentFd = target;
    let result: T;
    try {
      result = fn();
    } finally {
      currentFd = saved;
      try {
        setns(back, CLONE_NEWNET);
      } catch (e) {
        // The thread would keep running in the wrong namespace: nothing sensible can continue.
        process.stderr.write(`nodenet: fatal: cannot return to the original network namespace: ${String(e)}\n`);
        process.abort();
      }
    }
    if (isThenable(result)) {
      throw new NodenetError(ErrorCode.Internal, 'withNetnsSync: fn must be synchronous (it returned a promise)');
    }
    return result;
  } finally {
    closeSync(target);
  }
}

function isThenable(v: unknown): boolean {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
