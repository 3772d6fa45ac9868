/**
 * controlplane/store/storage.contract: what every storage backend promises,
 * as one suite run against each of them (storage.contract.test.ts: SQLite
 * and the in-memory fake; etcd's suite will call it too). Written against
 * storage.ts only, with no knowledge of how a backend delivers: events may
 * come in the write's turn or later, so the suite waits for them.
 *
 * Covered: create-if-absent, compare-and-swap with the current version on
 * a conflict, guaranteedUpdate under contention (no lost update), one
 * ascending revision sequence, get and list at a revision (paged), a watch
 * resumed from every revision of the window with the previous objects,
 * 410 after compaction, a failed write that leaves nothing, a restart, and
 * (for a durable backend) a crash in the middle of a stream of writes.
 */
import type { Test } from 'tap';
import { ConflictError, guaranteedUpdate, StaleRead, TxnFailed, type Storage } from './storage.js';
import type { KObject, Stored, StoreEvent } from './types.js';

export interface CrashResult {
  /** The writes the killed writer saw acknowledged: key and revision. */
  readonly acked: readonly { key: string; rev: number }[];
  /** The backend reopened after the crash. */
  readonly storage: Storage;
}

export interface Backend {
  readonly name: string;
  /** A new, empty backend. */
  open(): Promise<Storage>;
  /** Closes s and opens the same data again (a restart). */
  reopen(s: Storage): Promise<Storage>;
  /** Makes the next write of s fail with nothing stored. */
  failNextWrite(s: Storage): void;
  /** A writer in another process killed (SIGKILL) in the middle of a stream of writes; absent for a backend that is not durable. */
  crash?(round: number): Promise<CrashResult>;
  /** Crash rounds (default 5). */
  readonly crashRounds?: number;
}

const svc = (name: string, spec: Record<string, unknown> = {}, ns = 'default'): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec });
const key = (name: string, ns = 'default') => `services/${ns}/${name}`;
const turn = () => new Promise<void>((r) => setImmediate(r));

/** Waits (turns of the event loop, at most ~2 s) until cond holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await (i < 100 ? turn() : new Promise<void>((r) => setTimeout(r, 1)));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Records every event of a watch from afterRev. */
function record(s: Storage, prefix: string, afterRev: number) {
  const events: StoreEvent[] = [];
  const errors: Error[] = [];
  const h = s.watch({ prefix, afterRev, onEvent: (e) => events.push(e), onError: (e) => errors.push(e) });
  return { events, errors, h };
}

