/**
 * netfilter/nft/netlink/socket: sends one nf_tables batch on a
 * NETLINK_NETFILTER socket and collects the kernel's answers.
 *
 * The socket is a raw AF_NETLINK one made with libc through koffi, created
 * inside the target network namespace (withNetnsSync: setns there, socket(2),
 * setns back, all synchronous on the main thread; the socket stays in the
 * namespace it was made in), and kept for the next batch (NfnlSocket).
 *
 * Why no waiting: netlink delivers a message to the kernel in the sender's
 * context, so when sendto(2) returns, nfnetlink has processed (and committed
 * or aborted) the whole batch and queued every answer on our socket. We read
 * them with MSG_DONTWAIT until EAGAIN, as nft does with a zero timeout. The
 * buffers are forced large (we are root) so that a batch with many acks does
 * not overrun: an overrun (ENOBUFS) is reported as a failure.
 *
 * NETLINK_CAP_ACK keeps error answers small (the request is not echoed);
 * NETLINK_EXT_ACK lets the kernel add its message when it has one.
 */
import koffi from 'koffi';
import { ErrorCode, NodenetError } from '../../../../../lib/errors/errors.js';
import { toNetnsPath, withNetnsSync } from '../../../netns/netns.js';
import { errnoName } from '../../../netns/libc.js';
import { NLMSG_DONE, NLMSG_ERROR as NLMSG_ERR, splitMessages, type NlMessage } from './dump.js';

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0x80000;
const NETLINK_NETFILTER = 12;
const SOL_SOCKET = 1;
const SO_SNDBUFFORCE = 32;
const SO_RCVBUFFORCE = 33;
const SOL_NETLINK = 270;
const NETLINK_CAP_ACK = 10;
const NETLINK_EXT_ACK = 11;
const MSG_DONTWAIT = 0x40;
const EAGAIN = 11;
const EINTR = 4;
const NLMSG_ERROR = 2;
const NLM_F_ACK_TLVS = 0x200;
const NLMSGERR_ATTR_MSG = 1;
const SO_RCVTIMEO = 20;
/** How long request() waits for the next part of an answer before it gives up. */
const REQUEST_TIMEOUT_S = 5;

/** One answer: the seq it answers, 0 or a negative errno, and the kernel's extended-ack message if any. */
export interface NetlinkAnswer {
  readonly seq: number;
  readonly error: number;
  readonly message: string | null;
}

interface Libc {
  /** sendto(2) on a worker thread (koffi's async call): the callback gets what it returned. */
  sendtoAsync(fd: number, buf: Buffer, len: number, flags: number, addr: Buffer, alen: number, cb: (err: unknown, n: number | bigint) => void): void;
  socket(domain: number, type: number, protocol: number): number;
  bind(fd: number, addr: Buffer, len: number): number;
  setsockopt(fd: number, level: number, name: number, val: Buffer, len: number): number;
  sendto(fd: number, buf: Buffer, len: number, flags: number, addr: Buffer, alen: number): number | bigint;
  recv(fd: number, buf: Buffer, len: number, flags: number): number | bigint;
  close(fd: number): number;
  strerror(errnum: number): string;
}

let libc: Libc | undefined;
function load(): Libc {
  if (libc) return libc;
  const lib = koffi.load('libc.so.6');
  const sendto = lib.func('intptr_t sendto(int fd, const void *buf, size_t len, int flags, const void *addr, uint32_t alen)');
  libc = {
    socket: lib.func('int socket(int domain, int type, int protocol)'),
    bind: lib.func('int bind(int fd, const void *addr, uint32_t len)'),
    setsockopt: lib.func('int setsockopt(int fd, int level, int name, const void *val, uint32_t len)'),
    sendto,
    sendtoAsync: (...args) => sendto.async(...args),
    recv: lib.func('intptr_t recv(int fd, _Out_ void *buf, size_t len, int flags)'),
    close: lib.func('int close(int fd)'),
    strerror: lib.func('const char *strerror(int errnum)'),
  } as Libc;
  return libc;
}

/** strerror(3) of a positive errno ("No such file or directory"). */
export function strerror(errno: number): string {
  try {
    return load().strerror(errno) || errnoName(errno);
  } catch {
    return errnoName(errno);
  }
}

