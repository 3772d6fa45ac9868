/**
 * controlplane/store/sqlite.child: a test fixture run as its own process by
 * the SQLite backend's crash test (sqlite.crash.ts), so the test can
 * SIGKILL it mid-write. Not imported by the server.
 *
 *   writes FILE ROUND
 *     Opens the storage and writes without pause: creates of r<ROUND>-<i>,
 *     and for every third one an update of an earlier key. After each write
 *     is acknowledged it prints "ack <key> <rev>" (writeSync: a printed line
 *     was acknowledged before any kill that follows it).
 */
import { writeSync } from 'node:fs';
import { LocalStorage } from './local-storage.js';
import { SqlitePersistence } from './sqlite-persistence.js';
import type { KObject } from './types.js';

const [mode, file, round] = process.argv.slice(2);
if (mode !== 'writes' || !file || !round) throw new Error('usage: writes FILE ROUND');
const storage = new LocalStorage({ persistence: new SqlitePersistence(file) });
writeSync(1, `ready ${await storage.currentRev()}\n`);
const svc = (name: string, spec: Record<string, unknown>): KObject => ({ kind: 'Service', metadata: { name, namespace: 'default' }, spec });
let i = 0;
const one = async (): Promise<void> => {
  const name = `r${round}-${i++}`;
  const s = await storage.create(`services/default/${name}`, svc(name, { n: i }));
  writeSync(1, `ack ${s.key} ${s.rev}\n`);
  if (i % 3 === 0) {
    const prev = `r${round}-${i - 2}`;
    const cur = await storage.get(`services/default/${prev}`);
    if (!cur) return;
    const u = await storage.update(cur.key, svc(prev, { updated: true }), cur.rev).catch(() => null);
    if (u) writeSync(1, `ack ${u.key} ${u.rev}\n`);
  }
};
// Eight writers at once, so commits carry several writes each.
await Promise.all(Array.from({ length: 8 }, async () => { for (;;) await one(); }));
