/**
 * bench/lookup/progress: the progress bar on stderr while the benchmark
 * runs. On a terminal one line redrawn in place (`[####······] 3/15
 * 1:42 nftables, 10,000 Services: data path`); otherwise (CI, a pipe) one
 * line per step, so a log shows where it was.
 */
export function bar(done: number, total: number, width = 24): string {
  const f = total > 0 ? Math.min(1, Math.max(0, done / total)) : 0;
  const full = Math.round(f * width);
  return `[${'#'.repeat(full)}${'·'.repeat(width - full)}]`;
}

export function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export class Progress {
  private readonly t0 = Date.now();
  private last = '';
  constructor(private readonly write: (s: string) => void, private readonly tty: boolean) {}

  /** Case `index` (0-based) of `total` is at step `what`. */
  step(index: number, total: number, what: string): void {
    const line = `${bar(index, total)} ${index + 1}/${total} ${elapsed(Date.now() - this.t0)} ${what}`;
    if (this.tty) {
      const cols = process.stderr.columns || 120;
      this.write(`\r${line.slice(0, cols - 1).padEnd(Math.min(cols - 1, Math.max(this.last.length, line.length)))}`);
    } else {
      this.write(`${line}\n`);
    }
    this.last = line;
  }

  /** A message of its own, above the bar. */
  say(msg: string): void {
    this.write(this.tty && this.last ? `\r\x1b[K${msg}\n` : `${msg}\n`);
    if (this.tty && this.last) this.write(this.last);
  }

  done(): void {
    if (this.tty && this.last) this.write('\n');
    this.last = '';
  }
}