function fail(what: string): never {
  const errno = Number(koffi.errno());
  throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: ${what}: ${errnoName(errno)} (${strerror(errno)})`);
}

const intOpt = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
};

/** A struct sockaddr_nl for the kernel (pid 0, no groups). */
function sockaddrNl(): Buffer {
  const sa = Buffer.alloc(12);
  sa.writeUInt16LE(AF_NETLINK, 0);
  return sa;
}

/** Parses received netlink messages; only NLMSG_ERROR (acks and errors) matters here. */
export function parseAnswers(buf: Buffer, out: NetlinkAnswer[]): void {
  let off = 0;
  while (off + 16 <= buf.length) {
    const len = buf.readUInt32LE(off);
    if (len < 16 || off + len > buf.length) break;
    const type = buf.readUInt16LE(off + 4);
    const flags = buf.readUInt16LE(off + 6);
    const seq = buf.readUInt32LE(off + 8);
    if (type === NLMSG_ERROR && len >= 16 + 4 + 16) {
      const error = buf.readInt32LE(off + 16);
      let message: string | null = null;
      if (flags & NLM_F_ACK_TLVS) {
        // After the error and the echoed header (capped: no payload) come the extended-ack TLVs.
        let a = off + 16 + 4 + 16;
        while (a + 4 <= off + len) {
          const alen = buf.readUInt16LE(a);
          const atype = buf.readUInt16LE(a + 2) & 0x3fff;
          if (alen < 4) break;
          if (atype === NLMSGERR_ATTR_MSG) message = buf.subarray(a + 4, a + alen).toString().replace(/\0+$/, '');
          a += (alen + 3) & ~3;
        }
      }
      out.push({ seq, error, message });
    }
    off += (len + 3) & ~3;
  }
}

/** One sendto(2) of the whole buffer to the kernel (retried on EINTR; a short send is an error). */
function sendAll(fd: number, buf: Buffer): void {
  const c = load();
  for (;;) {
    const n = Number(c.sendto(fd, buf, buf.length, 0, sockaddrNl(), 12));
    if (n === buf.length) return;
    if (n < 0 && Number(koffi.errno()) === EINTR) continue;
    if (n < 0) fail('sendto');
    throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: sendto sent ${n} of ${buf.length} bytes`);
  }
}

/**
 * One NETLINK_NETFILTER socket in a namespace, opened on first use and kept:
 * closing a netfilter netlink socket costs 6-15 ms here (the kernel waits for
 * an RCU grace period), as much as a small batch. The owner closes it when it
 * goes idle (a kept socket also keeps its namespace alive).
 */
export class NfnlSocket {
  private fd = -1;
  constructor(private readonly netns?: string) {}

  get isOpen(): boolean {
    return this.fd >= 0;
  }

