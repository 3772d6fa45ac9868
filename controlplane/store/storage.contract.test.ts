/**
 * The storage contract (storage.contract.ts) over every backend nodenet has:
 * LocalStorage on real SQLite in a temporary directory, and the in-memory
 * fake. Needs no root.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LocalStorage } from './local-storage.js';
import { MemoryStorage } from './memory-storage.js';
import type { Persistence } from './persistence.js';
import { killWriterMidStream } from './sqlite.crash.js';
import { SqlitePersistence } from './sqlite-persistence.js';
import { storageContract } from './storage.contract.js';
import type { Storage } from './storage.js';

/** SqlitePersistence whose next commit can be made to fail before its transaction starts. */
class Failing implements Persistence {
  failNext = 0;
  constructor(readonly inner: SqlitePersistence) {}
  load() { return this.inner.load(); }
  commit(events: Parameters<Persistence['commit']>[0]) {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('injected: the disk refused the transaction');
    }
    this.inner.commit(events);
  }
  readEvents(after: number, limit: number) { return this.inner.readEvents(after, limit); }
  compact(rev: number) { this.inner.compact(rev); }
  close() { this.inner.close(); }
}

const dir = mkdtempSync(join(tmpdir(), 'nn-storage-contract-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const files = new Map<Storage, { file: string; p: Failing }>();
const sqlite = (file: string) => {
  const p = new Failing(new SqlitePersistence(file));
  const s = new LocalStorage({ persistence: p });
  files.set(s, { file, p });
  return s;
};

storageContract(t, {
  name: 'sqlite',
  open: async () => sqlite(join(dir, `db-${n++}`, 'state.db')),
  reopen: async (s) => {
    const { file } = files.get(s)!;
    await s.close();
    return sqlite(file);
  },
  failNextWrite: (s) => void (files.get(s)!.p.failNext = 1),
  crashRounds: 20,
  crash: async (round) => {
    const file = join(dir, 'crash', 'state.db');
    const { acked } = await killWriterMidStream(file, round);
    return { acked, storage: sqlite(file) };
  },
});

storageContract(t, {
  name: 'memory',
  open: async () => new MemoryStorage(),
  reopen: async (s) => {
    await s.close();
    return new MemoryStorage((s as MemoryStorage).data);
  },
  failNextWrite: (s) => void ((s as MemoryStorage).failNext = 1),
});
