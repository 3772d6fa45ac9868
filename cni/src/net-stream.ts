/**
 * net-stream: unix-stream.ts's interface over node:net, for a Node whose
 * pipe_wrap binding the shim cannot use. Imported lazily: loading node:net
 * is what the other transport avoids.
 */
import { connect } from 'node:net';
import type { StreamHandlers, UnixStream } from './unix-stream.js';

export function netStream(path: string, h: StreamHandlers): UnixStream {
  const sock = connect(path);
  let closed = false;
  sock.on('connect', () => {
    if (!closed) h.connect();
  });
  sock.on('data', (chunk: Buffer) => {
    if (!closed) h.data(chunk);
  });
  sock.on('error', (e: NodeJS.ErrnoException) => {
    if (closed) return;
    closed = true;
    h.error(e.code ?? e.message);
  });
  sock.on('close', () => {
    if (closed) return;
    closed = true;
    h.end();
  });
  return {
    write(data) {
      if (!closed) sock.write(data);
    },
    close() {
      closed = true;
      sock.destroy();
    },
  };
}
