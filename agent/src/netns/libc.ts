/**
 * netns/libc: the three libc calls Node lacks (setns, mount, umount2), bound
 * with koffi. Loaded lazily, on first use, so that importing netns/ costs
 * nothing in processes that never switch namespaces.
 *
 * Each wrapper returns 0 or throws a SyscallError carrying the errno name.
 */
import koffi from 'koffi';
import { getSystemErrorName } from 'node:util';

export const CLONE_NEWNET = 0x40000000;
export const MS_BIND = 0x1000;
export const MNT_DETACH = 0x2;

export class SyscallError extends Error {
  override name = 'SyscallError';
  constructor(readonly syscall: string, readonly errno: number) {
    super(`${syscall}: ${errnoName(errno)}`);
  }
  get code(): string {
    return errnoName(this.errno);
  }
}

export function errnoName(errno: number): string {
  try {
    return getSystemErrorName(-Math.abs(errno));
  } catch {
    return `errno ${errno}`;
  }
}

interface Libc {
  setns(fd: number, nstype: number): number;
  mount(source: string, target: string, fstype: string | null, flags: number, data: null): number;
  umount2(target: string, flags: number): number;
  mallocTrim(pad: number): number;
}

let libc: Libc | undefined;

function load(): Libc {
  if (libc) return libc;
  const lib = koffi.load('libc.so.6');
  const setns = lib.func('int setns(int fd, int nstype)');
  const mount = lib.func('int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const void *data)');
  const umount2 = lib.func('int umount2(const char *target, int flags)');
  const mallocTrim = lib.func('int malloc_trim(size_t pad)');
  libc = {
    mallocTrim: (pad) => Number(mallocTrim(pad)),
    setns: (fd, nstype) => Number(setns(fd, nstype)),
    mount: (source, target, fstype, flags, data) => Number(mount(source, target, fstype, flags, data)),
    umount2: (target, flags) => Number(umount2(target, flags)),
  };
  return libc;
}

function check(syscall: string, rc: number): void {
  if (rc !== 0) throw new SyscallError(syscall, Number(koffi.errno()));
}

/** setns(2) on the calling thread (the main thread when called from the main isolate). */
export function setns(fd: number, nstype: number): void {
  check('setns', load().setns(fd, nstype));
}

/** mount --bind source target (target must exist: a file for a file source). */
export function bindMount(source: string, target: string): void {
  check('mount', load().mount(source, target, null, MS_BIND, null));
}

/** umount2(target, flags); MNT_DETACH makes a busy mount go away lazily. */
export function umount2(target: string, flags: number): void {
  check('umount2', load().umount2(target, flags));
}

/**
 * malloc_trim(3): gives glibc's free heap memory back to the system. Buffers freed by a collection go back
 * to malloc, and glibc's mmap threshold rises with every large buffer freed (up to 32 MB), so the batches of
 * a large sync end up inside the heap, which keeps their pages (14 MiB at 30,000 Services, sharded layout).
 * Returns whether anything was released.
 */
export function mallocTrim(): boolean {
  return load().mallocTrim(0) === 1;
}
