/**
 * LocalStorage on real SQLite: what a reopen finds (the high-water mark
 * after a full compaction included), a foreign schema, and the data
 * directory's lock. kill -9 under a stream of writes is the storage
 * contract's crash test (storage.contract.test.ts).
 */
import t, { type Test as Tap } from 'tap';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqlitePersistence } from './sqlite-persistence.js';
import { LocalStorage } from './local-storage.js';

const CHILD = fileURLToPath(new URL('./sqlite.child.ts', import.meta.url));
const key = (name: string) => `services/default/${name}`;
const open = (file: string) => new LocalStorage({ persistence: new SqlitePersistence(file) });

function tempDb(t: Tap): string {
  const d = mkdtempSync(join(tmpdir(), 'nn-sqlite-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return join(d, 'state.db');
}

t.test('objects, revisions, compaction and history survive a reopen', async (t) => {
  const file = tempDb(t);
  const a = open(file);
  for (let i = 0; i < 10; i++) await a.create(key(`s${i}`), { kind: 'Service', metadata: { name: `s${i}` } });
  const s1 = (await a.get(key('s1')))!;
  await a.update(key('s1'), { kind: 'Service', metadata: { name: 's1' }, spec: { x: 1 } }, s1.rev);
  const del = await a.delete(key('s2'));
  await a.compact(5);
  const last = await a.currentRev();
  await a.close();

  const b = open(file);
  t.equal(await b.currentRev(), last);
  t.equal(await b.compactedRev(), 5);
  t.equal((await b.list('services/')).items.length, 9);
  t.same((await b.get(key('s1')))?.object['spec'], { x: 1 });
  t.equal((await b.get(key('s1')))?.createRev, 3);
  const events: string[] = [];
  b.watch({ prefix: 'services/', afterRev: 5, onEvent: (e) => events.push(`${e.type}:${e.rev}`), onError: (e) => t.fail(e.message) });
  t.same(events, ['ADDED:6', 'ADDED:7', 'ADDED:8', 'ADDED:9', 'ADDED:10', 'ADDED:11', 'MODIFIED:12', `DELETED:${del.rev}`]);
  const errors: string[] = [];
  b.watch({ prefix: 'services/', afterRev: 4, onEvent: () => {}, onError: (e) => errors.push(e.code) });
  t.same(errors, ['NN_ERR_EXPIRED']);
  // Compaction removed the rows that held the highest revisions? The high-water mark still holds.
  await b.compact(await b.currentRev());
  await b.close();
  const c = open(file);
  t.equal((await c.create(key('n'), { kind: 'Service', metadata: { name: 'n' } })).rev, last + 1, 'no revision reused after a full compaction');
  await c.close();
});

t.test('a schema-1 database (objects WITHOUT ROWID) is rebuilt to schema 2 with every row, revision and history kept', async (t) => {
  const file = tempDb(t);
  const old = new Database(file);
  old.exec(`
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE objects (key TEXT PRIMARY KEY, rev INTEGER NOT NULL, create_rev INTEGER NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE events (rev INTEGER PRIMARY KEY, key TEXT NOT NULL, type INTEGER NOT NULL, create_rev INTEGER NOT NULL, value TEXT NOT NULL, prev_rev INTEGER NOT NULL, prev TEXT);
    INSERT INTO meta VALUES ('schema', 1), ('compacted', 2);
  `);
  const svc = (name: string, rev: number) => JSON.stringify({ kind: 'Service', metadata: { name, namespace: 'default', resourceVersion: String(rev) } });
  old.prepare('INSERT INTO objects VALUES (?, ?, ?, ?)').run(key('b'), 4, 3, svc('b', 4));
  old.prepare('INSERT INTO objects VALUES (?, ?, ?, ?)').run(key('a'), 5, 5, svc('a', 5));
  old.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)').run(3, key('b'), 0, 3, svc('b', 3), 0, null);
  old.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)').run(4, key('b'), 1, 3, svc('b', 4), 3, svc('b', 3));
  old.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)').run(5, key('a'), 0, 5, svc('a', 5), 0, null);
  old.close();
  const s = open(file);
  t.equal(await s.currentRev(), 5);
  t.equal(await s.compactedRev(), 2);
  t.same((await s.list('services/')).items.map((x) => [x.key, x.rev, x.createRev]), [[key('a'), 5, 5], [key('b'), 4, 3]]);
  const events: string[] = [];
  s.watch({ prefix: 'services/', afterRev: 2, onEvent: (e) => events.push(`${e.type}:${e.rev}`), onError: (e) => t.fail(e.message) });
  t.same(events, ['ADDED:3', 'MODIFIED:4', 'ADDED:5'], 'the history too');
  t.equal((await s.create(key('c'), { kind: 'Service', metadata: { name: 'c' } })).rev, 6, 'writes go on');
  await s.close();
  const check = new Database(file, { readonly: true });
  t.equal(check.prepare("SELECT value FROM meta WHERE name = 'schema'").pluck().get(), 2);
  t.match(String(check.prepare("SELECT sql FROM sqlite_master WHERE name = 'objects'").pluck().get()), /id INTEGER PRIMARY KEY/);
  check.close();
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
  const c = open(file);
  t.ok((await c.currentRev()) > 1, 'opened once it died, with what it had written');
  await c.close();
});
