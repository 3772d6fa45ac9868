/**
 * The linearizability checker on histories written by hand (each violation
 * it must find, each legal case with unknown outcomes it must accept) and on
 * random histories of a simulated linearizable register, with unknown and
 * failed outcomes (all must pass), and the recorder over a Storage.
 */
import t from 'tap';
import { rng } from '../../lib/testing/rng.js';
import { MemoryStorage } from '../store/memory-storage.js';
import { checkHistory, explain, HistoryRecorder, storageRegister, type Call, type Op, type Result } from './linearizability.js';

/** A history written by hand: op(client, key, call, result, invoke, complete). */
function history() {
  const ops: Op[] = [];
  const op = (client: string, key: string, call: Call, result: Result, invoke: number, complete: number) => {
    ops.push({ id: ops.length, client, key, call, result, invoke, complete });
    return ops.length - 1;
  };
  return { ops, op };
}
const ok = (rv: number, value?: string): Result => (value === undefined ? { type: 'ok', rv } : { type: 'ok', rv, value });
const unknown: Result = { type: 'unknown', why: 'timeout' };
const create = (value: string): Call => ({ type: 'create', value });
const update = (value: string, expectRev: number): Call => ({ type: 'update', value, expectRev });
const get: Call = { type: 'get' };

t.test('a correct concurrent history passes: overlapping creates, CAS updates and reads on two keys', async (t) => {
  const { ops, op } = history();
  op('c1', 'a', create('a1'), ok(2), 0, 10);
  op('c2', 'a', create('a2'), { type: 'exists' }, 1, 12);
  op('c3', 'b', create('b1'), ok(3), 2, 8);
  // A read concurrent with an update may see either version.
  op('c1', 'a', update('a3', 2), ok(5), 11, 20);
  op('c2', 'a', get, ok(2, 'a1'), 13, 25);
  op('c3', 'a', update('a4', 2), { type: 'conflict' }, 14, 22);
  op('c3', 'a', get, ok(5, 'a3'), 23, 24);
  op('c2', 'b', update('b2', 3), ok(6), 26, 30);
  op('c1', 'b', get, ok(6, 'b2'), 31, 32);
  op('c1', 'c', get, { type: 'notFound' }, 31, 32);
  op('c2', 'c', update('c1', 9), { type: 'notFound' }, 33, 34);
  op('c1', 'b', { type: 'delete', expectRev: 6 }, ok(7), 35, 36);
  op('c1', 'b', get, { type: 'notFound' }, 37, 38);
  const r = checkHistory(ops);
  t.ok(r.ok, explain(r));
  t.equal(r.keys, 3);
  t.equal(r.ops, ops.length);
});

