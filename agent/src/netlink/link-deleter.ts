/**
 * netlink/link-deleter: creates and deletes links on worker threads.
 *
 * Why: deleting a veth makes the kernel wait for RCU grace periods inside
 * the sendmsg() of the RTM_DELLINK (15-25 ms measured here), creating one is
 * ~3 ms of kernel work inside its RTM_NEWLINK, and the netlink package sends
 * on the calling thread. On the agent's main thread every DEL would stall
 * every other call it serves, and an ADD's IP reservation could not start
 * its file work until its veth existed. Each worker holds
 * its own rtnetlink socket; a thread starts in its creator's namespaces, so
 * the workers, made outside any setns swap (the first when the agent starts, the others from the event loop
 * when a burst needs them), act in the agent's own (node) namespace. A few workers let deletions overlap in
 * the kernel as they do for separate plugin processes.
 *
 * Workers are never terminate()d (that can abort the process while one owns
 * a socket, MEASURED.md): close() asks each to close its socket and exit.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { LinkNotFoundError } from '../../../lib/errors/errors.js';
import { NetlinkError } from './netlink-error.js';

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRtNetlink } = require(workerData.netlink);
const sock = createRtNetlink();
sock.socket.on('error', () => {});
let queue = Promise.resolve();
const buffers = (attrs) => {
  for (const k of Object.keys(attrs)) if (attrs[k] instanceof Uint8Array) attrs[k] = Buffer.from(attrs[k]);
  return attrs;
};
parentPort.on('message', (m) => {
  if (m.type === 'close') {
    queue.then(() => { sock.socket.close(); parentPort.close(); });
    return;
  }
  queue = queue.then(async () => {
    try {
      if (m.type === 'newLink') await sock.newLink(m.data, buffers(m.attrs), { flags: m.flags });
      else await sock.delLink({}, { ifname: m.name });
      parentPort.postMessage({ id: m.id, ok: true });
    } catch (e) {
      parentPort.postMessage({ id: m.id, ok: false, message: String((e && e.message) || e) });
    }
  });
});
`;

interface Pending {
  /** The operation, for errors ('deleteLink veth1'); deletions map ENODEV to LinkNotFoundError on `link`. */
  readonly op: string;
  readonly link: string | null;
  resolve(): void;
  reject(e: Error): void;
}

export interface LinkDeleter {
  /** Deletes the link named `name` in the agent's namespace. @throws LinkNotFoundError when there is none. */
  delete(name: string): Promise<void>;
  /**
   * Sends one RTM_NEWLINK (the netlink package's newLink arguments; Buffers as they are) from a worker:
   * creating a veth is ~3 ms of kernel work inside the send. @throws NetlinkError with the kernel's errno.
   */
  newLink(op: string, data: object, attrs: object, flags: number): Promise<void>;
  close(): Promise<void>;
}

export class ThreadedLinkDeleter implements LinkDeleter {
  private readonly workers: { w: Worker; busy: number }[] = [];
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  private closed = false;

  private readonly netlinkRt: string;

  /**
   * One worker starts now; more (up to `threads`) when a request finds every one busy. A worker costs
   * about 80 ms of CPU to start here (and seconds in an emulated VM): an agent that never deletes links
   * in bursts never pays for four.
   */
  constructor(private readonly threads = 4) {
    // Only the rtnetlink part of the package (not its nl80211, WireGuard and genl tables).
    this.netlinkRt = join(dirname(createRequire(import.meta.url).resolve('netlink')), 'rt', 'rt.js');
    this.spawnWorker();
  }

  private spawnWorker(): { w: Worker; busy: number } {
    const w = new Worker(WORKER, { eval: true, workerData: { netlink: this.netlinkRt } });
    w.unref();
    const slot = { w, busy: 0 };
    w.on('message', (m: { id: number; ok: boolean; message?: string }) => {
      slot.busy--;
      if (slot.busy === 0 && !this.closed) w.unref();
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve();
      else if (p.link !== null && /ENODEV/.test(m.message ?? '')) p.reject(new LinkNotFoundError(p.link));
      else p.reject(new NetlinkError(p.op, /\b(E[A-Z0-9]+)\b/.exec(m.message ?? '')?.[1], { details: m.message ?? '' }));
    });
    w.on('error', (e) => {
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new NetlinkError(p.op, undefined, { cause: e }));
      }
    });
    this.workers.push(slot);
    return slot;
  }

  delete(name: string): Promise<void> {
    return this.send(`deleteLink ${name}`, name, { type: 'delLink', name });
  }

  newLink(op: string, data: object, attrs: object, flags: number): Promise<void> {
    return this.send(op, null, { type: 'newLink', data, attrs, flags });
  }

  private send(op: string, link: string | null, msg: object): Promise<void> {
    if (this.closed) return Promise.reject(new NetlinkError(op, 'EBADF', { details: 'link workers closed' }));
    let slot = this.workers.reduce((a, b) => (b.busy < a.busy ? b : a));
    if (slot.busy > 0 && this.workers.length < this.threads) slot = this.spawnWorker();
    const id = ++this.seq;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { op, link, resolve, reject });
      slot.busy++;
      if (slot.busy === 1) slot.w.ref(); // a request in flight keeps the process alive, an idle worker does not
      slot.w.postMessage({ id, ...msg });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      this.workers.map(
        ({ w }) =>
          new Promise<void>((resolve) => {
            w.once('exit', () => resolve());
            w.ref(); // keep the process alive until the worker has closed its socket and exited
            w.postMessage({ type: 'close' });
          }),
      ),
    );
  }
}
