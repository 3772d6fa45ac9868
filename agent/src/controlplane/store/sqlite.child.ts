/**
 * controlplane/store/sqlite.child: a test fixture run as its own process by
 * sqlite-persistence.test.ts, so the test can SIGKILL it mid-write. Not
 * imported by the server.
 *
 *   writes FILE ROUND
 *     Opens the store and writes without pause: creates of r<ROUND>-<i>, and
 *     for every third one an update of an earlier key. After each write is
 *     acknowledged it prints "ack <key> <rev>" (writeSync: a printed line was
 *     acknowledged before any kill that follows it).
 */
import { writeSync } from 'node:fs';
import { SqlitePersistence } from './sqlite-persistence.js';
import { Store } from './store.js';

const [mode, file, round] = process.argv.slice(2);
if (mode !== 'writes' || !file || !round) throw new Error('usage: writes FILE ROUND');
const store = new Store({ persistence: new SqlitePersistence(file) });
writeSync(1, `ready ${store.rev}\n`);
let i = 0;
const one = async (): Promise<void> => {
  const name = `r${round}-${i++}`;
  const s = await store.create({ gr: 'services', namespace: 'default', name }, { kind: 'Service', metadata: { name, namespace: 'default' }, spec: { n: i } });
  writeSync(1, `ack ${s.key} ${s.rev}\n`);
  if (i % 3 === 0) {
    const prev = `r${round}-${i - 2}`;
    const u = await store.update({ gr: 'services', namespace: 'default', name: prev }, { kind: 'Service', metadata: { name: prev, namespace: 'default' }, spec: { updated: true } });
    writeSync(1, `ack ${u.key} ${u.rev}\n`);
  }
};
// Eight writers at once, so commits carry several writes each.
await Promise.all(Array.from({ length: 8 }, async () => { for (;;) await one(); }));