export function storageContract(t: Test, b: Backend): void {
  const opened: Storage[] = [];
  const open = async () => {
    const s = await b.open();
    opened.push(s);
    return s;
  };
  t.teardown(async () => {
    for (const s of opened) await s.close().catch(() => {});
  });

  t.test(`${b.name}: create-if-absent, compare-and-swap, delete: one ascending revision sequence`, async (t) => {
    const s = await open();
    const start = await s.currentRev();
    const a = await s.create(key('a'), svc('a'));
    t.ok(a.rev > start, 'the backend assigns the revision');
    t.equal(a.object.metadata?.['resourceVersion'], String(a.rev), 'the revision is the resourceVersion');
    t.equal(a.createRev, a.rev);
    t.ok((await s.currentRev()) >= a.rev, 'currentRev covers an acknowledged write');
    t.equal((await s.get(key('a')))?.json, a.json, 'read after write');
    await t.rejects(s.create(key('a'), svc('a')), { code: 'NN_ERR_ALREADY_EXISTS' });
    const b2 = await s.update(key('a'), svc('a', { x: 1 }), a.rev);
    t.ok(b2.rev > a.rev);
    t.equal(b2.createRev, a.rev, 'createRev survives updates');
    const lost = await s.update(key('a'), svc('a', { x: 2 }), a.rev).then(() => null, (e: unknown) => e);
    t.ok(lost instanceof ConflictError, 'a stale revision is a Conflict');
    t.equal((lost as ConflictError).current?.rev, b2.rev, 'carrying the current version');
    await t.rejects(s.update(key('nope'), svc('nope'), 1), { code: 'NN_ERR_NOT_FOUND' });
    await t.rejects(s.delete(key('a'), a.rev), { code: 'NN_ERR_CONFLICT' });
    const d = await s.delete(key('a'), b2.rev);
    t.ok(d.rev > b2.rev);
    t.equal(d.object.metadata?.['resourceVersion'], String(d.rev), 'the deleted object carries the deletion revision');
    t.equal(await s.get(key('a')), undefined);
    await t.rejects(s.delete(key('a')), { code: 'NN_ERR_NOT_FOUND' });
    t.equal((await s.create(key('a'), svc('a'))).createRev > d.rev, true, 'a re-created key starts a new life');
  });

  t.test(`${b.name}: a transaction is all or nothing; its checks name the operation that failed`, async (t) => {
    const s = await open();
    const a = await s.create(key('a'), svc('a'));
    const w = record(s, 'services/', a.rev);
    const taken = await s.txn([{ op: 'create', key: key('b'), obj: svc('b') }, { op: 'create', key: key('a'), obj: svc('a') }]).then(() => null, (e: unknown) => e);
    t.ok(taken instanceof TxnFailed && taken.index === 1 && taken.code === 'NN_ERR_ALREADY_EXISTS', 'the second create\'s key is taken');
    t.equal(await s.get(key('b')), undefined, 'so the first is not stored either');
    const stale = await s.txn([{ op: 'update', key: key('a'), obj: svc('a', { x: 1 }), expectRev: a.rev - 1 }]).then(() => null, (e: unknown) => e);
    t.ok(stale instanceof TxnFailed && stale.cause instanceof ConflictError && stale.cause.current?.rev === a.rev, 'a stale revision, with the current version');
    await t.rejects(s.txn([{ op: 'delete', key: key('nope'), expectRev: 5 }]), { code: 'NN_ERR_NOT_FOUND' });
    const out = await s.txn([
      { op: 'update', key: key('a'), obj: svc('a', { x: 2 }), expectRev: a.rev },
      { op: 'create', key: key('b'), obj: svc('b') },
      { op: 'delete', key: key('never-was') },
    ]);
    t.equal(out[2], undefined, 'a delete of nothing without a revision is no write');
    const [ua, cb] = out as Stored[];
    t.ok(ua!.rev > a.rev && cb!.rev >= ua!.rev, 'the writes take revisions above everything before, in order');
    t.same((await s.list('services/', { rev: cb!.rev })).items.map((x) => x.json), [ua!.json, cb!.json], 'a list at the transaction\'s revision has all of it');
    const end = await s.currentRev();
    await until(() => w.h.progressRev >= end, 'the events');
    t.same(w.events.map((e) => `${e.type} ${e.key}`), [`MODIFIED ${key('a')}`, `ADDED ${key('b')}`], 'one event per write, none for the failed ones');
    const gone = await s.txn([{ op: 'delete', key: key('a'), expectRev: ua!.rev }, { op: 'delete', key: key('b') }]);
    t.equal(gone[0]!.object.metadata?.['resourceVersion'], String(gone[0]!.rev), 'a deleted object carries the deletion revision');
    t.same((await s.list('services/')).items, []);
    w.h.stop();
  });

  t.test(`${b.name}: guaranteedUpdate under contention loses no update; every writer gets its own revision`, async (t) => {
    const s = await open();
    await s.create(key('counter'), svc('counter', { n: 0 }));
    const writers = 8;
    const each = 10;
    const revs: number[] = [];
    let decisions = 0;
    await Promise.all(
      Array.from({ length: writers }, async () => {
        for (let i = 0; i < each; i++) {
          const r = await guaranteedUpdate(s, key('counter'), (cur) => {
            decisions++;
            const n = (cur.object['spec'] as { n: number }).n;
            return { write: svc('counter', { n: n + 1 }) };
          }, { attempts: 1000 });
          revs.push(r.stored.rev);
        }
      }),
    );
    const final = await s.get(key('counter'));
    t.equal((final!.object['spec'] as { n: number }).n, writers * each, 'every increment is there');
    t.equal(new Set(revs).size, revs.length, 'no revision handed out twice');
    t.ok(decisions >= writers * each, `${decisions} decisions for ${writers * each} writes`);
    // A stale cached version is corrected by the backend's current one.
    const stale: Stored = { ...final!, rev: final!.rev - 1 };
    const r = await guaranteedUpdate(s, key('counter'), (cur) => ({ write: svc('counter', { n: (cur.object['spec'] as { n: number }).n + 1 }) }), { cached: stale });
    t.equal((r.stored.object['spec'] as { n: number }).n, writers * each + 1, 'retried from the current version');
    // A precondition that fails on a cached version is checked again on a fresh one.
    const fresh = await s.get(key('counter'));
    let freshSeen = false;
    await guaranteedUpdate(s, key('counter'), (cur, isFresh) => {
      if (cur.rev !== fresh!.rev) throw new StaleRead(new Error('precondition'));
      freshSeen = isFresh;
      return { keep: true };
    }, { cached: stale });
    t.ok(freshSeen, 'StaleRead: decided again on the backend\'s version');
    await t.rejects(guaranteedUpdate(s, key('gone'), () => ({ keep: true })), { code: 'NN_ERR_NOT_FOUND' });
    const del = await guaranteedUpdate(s, key('counter'), () => ({ delete: true }));
    t.equal(del.outcome, 'deleted');
    t.equal(await s.get(key('counter')), undefined);
  });

  t.test(`${b.name}: get and list at a revision, paged, stay at their snapshot while writes go on`, async (t) => {
    const s = await open();
    const snapshots: { rev: number; keys: string[]; json: Map<string, string> }[] = [];
    const live = new Map<string, string>();
    for (let i = 0; i < 30; i++) {
      const name = `s${String(i % 12).padStart(2, '0')}`;
      let st: Stored;
      if (i % 7 === 6 && live.has(key(name))) {
        st = await s.delete(key(name));
        live.delete(key(name));
      } else if (live.has(key(name))) {
        st = await s.update(key(name), svc(name, { i }), (await s.get(key(name)))!.rev);
        live.set(key(name), st.json);
      } else {
        st = await s.create(key(name), svc(name, { i }));
        live.set(key(name), st.json);
      }
      await s.create(`pods/default/p${i}`, { kind: 'Pod', metadata: { name: `p${i}`, namespace: 'default' } });
      snapshots.push({ rev: st.rev, keys: [...live.keys()].sort(), json: new Map(live) });
    }
    for (const snap of snapshots) {
      const all = await s.list('services/', { rev: snap.rev });
      t.equal(all.rev, snap.rev);
      t.same(all.items.map((x) => x.key), snap.keys, `list at ${snap.rev}`);
      t.same(all.items.map((x) => x.json), snap.keys.map((k) => snap.json.get(k)), `the versions at ${snap.rev}`);
      // Pages of 5 at the same revision make up the same list.
      const paged: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await s.list('services/', { rev: snap.rev, limit: 5, ...(after ? { after } : {}) });
        paged.push(...page.items.map((x) => x.key));
        if (!page.more) break;
        after = page.items[page.items.length - 1]!.key;
      }
      t.same(paged, snap.keys, `pages at ${snap.rev}`);
      const first = snap.keys[0]!;
      t.equal((await s.get(first, { rev: snap.rev }))?.json, snap.json.get(first), `get at ${snap.rev}`);
    }
    t.same((await s.list('services/other/')).items, [], 'a prefix selects one namespace');
    t.equal((await s.list('pods/')).items.length, 30);
  });

  t.test(`${b.name}: a watch resumed from every revision of the window gets exactly the events after it, with the previous objects`, async (t) => {
    const s = await open();
    const from = await s.currentRev();
    const all = record(s, 'services/', from);
    for (let i = 0; i < 25; i++) {
      const name = `w${i % 6}`;
      const cur = await s.get(key(name));
      if (!cur) await s.create(key(name), svc(name, { i }));
      else if (i % 5 === 4) await s.delete(key(name), cur.rev);
      else await s.update(key(name), svc(name, { i }), cur.rev);
      await s.create(`pods/default/q${i}`, { kind: 'Pod', metadata: { name: `q${i}` } });
    }
    const end = await s.currentRev();
    await until(() => all.h.progressRev >= end, 'the first watch to catch up');
    t.equal(all.events.length, 25, 'one event per write of the prefix, none of the other prefix');
    t.same(all.events.map((e) => e.rev), [...all.events.map((e) => e.rev)].sort((a, b) => a - b), 'in revision order');
    const last = new Map<string, Stored>();
    for (const e of all.events) {
      t.equal(e.prev?.json, last.get(e.key)?.json, `the previous object of ${e.type} ${e.key} at ${e.rev}`);
      if (e.type === 'DELETED') last.delete(e.key);
      else last.set(e.key, e.cur);
    }
    for (let r = from; r <= end; r++) {
      const w = record(s, 'services/', r);
      await until(() => w.h.progressRev >= end, `the watch from ${r}`);
      t.same(w.events.map((e) => e.rev), all.events.filter((e) => e.rev > r).map((e) => e.rev), `from ${r}`);
      w.h.stop();
    }
    all.h.stop();
    // A throwing watcher is stopped; the others go on.
    const good = record(s, 'services/', end);
    s.watch({ prefix: 'services/', afterRev: end, onEvent: () => { throw new Error('client gone'); }, onError: () => {} });
    await s.create(key('x1'), svc('x1'));
    await s.create(key('x2'), svc('x2'));
    await until(() => good.events.length === 2, 'the good watcher');
    good.h.stop();
  });

  t.test(`${b.name}: after compaction, a watch or a list from below it is a 410; at it, complete`, async (t) => {
    const s = await open();
    const revs: number[] = [];
    for (let i = 0; i < 10; i++) revs.push((await s.create(key(`c${i}`), svc(`c${i}`))).rev);
    await s.compact(revs[5]!);
    t.equal(await s.compactedRev(), revs[5]);
    const below = record(s, 'services/', revs[4]!);
    await until(() => below.errors.length > 0, 'the error');
    t.match(below.errors[0], { code: 'NN_ERR_EXPIRED', message: /too old resource version/ });
    t.same(below.events, [], 'no event before the error');
    await t.rejects(s.list('services/', { rev: revs[4]! }), { code: 'NN_ERR_EXPIRED' });
    const at = record(s, 'services/', revs[5]!);
    const end = await s.currentRev();
    await until(() => at.h.progressRev >= end, 'the watch at the compacted revision');
    t.same(at.events.map((e) => e.rev), revs.slice(6));
    t.equal((await s.list('services/', { rev: revs[5]! })).items.length, 6);
    at.h.stop();
    await s.compact(revs[3]!);
    t.equal(await s.compactedRev(), revs[5], 'compaction never goes back');
  });

  t.test(`${b.name}: a failed write stores nothing, takes no visible revision and reaches no watcher`, async (t) => {
    const s = await open();
    const keep = await s.create(key('keep'), svc('keep'));
    const w = record(s, 'services/', keep.rev);
    b.failNextWrite(s);
    await t.rejects(s.create(key('a'), svc('a')), { code: 'NN_ERR_STORE' });
    t.equal(await s.get(key('a')), undefined);
    const after = await s.update(key('keep'), svc('keep', { z: 1 }), keep.rev);
    await until(() => w.events.length === 1, 'the next write');
    t.same(w.events.map((e) => e.key), [key('keep')], 'only the write that succeeded');
    t.ok(after.rev > keep.rev);
    w.h.stop();
  });

  t.test(`${b.name}: a restart keeps every object, the revision sequence and the history`, async (t) => {
    let s = await open();
    const first = await s.currentRev();
    for (let i = 0; i < 5; i++) await s.create(key(`r${i}`), svc(`r${i}`));
    await s.delete(key('r0'));
    const last = await s.currentRev();
    const i = opened.indexOf(s);
    s = await b.reopen(s);
    opened[i] = s;
    t.equal(await s.currentRev(), last);
    t.same((await s.list('services/')).items.map((x) => x.key), [key('r1'), key('r2'), key('r3'), key('r4')]);
    const replay = record(s, 'services/', first);
    await until(() => replay.h.progressRev >= last, 'the replay');
    t.same(replay.events.map((e) => e.type), ['ADDED', 'ADDED', 'ADDED', 'ADDED', 'ADDED', 'DELETED']);
    t.ok((await s.create(key('n'), svc('n'))).rev > last, 'no revision reused');
    replay.h.stop();
  });

  t.test(`${b.name}: a crash in the middle of a stream of writes`, async (t) => {
    if (!b.crash) {
      const s = await open();
      t.equal(s.durable, false, 'a backend without a crash test says it is not durable (nothing of it survives a crash)');
      return;
    }
    let highest = 0;
    let survived = 0;
    for (let round = 0; round < (b.crashRounds ?? 5); round++) {
      const { acked, storage } = await b.crash(round);
      opened.push(storage);
      for (const a of acked) {
        const got = await storage.get(a.key);
        if (!got || got.rev < a.rev) t.fail(`round ${round}: acknowledged ${a.key}@${a.rev} is ${got ? `at ${got.rev}` : 'gone'}`);
        else survived++;
        highest = Math.max(highest, a.rev);
      }
      const next = await storage.create(`services/default/after-${round}`, svc(`after-${round}`));
      t.ok(next.rev > highest, `round ${round}: the first write after the crash takes a new revision (${next.rev} > ${highest})`);
      highest = next.rev;
      await storage.close();
    }
    t.ok(survived > 0, `${survived} acknowledged writes checked`);
  });
}
