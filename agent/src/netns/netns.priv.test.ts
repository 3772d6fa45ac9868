import t from 'tap';
import { statSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NetnsNotFoundError, NodenetError } from '../../../lib/errors/errors.js';
import { currentNetnsInode, netnsInode, toNetnsPath, withNetnsSync } from './netns.js';
import { makeScratchNetns } from './scratch-netns.js';
import { createRtNetlink } from 'netlink';

t.test('toNetnsPath checks existence', async (t) => {
  t.throws(() => toNetnsPath('/run/netns/nn-nl-does-not-exist'), NetnsNotFoundError);
  t.throws(() => toNetnsPath('relative/path'), NetnsNotFoundError);
  t.throws(() => toNetnsPath('/proc'), NetnsNotFoundError, 'a directory is not a namespace');
  t.equal(toNetnsPath('/proc/self/ns/net'), '/proc/self/ns/net');
});

t.test('withNetnsSync runs fn inside the target and always returns', async (t) => {
  const ns = makeScratchNetns(t, 'sw');
  const home = currentNetnsInode();
  const target = netnsInode(ns.path);
  t.not(home, target);

  const seen = withNetnsSync(ns.path, () => currentNetnsInode());
  t.equal(seen, target, 'fn ran in the target namespace');
  t.equal(currentNetnsInode(), home, 'back home after');

  t.throws(() => withNetnsSync(ns.path, () => { throw new Error('boom'); }), /boom/);
  t.equal(currentNetnsInode(), home, 'back home after fn threw');

  t.throws(() => withNetnsSync(ns.path, () => Promise.resolve(1)), NodenetError, 'async fn is rejected');
  t.equal(currentNetnsInode(), home);

  // Nesting returns to the enclosing namespace, then home.
  const ns2 = makeScratchNetns(t, 'sw2');
  const inner = withNetnsSync(ns.path, () => {
    const i = withNetnsSync(ns2.path, () => currentNetnsInode());
    return [i, currentNetnsInode()];
  });
  t.same(inner, [netnsInode(ns2.path), target]);
  t.equal(currentNetnsInode(), home);

  // A socket created inside keeps the namespace: it sees the scratch ns's links, not ours.
  ns.exec(['ip', 'link', 'add', 'nnprobe0', 'type', 'bridge']);
  const sock = withNetnsSync(ns.path, () => createRtNetlink());
  try {
    const names = (await sock.getLinks()).map((l) => l.attrs.ifname).sort();
    t.same(names, ['lo', 'nnprobe0']);
  } finally {
    sock.socket.close();
  }
});

t.test('withNetnsSync on something that is not a netns', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-nl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const f = join(dir, 'placeholder');
  writeFileSync(f, '');
  const home = currentNetnsInode();
  t.throws(() => withNetnsSync(toNetnsPath(f), () => 1), NetnsNotFoundError, 'a plain file (stale placeholder) is NetnsNotFound');
  t.equal(currentNetnsInode(), home);
});

t.test('cost of a setns swap', async (t) => {
  const ns = makeScratchNetns(t, 'cost');
  const n = 2000;
  withNetnsSync(ns.path, () => 0); // warm up (loads libc bindings)
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    withNetnsSync(ns.path, () => 0);
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  samples.sort((a, b) => a - b);
  const med = samples[n >> 1] ?? 0;
  const p99 = samples[Math.floor(n * 0.99)] ?? 0;
  t.comment(`withNetnsSync swap (open + 2x setns + close): median ${med.toFixed(1)} µs, p99 ${p99.toFixed(1)} µs over ${n}`);
  t.ok(med < 1000, 'a swap stays well under a millisecond');
  t.ok(statSync('/proc/thread-self/ns/net').ino === currentNetnsInode());
});
