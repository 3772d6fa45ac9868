/**
 * The Store on real SQLite: what a reopen finds, and kill -9 under a
 * stream of writes, 20 times: every acknowledged write is there, no
 * revision is handed out twice, the history has no hole a watcher would
 * fall into.
 */
import t, { type Test as Tap } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqlitePersistence } from './sqlite-persistence.js';
import { Store } from './store.js';

const CHILD = fileURLToPath(new URL('./sqlite.child.ts', import.meta.url));
const key = (name: string) => ({ gr: 'services', namespace: 'default', name });

function tempDb(t: Tap): string {
  const d = mkdtempSync(join(tmpdir(), 'nn-sqlite-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return join(d, 'state.db');
}

t.test('objects, revisions, compaction and history survive a reopen', async (t) => {
  const file = tempDb(t);
  const a = new Store({ persistence: new SqlitePersistence(file) });
  for (let i = 0; i < 10; i++) await a.create(key(`s${i}`), { kind: 'Service', metadata: { name: `s${i}` } });
  await a.update(key('s1'), { kind: 'Service', metadata: { name: 's1' }, spec: { x: 1 } });
  const del = await a.delete(key('s2'));
  a.compact(5);
  const last = a.rev;
  a.close();

  const b = new Store({ persistence: new SqlitePersistence(file) });
  t.teardown(() => b.close());
  t.equal(b.rev, last);
  t.equal(b.compactedRev, 5);
  t.equal(b.list('services').items.length, 9);
  t.same(b.get(key('s1'))?.object['spec'], { x: 1 });
  t.equal(b.get(key('s1'))?.createRev, 3);
  const events: string[] = [];
  b.watch({ gr: 'services', afterRev: 5, onEvent: (e) => events.push(`${e.type}:${e.rev}`) });
  t.same(events, ['ADDED:6', 'ADDED:7', 'ADDED:8', 'ADDED:9', 'ADDED:10', 'ADDED:11', 'MODIFIED:12', `DELETED:${del.rev}`]);
  t.throws(() => b.watch({ gr: 'services', afterRev: 4, onEvent: () => {} }), { code: 'NN_ERR_EXPIRED' });
  // Compaction removed the rows that held the highest revisions? The high-water mark still holds.
  b.compact(b.rev);
  b.close();
  const c = new Store({ persistence: new SqlitePersistence(file) });
  t.equal((await c.create(key('n'), { kind: 'Service', metadata: { name: 'n' } })).rev, last + 1, 'no revision reused after a full compaction');
  c.close();
});

t.test('a database from another schema is refused, not read', async (t) => {
  const file = tempDb(t);
  new SqlitePersistence(file).close();
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(file);
  db.prepare("UPDATE meta SET value = 99 WHERE name = 'schema'").run();
  db.close();
  t.throws(() => new SqlitePersistence(file), { code: 'NN_ERR_STORE', message: /schema 99/ });
});

t.test('kill -9 under a stream of writes, 20 times: every acknowledged write survives, no revision reused', async (t) => {
  const file = tempDb(t);
  const acked = new Map<string, number>();
  let maxAcked = 0;
  for (let round = 0; round < 20; round++) {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'writes', file, String(round)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    let startRev = -1;
    let n = 0;
    await new Promise<void>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', () => resolve());
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          const [w, k, r] = line.split(' ');
          if (w === 'ready') startRev = Number(k);
          if (w === 'ack') {
            const rev = Number(r);
            if (!(rev > startRev)) t.fail(`round ${round}: revision ${rev} handed out again (start ${startRev})`);
            acked.set(k!, Math.max(acked.get(k!) ?? 0, rev));
            maxAcked = Math.max(maxAcked, rev);
            // Kill at a varying point: after 40 to 230 acknowledgements.
            if (++n === 40 + ((round * 37) % 190)) child.kill('SIGKILL');
          }
        }
      });
    });
    if (startRev < 0) t.fail(`round ${round}: the child never opened the store`);
  }
  const s = new Store({ persistence: new SqlitePersistence(file) });
  t.teardown(() => s.close());
  let missing = 0;
  for (const [k, rev] of acked) {
    const got = s.get(k);
    if (!got || got.rev < rev) missing++;
  }
  t.equal(missing, 0, `all ${acked.size} acknowledged keys are there at (at least) their acknowledged revision`);
  t.ok(s.rev >= maxAcked, `the revision sequence (${s.rev}) is past every acknowledged one (${maxAcked})`);
  const revs: number[] = [];
  s.watch({ gr: 'services', afterRev: 0, onEvent: (e) => revs.push(e.rev) });
  t.ok(revs.every((r, i) => i === 0 || r > revs[i - 1]!), `${revs.length} history events strictly ascending`);
  t.equal(new Set(revs).size, revs.length, 'no revision twice');
});

t.test('one process owns a database: a second opener is refused with the holder\'s pid, until the holder closes or dies (even by SIGKILL)', async (t) => {
  const file = tempDb(t);
  const a = new SqlitePersistence(file);
  t.throws(() => new SqlitePersistence(file), { code: 'NN_ERR_STORE_LOCKED', message: new RegExp(`is in use by another nodenet control plane \\(pid ${process.pid}\\)`) });
  a.close();
  a.close();
  const b = new SqlitePersistence(file);
  b.close();

  // Another process holds it, and is killed: the kernel drops its lock with it.
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'writes', file, 'lock'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('ack ')) resolve(); });
  });
  t.throws(() => new SqlitePersistence(file), { code: 'NN_ERR_STORE_LOCKED', message: new RegExp(`\\(pid ${child.pid}\\)`) }, 'refused while the other process runs');
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
  const c = new Store({ persistence: new SqlitePersistence(file) });
  t.ok(c.rev > 1, 'opened once it died, with what it had written');
  c.close();
});