t.test('a stale read fails, explained by the key and the three operations that cannot be ordered', async (t) => {
  const { ops, op } = history();
  const c = op('c1', 'k', create('v1'), ok(2), 0, 1);
  op('c2', 'other', create('o1'), ok(3), 0, 2);
  op('c2', 'k', get, ok(2, 'v1'), 2, 3);
  const u = op('c1', 'k', update('v2', 2), ok(4), 3, 5);
  op('c2', 'other', get, ok(3, 'o1'), 4, 6);
  const stale = op('c3', 'k', get, ok(2, 'v1'), 6, 7); // invoked after v2 was acknowledged
  op('c3', 'k', get, ok(4, 'v2'), 8, 9);
  const r = checkHistory(ops);
  t.notOk(r.ok);
  t.equal(r.violations.length, 1);
  const v = r.violations[0]!;
  t.equal(v.kind, 'key');
  t.same(v.kind === 'key' ? [v.key, v.ops.map((o) => o.id)] : [], ['k', [c, u, stale]], 'the key and a minimal set of operations');
  t.match(explain(r), /k: these 3 operations cannot be ordered/);
  t.match(explain(r), /#5 c3 get\(k\) -> ok rv=2 v1 \[6\.\.7\]/);
});

t.test('a lost acknowledged write fails: a create acknowledged, then the key is absent', async (t) => {
  const { ops, op } = history();
  op('c1', 'k', create('v1'), ok(7), 0, 10);
  op('c2', 'k', get, { type: 'notFound' }, 5, 6); // concurrent: fine
  op('c2', 'k', get, { type: 'notFound' }, 11, 12); // after the acknowledgement: lost
  const r = checkHistory(ops);
  t.notOk(r.ok);
  t.same(r.violations.map((v) => v.kind === 'key' && v.ops.map((o) => o.id)), [[0, 2]]);
  // An acknowledged update lost: a later read returns the older version.
  const h2 = history();
  h2.op('c1', 'k', create('v1'), ok(2), 0, 1);
  h2.op('c1', 'k', update('v2', 2), ok(3), 2, 3);
  h2.op('c2', 'k', get, ok(2, 'v1'), 4, 5);
  t.notOk(checkHistory(h2.ops).ok, 'an update lost');
});

t.test('a duplicated or reordered apply fails', async (t) => {
  // The same write applied twice: its value comes back at a second revision after another write.
  const a = history();
  a.op('c1', 'k', create('v1'), ok(2), 0, 1);
  a.op('c2', 'k', update('v2', 2), ok(3), 2, 3);
  a.op('c3', 'k', get, ok(4, 'v1'), 4, 5);
  t.notOk(checkHistory(a.ops).ok, 'v1 applied again after v2');
  // One value at a revision that its create did not take.
  const b = history();
  b.op('c1', 'k', create('v1'), ok(2), 0, 1);
  b.op('c3', 'k', get, ok(5, 'v1'), 4, 5);
  t.notOk(checkHistory(b.ops).ok, 'v1 seen at another revision');
  // Two sequential updates applied in the other order.
  const c = history();
  c.op('c1', 'k', create('v1'), ok(2), 0, 1);
  c.op('c1', 'k', { type: 'delete' }, ok(3), 2, 3);
  c.op('c1', 'k', create('v2'), ok(4), 4, 5);
  c.op('c2', 'k', get, { type: 'notFound' }, 6, 7);
  t.notOk(checkHistory(c.ops).ok, 'the delete applied after the create that followed it');
  // Across keys: revisions out of real-time order, and a revision taken twice.
  const d = history();
  d.op('c1', 'a', create('a1'), ok(10), 0, 5);
  d.op('c2', 'b', create('b1'), ok(8), 6, 7);
  const rd = checkHistory(d.ops);
  t.notOk(rd.ok, 'a write invoked after revision 10 was returned took 8');
  t.same(rd.violations.map((v) => [v.kind, v.kind === 'undecided' ? [] : v.ops.map((o) => o.id)]), [['revisions', [0, 1]]]);
  const e = history();
  e.op('c1', 'a', create('a1'), ok(9), 0, 5);
  e.op('c2', 'b', create('b1'), ok(9), 1, 6);
  const re = checkHistory(e.ops);
  t.notOk(re.ok);
  t.match(explain(re), /two acknowledged writes took revision 9/);
  // A read's revision counts too: a write invoked after a read of revision 12 returned cannot take 11.
  const f = history();
  f.op('c1', 'a', create('a1'), ok(12), 0, 1);
  f.op('c2', 'a', get, ok(12, 'a1'), 2, 3);
  f.op('c2', 'b', create('b1'), ok(11), 4, 5);
  t.notOk(checkHistory(f.ops).ok);
});

t.test('an unknown outcome passes applied or not, and its retry finds it applied once or not at all', async (t) => {
  const applied = history();
  applied.op('c1', 'k', create('v1'), unknown, 0, 0);
  applied.op('c2', 'k', get, { type: 'notFound' }, 1, 2); // not applied yet
  applied.op('c1', 'k', create('v1-retry'), { type: 'exists' }, 3, 4); // the retry finds it
  applied.op('c2', 'k', get, ok(6, 'v1'), 5, 6); // its revision learnt here
  applied.op('c2', 'k', update('v2', 6), ok(7), 7, 8);
  t.ok(checkHistory(applied.ops).ok, explain(checkHistory(applied.ops)));
  const never = history();
  never.op('c1', 'k', create('v1'), unknown, 0, 0);
  never.op('c1', 'k', create('v1-retry'), ok(5), 3, 4);
  never.op('c2', 'k', get, ok(5, 'v1-retry'), 5, 6);
  t.ok(checkHistory(never.ops).ok, 'not applied: the retry created it');
  const twice = history();
  twice.op('c1', 'k', create('v1'), unknown, 0, 0);
  twice.op('c1', 'k', create('v1-retry'), ok(5), 3, 4);
  twice.op('c2', 'k', get, ok(6, 'v1'), 7, 8);
  t.notOk(checkHistory(twice.ops).ok, 'applied and its retry too: v1 cannot appear after the retry created the key');
  // An unknown CAS update: its revision is bound by the first precondition that names it.
  const cas = history();
  cas.op('c1', 'k', create('v1'), ok(2), 0, 1);
  cas.op('c1', 'k', update('v2', 2), unknown, 2, 2);
  cas.op('c2', 'k', update('v3', 4), ok(5), 10, 11); // so v2 took 4
  cas.op('c2', 'k', get, ok(5, 'v3'), 12, 13);
  t.ok(checkHistory(cas.ops).ok, explain(checkHistory(cas.ops)));
  const bad = history();
  bad.op('c1', 'k', create('v1'), ok(2), 0, 1);
  bad.op('c1', 'k', update('v2', 2), unknown, 2, 2);
  bad.op('c2', 'k', get, ok(4, 'v2'), 10, 11);
  bad.op('c2', 'k', get, ok(5, 'v2'), 12, 13);
  t.notOk(checkHistory(bad.ops).ok, 'one write, one revision');
  // An unknown write cannot take effect before it is invoked.
  const early = history();
  early.op('c2', 'k', get, ok(3, 'v1'), 0, 1);
  early.op('c1', 'k', create('v1'), unknown, 2, 2);
  t.notOk(checkHistory(early.ops).ok);
  // Failed writes (definitely not applied) are left out: one seen applied is a violation.
  const failed = history();
  failed.op('c1', 'k', create('v1'), { type: 'failed', why: '503' }, 0, 1);
  failed.op('c2', 'k', get, ok(3, 'v1'), 2, 3);
  t.notOk(checkHistory(failed.ops).ok, 'a write reported as not applied was applied');
});

/**
 * A random history of a simulated linearizable register: clients issue operations with random durations; each
 * takes effect at a random instant inside its interval, in that order, on one store with a global revision. Some
 * outcomes are lost (unknown: applied or not) and some writes are refused before they are sent (failed).
 */
function simulate(seed: number, n: number, keys: number, clients: number): Op[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const store = new Map<string, { value: string; rv: number }>();
  let rev = 1;
  const known = Array.from({ length: clients }, () => new Map<string, number>());
  type Ev = { at: number; kind: 'invoke' | 'apply' | 'complete'; c: number; slot?: Slot };
  type Slot = { key: string; call: Call; invoke: number; complete: number; result?: Result; lost: 'unknown' | 'failed' | null; applied?: boolean };
  const events: Ev[] = Array.from({ length: clients }, (_, c) => ({ at: r() * 5, kind: 'invoke' as const, c }));
  const out: Op[] = [];
  let issued = 0;
  let values = 0;
  const apply = (s: Slot): Result => {
    const cur = store.get(s.key);
    const c = s.call;
    switch (c.type) {
      case 'create':
        if (cur) return { type: 'exists' };
        store.set(s.key, { value: c.value, rv: ++rev });
        return { type: 'ok', rv: rev };
      case 'update':
        if (!cur) return { type: 'notFound' };
        if (cur.rv !== c.expectRev) return { type: 'conflict' };
        store.set(s.key, { value: c.value, rv: ++rev });
        return { type: 'ok', rv: rev };
      case 'delete':
        if (!cur) return { type: 'notFound' };
        if (c.expectRev !== undefined && cur.rv !== c.expectRev) return { type: 'conflict' };
        store.delete(s.key);
        return { type: 'ok', rv: ++rev };
      case 'get':
        return cur ? { type: 'ok', rv: cur.rv, value: cur.value } : { type: 'notFound' };
    }
  };
  while (events.length) {
    events.sort((a, b) => a.at - b.at);
    const ev = events.shift()!;
    if (ev.kind === 'invoke') {
      if (issued++ >= n) continue;
      const key = `k${Math.floor(r() * keys)}`;
      const seen = known[ev.c]!.get(key);
      const x = r();
      const call: Call =
        x < 0.25 ? { type: 'create', value: `v${values++}` }
        : x < 0.6 ? { type: 'update', value: `v${values++}`, expectRev: seen ?? Math.floor(r() * rev) + 1 }
        : x < 0.68 ? (seen !== undefined && r() < 0.7 ? { type: 'delete', expectRev: seen } : { type: 'delete' })
        : { type: 'get' };
      const dur = 0.5 + r() * pick([1, 3, 10]);
      const x2 = r();
      const lost = x2 < 0.05 ? 'unknown' : x2 < 0.08 ? 'failed' : null;
      const slot: Slot = { key, call, invoke: ev.at, complete: ev.at + dur, lost };
      events.push({ at: ev.at + r() * dur, kind: 'apply', c: ev.c, slot });
      events.push({ at: slot.complete, kind: 'complete', c: ev.c, slot });
    } else if (ev.kind === 'apply') {
      const s = ev.slot!;
      // An unknown outcome takes effect or not; a failed one never does.
      if (s.lost === 'failed' || (s.lost === 'unknown' && r() < 0.5)) s.applied = false;
      else {
        s.result = apply(s);
        s.applied = true;
      }
    } else {
      const s = ev.slot!;
      const result: Result = s.lost ? { type: s.lost } : s.result!;
      out.push({ id: out.length, client: `c${ev.c}`, key: s.key, call: s.call, result, invoke: s.invoke, complete: s.complete });
      if (result.type === 'ok') known[ev.c]!.set(s.key, result.rv);
      if (result.type === 'notFound' || (s.call.type === 'delete' && result.type === 'ok')) known[ev.c]!.delete(s.key);
      events.push({ at: s.complete + r() * 2, kind: 'invoke', c: ev.c });
    }
  }
  return out;
}

t.test('property: random histories of a linearizable register, with lost and refused outcomes, all pass', async (t) => {
  let unknowns = 0;
  let ops = 0;
  for (let seed = 1; seed <= 150; seed++) {
    const h = simulate(seed, 60 + (seed % 7) * 40, 1 + (seed % 5), 2 + (seed % 4));
    const r = checkHistory(h);
    unknowns += r.unknown;
    ops += r.ops;
    if (!r.ok) {
      t.fail(`seed ${seed}: ${explain(r)}`);
      return;
    }
  }
  t.ok(unknowns > 100, `${ops} operations checked, ${unknowns} with an unknown outcome`);
});

t.test('property: a random history with one read made stale fails', async (t) => {
  let caught = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const h = simulate(1000 + seed, 200, 2, 3);
    // The last read that saw a value, answered instead with the first version of its key, read after a later write.
    const reads = h.filter((op) => op.call.type === 'get' && op.result.type === 'ok');
    const target = reads.find((rd) => {
      const first = h.find((w) => w.key === rd.key && w.call.type === 'create' && w.result.type === 'ok');
      return first && first.result.type === 'ok' && rd.result.type === 'ok' && rd.result.rv !== first.result.rv &&
        h.some((w) => w.key === rd.key && w.call.type !== 'get' && w.result.type === 'ok' && w.complete < rd.invoke && w.invoke > first.complete);
    });
    if (!target) continue;
    const first = h.find((w) => w.key === target.key && w.call.type === 'create' && w.result.type === 'ok')!;
    const stale: Op = { ...target, result: { type: 'ok', rv: (first.result as { rv: number }).rv, value: (first.call as { value: string }).value } };
    const r = checkHistory(h.map((op) => (op.id === target.id ? stale : op)));
    if (r.ok) {
      t.fail(`seed ${1000 + seed}: a stale read passed`);
      return;
    }
    caught++;
  }
  t.ok(caught >= 10, `${caught} stale reads caught`);
});

