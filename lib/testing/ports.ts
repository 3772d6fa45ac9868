/**
 * lib/testing/ports: a free TCP port on loopback for tests that must name a port before something listens on it
 * (a child process, an etcd member). The kernel picks it: bound on 127.0.0.1:0, then released, so another process
 * could take it in between; tests that can listen on port 0 themselves should.
 */
import { createServer } from 'node:net';

/** A free TCP port on 127.0.0.1 (bound, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}