  private open(): number {
    if (this.fd >= 0) return this.fd;
    const c = load();
    const mk = () => c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    const fd = this.netns !== undefined ? withNetnsSync(toNetnsPath(this.netns), mk) : mk();
    if (fd < 0) fail('socket');
    try {
      if (c.bind(fd, sockaddrNl(), 12) !== 0) fail('bind');
      c.setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, intOpt(1), 4);
      c.setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, intOpt(1), 4);
    } catch (e) {
      c.close(fd);
      throw e;
    }
    this.fd = fd;
    return fd;
  }

  /** Reads everything queued, without waiting. */
  private drain(fd: number, buf: Buffer, out: NetlinkAnswer[] | null): void {
    const c = load();
    for (;;) {
      const n = Number(c.recv(fd, buf, buf.length, MSG_DONTWAIT));
      if (n < 0) {
        const errno = Number(koffi.errno());
        if (errno === EAGAIN) return;
        if (errno === EINTR) continue;
        fail('recv');
      }
      if (n === 0) return;
      if (out) parseAnswers(buf.subarray(0, n), out);
    }
  }

  /**
   * Sends `batch` (whole nf_tables batch messages) and returns every answer
   * the kernel queued for it.
   * @throws NodenetError(NN_ERR_NETLINK) when the socket cannot be made or used (it is closed then).
   */
  send(batch: Buffer): NetlinkAnswer[] {
    const c = load();
    const fd = this.open();
    try {
      // Room for the whole batch and every ack (36 bytes each); best effort beyond the defaults.
      const room = Math.max(1 << 20, batch.length * 2);
      c.setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, intOpt(room), 4);
      c.setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, intOpt(room), 4);
      const buf = Buffer.alloc(1 << 16);
      this.drain(fd, buf, null); // nothing should be left from an earlier batch; never mistake it for this one's
      sendAll(fd, batch);
      const answers: NetlinkAnswer[] = [];
      this.drain(fd, buf, answers);
      return answers;
    } catch (e) {
      this.close();
      throw e;
    }
  }

  /**
   * Readies the socket for batches sent with sendInBackground: room for `bytes` of batches in flight and their
   * answers, and nothing left queued from before.
   */
  prepare(bytes: number): void {
    const c = load();
    const fd = this.open();
    try {
      const room = Math.max(1 << 20, bytes * 2);
      c.setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, intOpt(room), 4);
      c.setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, intOpt(room), 4);
      this.drain(fd, Buffer.alloc(1 << 16), null);
    } catch (e) {
      this.close();
      throw e;
    }
  }

  /**
   * Sends `batch` from a worker thread (koffi's async call), so that this thread goes on while the kernel
   * processes it: it does so inside that sendto(2). Resolves when it returned; the answers stay queued on the
   * socket for collect(). Several may be in flight: the kernel takes nf_tables batches one at a time.
   * Never rejects: a failed send resolves to its message.
   */
  sendInBackground(batch: Buffer): Promise<string | null> {
    const c = load();
    const fd = this.open();
    const addr = sockaddrNl();
    return new Promise((resolve) => {
      c.sendtoAsync(fd, batch, batch.length, 0, addr, 12, (err, n) => {
        void addr; // both buffers stay referenced until the call returned
        if (err) return resolve(`nf_tables netlink: sendto: ${err instanceof Error ? err.message : String(err)}`);
        const sent = Number(n);
        resolve(sent === batch.length ? null : `nf_tables netlink: sendto sent ${sent} of ${batch.length} bytes`);
      });
    });
  }

  /** Every answer queued now (after sendInBackground's sends returned). */
  collect(): NetlinkAnswer[] {
    const fd = this.open();
    const answers: NetlinkAnswer[] = [];
    try {
      this.drain(fd, Buffer.alloc(1 << 16), answers);
    } catch (e) {
      this.close();
      throw e;
    }
    return answers;
  }

  /**
   * Sends one request that is not a batch (a GET, or a dump with
   * NLM_F_DUMP) and returns the kernel's answer messages: through
   * NLMSG_DONE for a dump, through the ack or error otherwise. A dump is
   * produced part by part as we read (the kernel fills the next part inside
   * our recv), so the reads block, for at most REQUEST_TIMEOUT_S each.
   * @throws NodenetError(NN_ERR_NETLINK) when the socket fails or the answer stops coming (the socket is closed then).
   */
  request(msg: Buffer): NlMessage[] {
    const c = load();
    const fd = this.open();
    const seq = msg.readUInt32LE(8);
    const dump = (msg.readUInt16LE(6) & 0x300) !== 0;
    try {
      const tv = Buffer.alloc(16);
      tv.writeBigInt64LE(BigInt(REQUEST_TIMEOUT_S), 0);
      c.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv, 16);
      const buf = Buffer.alloc(1 << 18);
      this.drain(fd, buf, null);
      sendAll(fd, msg);
      const out: NlMessage[] = [];
      for (;;) {
        const n = Number(c.recv(fd, buf, buf.length, 0));
        if (n < 0) {
          const errno = Number(koffi.errno());
          if (errno === EINTR) continue;
          if (errno === EAGAIN) throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: no answer to a request within ${REQUEST_TIMEOUT_S} s`);
          fail('recv');
        }
        const got: NlMessage[] = [];
        splitMessages(Buffer.from(buf.subarray(0, n)), got);
        for (const m of got) {
          if (m.seq !== seq) continue; // not ours (nothing else should be queued)
          out.push(m);
          if (m.type === NLMSG_DONE || m.type === NLMSG_ERR) {
            // A dump's error ends it; a GET ends with its ack or error.
            if (!dump || m.type === NLMSG_DONE || m.payload.readInt32LE(0) !== 0) return out;
          }
        }
      }
    } catch (e) {
      this.close();
      throw e;
    }
  }

  close(): void {
    if (this.fd < 0) return;
    load().close(this.fd);
    this.fd = -1;
  }
}