t.test('a few thousand operations check quickly (the time in a comment, not asserted)', async (t) => {
  const h = simulate(7, 4000, 8, 8);
  const t0 = performance.now();
  const r = checkHistory(h);
  const ms = performance.now() - t0;
  t.ok(r.ok, explain(r));
  t.equal(r.ops + h.filter((op) => op.result.type === 'failed' || (op.call.type === 'get' && op.result.type === 'unknown')).length, 4000);
  t.comment(`${h.length} operations on 8 keys, 8 clients, ${r.unknown} unknown: checked in ${ms.toFixed(0)} ms`);
});

t.test('the recorder over a Storage: each call and its classified result, with the injected clock', async (t) => {
  let now = 0;
  const rec = new HistoryRecorder({ now: () => now++ });
  const storage = new MemoryStorage();
  const c1 = storageRegister(storage, rec, 'c1');
  const c2 = storageRegister(storage, rec, 'c2');
  const a = await c1.create('configmaps/default/a', 'x1');
  await t.rejects(c2.create('configmaps/default/a', 'x2'), { code: 'NN_ERR_ALREADY_EXISTS' });
  const b = await c2.update('configmaps/default/a', 'x3', a.rev);
  await t.rejects(c1.update('configmaps/default/a', 'x4', a.rev), { code: 'NN_ERR_CONFLICT' });
  t.equal((await c1.get('configmaps/default/a'))?.rev, b.rev);
  t.equal(await c1.get('configmaps/default/b'), undefined);
  await c1.delete('configmaps/default/a', b.rev);
  storage.failNext = 1;
  await t.rejects(c2.create('configmaps/default/c', 'x5'));
  t.same(rec.ops.map((o) => [o.client, o.call.type, o.result.type, o.invoke, o.complete]), [
    ['c1', 'create', 'ok', 0, 1], ['c2', 'create', 'exists', 2, 3], ['c2', 'update', 'ok', 4, 5], ['c1', 'update', 'conflict', 6, 7],
    ['c1', 'get', 'ok', 8, 9], ['c1', 'get', 'notFound', 10, 11], ['c1', 'delete', 'ok', 12, 13], ['c2', 'create', 'failed', 14, 15],
  ]);
  t.same(rec.ops[4]!.result, { type: 'ok', rv: b.rev, value: 'x3' });
  const r = checkHistory(rec.ops);
  t.ok(r.ok, explain(r));
  await storage.close();
});

t.test('a write reported as not applied but read back is named in the explanation', async (t) => {
  const { ops, op } = history();
  op('c1', 'k', create('v1'), ok(2), 0, 1);
  op('c1', 'k', update('v2', 2), { type: 'failed', why: '503 ServiceUnavailable etcd txn: read ECONNRESET' }, 2, 3);
  op('c2', 'k', get, ok(3, 'v2'), 4, 5);
  op('c2', 'k', update('v3', 3), ok(4), 6, 7);
  const r = checkHistory(ops);
  t.notOk(r.ok);
  t.match(explain(r), /reported as not applied, yet its value was read: #1 c1 update\(k, v2, if rv=2\) -> failed \(503 ServiceUnavailable etcd txn: read ECONNRESET\)/);
});
