/**
 * bench/programming/status-watch: notices each new proxy-status.json the
 * agent writes, as soon as it is renamed into place. Effectful.
 *
 * fs.watch on the run directory wakes it (the agent writes a temp file and
 * renames it over the status file); a stat poll every `pollMs` is the
 * fallback when an event is missed. The file is read and parsed only when
 * its inode, mtime or size changed, so the poll costs a stat, not a parse
 * of a megabyte of JSON. `at` is when the change was noticed (epoch ms,
 * sub-ms), before the read.
 */
import { statSync, watch, type FSWatcher } from 'node:fs';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../../agent/src/node/proxy-status.js';

export const epochNow = (): number => performance.timeOrigin + performance.now();

export interface Seen {
  readonly status: ProxyStatus;
  /** Epoch ms the new file was noticed. */
  readonly at: number;
  readonly bytes: number;
}

interface Waiter {
  readonly pred: (s: ProxyStatus) => boolean;
  readonly resolve: (s: Seen) => void;
}

export class StatusWatcher {
  private readonly file: string;
  private fsw: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastKey = '';
  private latest: Seen | null = null;
  private waiters: Waiter[] = [];

  constructor(private readonly runDir: string, private readonly pollMs = 10) {
    this.file = proxyStatusFile(runDir);
  }

  start(): this {
    this.fsw = watch(this.runDir, () => this.check());
    this.fsw.on('error', () => undefined); // the directory goes with the lab; the poll carries on until stop()
    this.timer = setInterval(() => this.check(), this.pollMs);
    this.check();
    return this;
  }

  stop(): void {
    this.fsw?.close();
    if (this.timer) clearInterval(this.timer);
    this.fsw = null;
    this.timer = null;
  }

  private check(): void {
    const at = epochNow();
    let key: string;
    let bytes: number;
    try {
      const st = statSync(this.file);
      key = `${st.ino}:${st.mtimeMs}:${st.size}`;
      bytes = st.size;
    } catch {
      return;
    }
    if (key === this.lastKey) return;
    let status: ProxyStatus | null;
    try {
      status = readProxyStatus(this.file);
    } catch {
      return; // replaced while read: the next event or poll reads the new one
    }
    if (!status) return;
    this.lastKey = key;
    this.latest = { status, at, bytes };
    const ready = this.waiters.filter((w) => w.pred(status));
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve(this.latest);
  }

  /** The first status (the current one included) that satisfies `pred`; rejects after timeoutMs naming `what`. */
  waitFor(pred: (s: ProxyStatus) => boolean, timeoutMs: number, what: string): Promise<Seen> {
    if (this.latest && pred(this.latest.status)) return Promise.resolve(this.latest);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        pred,
        resolve: (s) => {
          clearTimeout(timer);
          resolve(s);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }
}
