/**
 * bench/lib/ndjson: a watch stream's newline-delimited JSON, cut into
 * lines as its chunks arrive (a chunk may end inside a line, or hold many). Pure.
 */
export class LineSplitter {
  private rest = '';

  /** The lines the chunk completes (without their "\n"; empty lines dropped). */
  push(chunk: string): string[] {
    const text = this.rest + chunk;
    const parts = text.split('\n');
    this.rest = parts.pop()!;
    return parts.filter((l) => l.trim() !== '');
  }

  /** What arrived after the last newline (a line cut off when the stream ended). */
  get pending(): string {
    return this.rest;
  }
}

export interface WatchLine {
  readonly type: string;
  readonly name: string;
  readonly resourceVersion: string;
}

/** The type and object name of one watch event line. @throws TypeError when it is not one. */
export function parseWatchLine(line: string): WatchLine {
  const o = JSON.parse(line) as unknown;
  if (typeof o !== 'object' || o === null) throw new TypeError(`watch event: not an object: ${line.slice(0, 120)}`);
  const { type, object } = o as { type?: unknown; object?: unknown };
  if (typeof type !== 'string') throw new TypeError(`watch event: no type: ${line.slice(0, 120)}`);
  const meta = typeof object === 'object' && object !== null ? (object as { metadata?: unknown }).metadata : undefined;
  const m = typeof meta === 'object' && meta !== null ? (meta as { name?: unknown; resourceVersion?: unknown }) : {};
  return { type, name: typeof m.name === 'string' ? m.name : '', resourceVersion: typeof m.resourceVersion === 'string' ? m.resourceVersion : '' };
}
