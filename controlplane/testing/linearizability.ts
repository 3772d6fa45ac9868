/**
 * controlplane/testing/linearizability: an offline check of a recorded
 * history of creates, compare-and-swap updates, deletes and reads against
 * a per-key register with resourceVersions, in the way Jepsen's Knossos,
 * Porcupine and etcd's robustness tests (tests/robustness/model) check
 * theirs. Pure: the history comes in, a verdict and an explanation go out.
 *
 * - The model: each key holds nothing or one value at a revision; a create
 *   needs the key absent, an update or a delete with a precondition needs
 *   the revision it names, a read returns the value and its revision, and
 *   every write takes a revision above the key's last one.
 * - An operation whose outcome is unknown (a timeout, a connection lost in
 *   flight) may take effect at any point after its invocation, or never:
 *   it has no completion (Porcupine's "return at infinity"), the search may
 *   apply it, and one never applied is one that never took effect. Its
 *   revision is unknown until a later read or precondition names it (the
 *   state then holds a lower bound instead of a revision).
 * - The search is Wing & Gong's with Lowe's memoization, as Porcupine does
 *   it: the calls and returns in time order in a linked list, a call
 *   linearized is lifted out with its return, a return reached with its call
 *   still in the list means backtracking, and a (set of linearized
 *   operations, state) pair seen once is never explored again. Keys are
 *   independent registers (P-compositionality): each is checked alone.
 * - Across keys, revisions are one sequence that follows real time: an
 *   acknowledged write takes a revision above every revision returned
 *   before it was invoked, and no two acknowledged writes share one.
 * - On a failure the explanation is the key and a 1-minimal set of its
 *   operations that cannot be ordered (every one of them is needed: drop
 *   any, with the reads of its value, and the rest can), found by delta
 *   debugging over checks.
 *
 * The recorder (HistoryRecorder) wraps calls, with an injected clock, and
 * classifies their results; storageRegister() records through a Storage.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { ConflictError, type Storage } from '../store/storage.js';
import type { KObject, Stored } from '../store/types.js';

/** What an operation asked. Values are unique per write (a token the writer made), so a read names its write. */
export type Call =
  | { readonly type: 'create'; readonly value: string }
  | { readonly type: 'update'; readonly value: string; readonly expectRev: number }
  | { readonly type: 'delete'; readonly expectRev?: number }
  | { readonly type: 'get' };

/**
 * What it got. `ok` of a write carries the revision it took; of a read, the value and revision it saw. `failed`:
 * definitely not applied (the check ignores it); `unknown`: maybe applied, at any time after the invocation.
 */
export type Result =
  | { readonly type: 'ok'; readonly rv: number; readonly value?: string }
  | { readonly type: 'notFound' }
  | { readonly type: 'exists' }
  | { readonly type: 'conflict' }
  | { readonly type: 'failed'; readonly why?: string }
  | { readonly type: 'unknown'; readonly why?: string };

export interface Op {
  readonly id: number;
  /** Who issued it (a client, a server): for the explanation only. */
  readonly client: string;
  readonly key: string;
  readonly call: Call;
  readonly result: Result;
  /** When it was invoked and when its result came back (any monotonic unit; ignored for an unknown result). */
  readonly invoke: number;
  readonly complete: number;
}

export type Violation =
  | { readonly kind: 'key'; readonly key: string; readonly ops: readonly Op[]; readonly message: string }
  | { readonly kind: 'revisions'; readonly ops: readonly Op[]; readonly message: string }
  | { readonly kind: 'undecided'; readonly key: string; readonly message: string };

export interface CheckResult {
  readonly ok: boolean;
  readonly keys: number;
  /** Operations checked (failed ones and reads without an answer left out). */
  readonly ops: number;
  /** Of which with an unknown outcome. */
  readonly unknown: number;
  readonly violations: readonly Violation[];
}

export interface CheckOptions {
  /** Search steps per key before it is given up as undecided (default 5,000,000). */
  readonly budget?: number;
  /** Keys that exist before the history starts: their value and revision. */
  readonly initial?: ReadonlyMap<string, { readonly value: string; readonly rv: number }>;
}

/** One register's state: the value (null: absent) and its revision, or (rv null) a lower bound on it after an unknown write. */
interface State {
  readonly value: number | null;
  readonly rv: number | null;
  readonly min: number;
}

const rvCanBe = (s: State, rv: number) => (s.rv !== null ? s.rv === rv : rv >= s.min);
const rvCanBeOther = (s: State, rv: number) => s.rv === null || s.rv !== rv;
/** The smallest revision a write after s may take. */
const nextMin = (s: State) => (s.rv !== null ? s.rv + 1 : s.min + 1);

/** A prepared operation: its value interned. */
interface Prep {
  readonly op: Op;
  readonly value: number;
  readonly unknown: boolean;
}

/** The model's step: the state after op, or null when op cannot happen in s. */
function step(s: State, p: Prep, valueOf: (v: string) => number): State | null {
  const { call, result } = p.op;
  const exists = s.value !== null;
  switch (call.type) {
    case 'create':
      if (result.type === 'ok') return !exists && result.rv >= nextMin(s) ? { value: p.value, rv: result.rv, min: 0 } : null;
      if (result.type === 'exists') return exists ? s : null;
      if (result.type === 'unknown') return exists ? null : { value: p.value, rv: null, min: nextMin(s) };
      return null;
    case 'update':
      if (result.type === 'ok') return exists && rvCanBe(s, call.expectRev) && result.rv > call.expectRev ? { value: p.value, rv: result.rv, min: 0 } : null;
      if (result.type === 'conflict') return exists && rvCanBeOther(s, call.expectRev) ? s : null;
      if (result.type === 'notFound') return exists ? null : s;
      if (result.type === 'unknown') return exists && rvCanBe(s, call.expectRev) ? { value: p.value, rv: null, min: call.expectRev + 1 } : null;
      return null;
    case 'delete': {
      const pre = call.expectRev;
      const matches = pre === undefined || rvCanBe(s, pre);
      if (result.type === 'ok') return exists && matches && result.rv >= nextMin(s) && (pre === undefined || result.rv > pre) ? { value: null, rv: result.rv, min: 0 } : null;
      if (result.type === 'conflict') return exists && pre !== undefined && rvCanBeOther(s, pre) ? s : null;
      if (result.type === 'notFound') return exists ? null : s;
      if (result.type === 'unknown') return exists && matches ? { value: null, rv: null, min: pre !== undefined ? pre + 1 : nextMin(s) } : null;
      return null;
    }
    case 'get':
      if (result.type === 'notFound') return exists ? null : s;
      if (result.type === 'ok') {
        if (!exists || s.value !== valueOf(result.value ?? '') || !rvCanBe(s, result.rv)) return null;
        return s.rv === null ? { value: s.value, rv: result.rv, min: 0 } : s;
      }
      return null;
  }
}

const stateKey = (s: State) => `${s.value ?? '-'}:${s.rv ?? `>=${s.min}`}`;

interface Entry {
  readonly call: boolean;
  readonly time: number;
  readonly i: number;
  /** A call's return (null: unknown outcome, no return). */
  match: Entry | null;
  prev: Entry | null;
  next: Entry | null;
}

/** A failure: the longest order found, the state it left, and the operation whose return came with no place for it. */
interface Stuck {
  readonly longest: readonly number[];
  readonly state: State;
  readonly blocked: number;
}
type Verdict = { readonly ok: true } | ({ readonly ok: false; readonly undecided: boolean } & Stuck);

/** Porcupine's checkSingle over one key's operations (see the header). */
function checkKey(preps: readonly Prep[], init: State, valueOf: (v: string) => number, budget: number): Verdict {
  const entries: Entry[] = [];
  for (let i = 0; i < preps.length; i++) {
    const p = preps[i]!;
    const c: Entry = { call: true, time: p.op.invoke, i, match: null, prev: null, next: null };
    entries.push(c);
    if (!p.unknown) {
      const r: Entry = { call: false, time: p.op.complete, i, match: null, prev: null, next: null };
      c.match = r;
      entries.push(r);
    }
  }
  // Time order; at one instant calls first (operations that touch are concurrent), then by operation.
  entries.sort((a, b) => a.time - b.time || (a.call === b.call ? a.i - b.i : a.call ? -1 : 1));
  const head: Entry = { call: false, time: -Infinity, i: -1, match: null, prev: null, next: null };
  let last = head;
  for (const e of entries) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  const lift = (e: Entry) => {
    e.prev!.next = e.next;
    if (e.next) e.next.prev = e.prev;
    const m = e.match;
    if (m) {
      m.prev!.next = m.next;
      if (m.next) m.next.prev = m.prev;
    }
  };
  const unlift = (e: Entry) => {
    const m = e.match;
    if (m) {
      m.prev!.next = m;
      if (m.next) m.next.prev = m;
    }
    e.prev!.next = e;
    if (e.next) e.next.prev = e;
  };
  const bits = new Uint16Array(Math.ceil(preps.length / 16) + 1);
  const flip = (i: number) => {
    bits[i >> 4]! ^= 1 << (i & 15);
  };
  const seen = new Set<string>();
  const stack: { entry: Entry; state: State }[] = [];
  let remaining = preps.filter((p) => !p.unknown).length;
  let state = init;
  let entry = head.next;
  let stuck: Stuck = { longest: [], state: init, blocked: -1 };
  let steps = 0;
  while (remaining > 0) {
    if (++steps > budget) return { ok: false, undecided: true, ...stuck };
    if (!entry) return { ok: false, undecided: false, ...stuck }; // cannot happen: a known op's return follows its call
    if (entry.call) {
      const next = step(state, preps[entry.i]!, valueOf);
      if (next) {
        flip(entry.i);
        const k = `${String.fromCharCode(...bits)}|${stateKey(next)}`;
        if (!seen.has(k)) {
          seen.add(k);
          stack.push({ entry, state });
          state = next;
          lift(entry);
          if (!preps[entry.i]!.unknown) remaining--;
          entry = head.next;
          continue;
        }
        flip(entry.i);
      }
      entry = entry.next;
    } else {
      // A return whose call is still here: nothing ordered so far lets this operation take effect in time.
      if (stack.length >= stuck.longest.length && (stack.length > stuck.longest.length || stuck.blocked < 0)) {
        stuck = { longest: stack.map((x) => x.entry.i), state, blocked: entry.i };
      }
      const top = stack.pop();
      if (!top) return { ok: false, undecided: false, ...stuck };
      state = top.state;
      flip(top.entry.i);
      unlift(top.entry);
      if (!preps[top.entry.i]!.unknown) remaining++;
      entry = top.entry.next;
    }
  }
  return { ok: true };
}

/**
 * What each operation needs to mean anything: the write whose value a read returned, the write whose revision a
 * precondition names. Dropping a write drops these with it, so that the explanation is never "a read of a value
 * nobody wrote" but the writes and reads that conflict.
 */
function dependencies(preps: readonly Prep[]): { specific: number[][]; support: (number[] | null)[] } {
  const byValue = new Map<string, number>();
  const byRev = new Map<number, number>();
  preps.forEach((p, i) => {
    const c = p.op.call;
    if (c.type === 'create' || c.type === 'update') byValue.set(c.value, i);
    if (c.type !== 'get' && p.op.result.type === 'ok') byRev.set(p.op.result.rv, i);
  });
  const specific = preps.map((p) => {
    const out: number[] = [];
    const c = p.op.call;
    const r = p.op.result;
    if (c.type === 'get' && r.type === 'ok' && r.value !== undefined) {
      const w = byValue.get(r.value);
      if (w !== undefined) out.push(w);
    }
    if ((c.type === 'update' || c.type === 'delete') && c.expectRev !== undefined) {
      const w = byRev.get(c.expectRev);
      if (w !== undefined) out.push(w);
    }
    return out;
  });
  // An answer that says the key exists (AlreadyExists, Conflict) needs some create invoked before it returned.
  const support = preps.map((p) => {
    const r = p.op.result.type;
    if (r !== 'exists' && r !== 'conflict') return null;
    return preps.flatMap((q, j) => (q.op.call.type === 'create' && q.op.result.type !== 'exists' && q.op.invoke <= p.op.complete ? [j] : []));
  });
  return { specific, support };
}

/**
 * A 1-minimal failing subset of a key's operations (ddmin's complement step): chunks are dropped, with what depends
 * on them, while the rest still cannot be ordered. Bounded by `checks` checks; the subset reached fails in any case.
 */
function shrink(preps: readonly Prep[], fails: (ps: readonly Prep[]) => boolean, checks = 4000): readonly Prep[] {
  const { specific, support } = dependencies(preps);
  let cur = preps.map((_, i) => i);
  const without = (drop: readonly number[]): number[] => {
    const gone = new Set(drop);
    for (let changed = true; changed; ) {
      changed = false;
      for (const i of cur) {
        const orphan = specific[i]!.some((d) => gone.has(d)) || (support[i] !== null && support[i]!.length > 0 && support[i]!.every((d) => gone.has(d)));
        if (gone.has(i) || !orphan) continue;
        gone.add(i);
        changed = true;
      }
    }
    return cur.filter((i) => !gone.has(i));
  };
  let n = 0;
  for (let chunk = Math.max(1, cur.length >> 1); chunk >= 1 && n < checks; chunk = chunk === 1 ? 0 : Math.max(1, chunk >> 1)) {
    for (let i = 0; i < cur.length && n < checks; ) {
      const candidate = without(cur.slice(i, i + chunk));
      n++;
      if (candidate.length && fails(candidate.map((j) => preps[j]!))) cur = candidate;
      else i += chunk;
    }
  }
  return cur.map((j) => preps[j]!);
}

/** Checks a history (see the header). */
export function checkHistory(history: readonly Op[], o: CheckOptions = {}): CheckResult {
  const budget = o.budget ?? 5_000_000;
  const values = new Map<string, number>();
  const valueOf = (v: string) => {
    let n = values.get(v);
    if (n === undefined) values.set(v, (n = values.size));
    return n;
  };
  const relevant = history.filter((op) => op.result.type !== 'failed' && !(op.call.type === 'get' && op.result.type === 'unknown'));
  const byKey = new Map<string, Prep[]>();
  for (const op of relevant) {
    const value = op.call.type === 'create' || op.call.type === 'update' ? valueOf(op.call.value) : -1;
    let list = byKey.get(op.key);
    if (!list) byKey.set(op.key, (list = []));
    list.push({ op, value, unknown: op.result.type === 'unknown' });
  }
  const violations: Violation[] = [];
  for (const [key, preps] of byKey) {
    const init0 = o.initial?.get(key);
    const init: State = init0 ? { value: valueOf(init0.value), rv: init0.rv, min: 0 } : { value: null, rv: 0, min: 0 };
    const v = checkKey(preps, init, valueOf, budget);
    if (v.ok) continue;
    if (v.undecided) {
      violations.push({ kind: 'undecided', key, message: `${key}: undecided after ${budget} search steps (${preps.length} operations)` });
      continue;
    }
    const fails = (ps: readonly Prep[]) => {
      const r = checkKey(ps, init, valueOf, budget);
      return !r.ok && !r.undecided;
    };
    const min = shrink(preps, fails);
    const ops = min.map((p) => p.op);
    // A write reported as not applied whose value was read all the same: the likeliest explanation, said outright.
    const readValues = new Set(preps.flatMap((p) => (p.op.call.type === 'get' && p.op.result.type === 'ok' && p.op.result.value !== undefined ? [p.op.result.value] : [])));
    const ghosts = history.filter((op) => op.key === key && op.result.type === 'failed' && (op.call.type === 'create' || op.call.type === 'update') && readValues.has(op.call.value));
    violations.push({
      kind: 'key', key, ops,
      message: `${key}: these ${ops.length} operations cannot be ordered (drop any one, with what reads it, and the rest can):\n${ops.map((op) => `  ${describeOp(op)}`).join('\n')}\n` +
        `  the longest order found for the key's ${preps.length} operations: ${tail(v.longest.map((i) => `#${preps[i]!.op.id}`))}\n` +
        `  leaves ${describeState(v.state, values)}, after which ${v.blocked >= 0 ? describeOp(preps[v.blocked]!.op) : '(none)'} cannot take effect` +
        ghosts.map((op) => `\n  reported as not applied, yet its value was read: ${describeOp(op)}`).join(''),
    });
  }
  violations.push(...checkRevisions(relevant));
  return { ok: violations.length === 0, keys: byKey.size, ops: relevant.length, unknown: relevant.filter((op) => op.result.type === 'unknown').length, violations };
}

/** The last 20 of a long list. */
const tail = (xs: readonly string[]) => (xs.length > 20 ? `… ${xs.slice(-20).join(' ')}` : xs.join(' ') || '(none)');

function describeState(s: State, values: ReadonlyMap<string, number>): string {
  if (s.value === null) return `the key absent${s.rv !== null ? ` (since rv=${s.rv})` : ''}`;
  const name = [...values.entries()].find(([, n]) => n === s.value)?.[0] ?? String(s.value);
  return `${name} at ${s.rv !== null ? `rv=${s.rv}` : `an unknown rv >= ${s.min}`}`;
}

/**
 * Across keys: an acknowledged write's revision is above every revision returned before it was invoked (by a
 * write or a read), and two acknowledged writes never share one.
 */
function checkRevisions(ops: readonly Op[]): Violation[] {
  const out: Violation[] = [];
  const writes = ops.filter((op) => op.call.type !== 'get' && op.result.type === 'ok');
  const byRev = new Map<number, Op>();
  for (const w of writes) {
    const rv = (w.result as { rv: number }).rv;
    const other = byRev.get(rv);
    if (other) out.push({ kind: 'revisions', ops: [other, w], message: `two acknowledged writes took revision ${rv}:\n  ${describeOp(other)}\n  ${describeOp(w)}` });
    else byRev.set(rv, w);
  }
  const seen = ops.filter((op) => op.result.type === 'ok').sort((a, b) => a.complete - b.complete);
  const invoked = [...writes].sort((a, b) => a.invoke - b.invoke);
  let j = 0;
  let max: Op | null = null;
  for (const w of invoked) {
    while (j < seen.length && seen[j]!.complete < w.invoke) {
      const s = seen[j++]!;
      if (!max || (s.result as { rv: number }).rv > (max.result as { rv: number }).rv) max = s;
    }
    const rv = (w.result as { rv: number }).rv;
    if (max && (max.result as { rv: number }).rv >= rv) {
      out.push({ kind: 'revisions', ops: [max, w], message: `revision ${rv} was taken by a write invoked after revision ${(max.result as { rv: number }).rv} was returned:\n  ${describeOp(max)}\n  ${describeOp(w)}` });
    }
  }
  return out;
}

/** One operation in a line: `#12 c1 update(k, v7, if rv=40) -> ok rv=52 [100..130]`. */
export function describeOp(op: Op): string {
  const c = op.call;
  const args = c.type === 'create' ? `, ${c.value}` : c.type === 'update' ? `, ${c.value}, if rv=${c.expectRev}` : c.type === 'delete' && c.expectRev !== undefined ? `, if rv=${c.expectRev}` : '';
  const r = op.result;
  const res = r.type === 'ok' ? `ok rv=${r.rv}${r.value !== undefined ? ` ${r.value}` : ''}` : r.type === 'unknown' || r.type === 'failed' ? `${r.type}${r.why ? ` (${r.why})` : ''}` : r.type;
  const end = r.type === 'unknown' ? '…' : String(op.complete);
  return `#${op.id} ${op.client} ${c.type}(${op.key}${args}) -> ${res} [${op.invoke}..${end}]`;
}

/** Every violation, one after the other, for a test's message. */
export function explain(r: CheckResult): string {
  if (r.ok) return `linearizable: ${r.ops} operations on ${r.keys} keys (${r.unknown} with an unknown outcome)`;
  return r.violations.map((v) => v.message).join('\n');
}

/** A clock in any monotonic unit (performance.now in the tests, a counter in unit tests). */
export interface HistoryClock {
  now(): number;
}

/** Records operations: invoke time, the call, its classified result, completion time. */
export class HistoryRecorder {
  private readonly list: Op[] = [];

  constructor(private readonly clock: HistoryClock) {}

  /**
   * Runs fn and records it. `classify` turns its value or its error into a Result; the value or error is passed on
   * unchanged to the caller.
   */
  async record<T>(client: string, key: string, call: Call, fn: () => Promise<T>, classify: (r: { readonly value: T } | { readonly error: unknown }) => Result): Promise<T> {
    const invoke = this.clock.now();
    try {
      const value = await fn();
      this.push(client, key, call, classify({ value }), invoke);
      return value;
    } catch (error) {
      this.push(client, key, call, classify({ error }), invoke);
      throw error;
    }
  }

  /** An operation recorded by hand (an HTTP client that classifies by itself). */
  push(client: string, key: string, call: Call, result: Result, invoke: number, complete = this.clock.now()): Op {
    const op: Op = { id: this.list.length, client, key, call, result, invoke, complete };
    this.list.push(op);
    return op;
  }

  get ops(): readonly Op[] {
    return this.list;
  }
}

/**
 * A storage error as a Result, by the storage's contract: AlreadyExists, Conflict and NotFound are answers;
 * Timeout (the outcome unknown) is unknown; StoreUnavailable (the call reached no member) and every other error
 * is a write that did not happen.
 */
export function classifyStorageError(e: unknown): Result {
  if (e instanceof ConflictError) return { type: 'conflict' };
  if (!(e instanceof NodenetError)) return { type: 'unknown', why: e instanceof Error ? e.message : String(e) };
  switch (e.code) {
    case ErrorCode.AlreadyExists:
      return { type: 'exists' };
    case ErrorCode.Conflict:
      return { type: 'conflict' };
    case ErrorCode.NotFound:
      return { type: 'notFound' };
    case ErrorCode.Timeout:
      return { type: 'unknown', why: e.message };
    default:
      return { type: 'failed', why: `${e.code}: ${e.message}` };
  }
}

/** The register operations of one client, recorded, over a Storage. */
export interface RegisterClient {
  create(key: string, value: string): Promise<Stored>;
  update(key: string, value: string, expectRev: number): Promise<Stored>;
  delete(key: string, expectRev?: number): Promise<Stored>;
  get(key: string): Promise<Stored | undefined>;
}

/**
 * A client of `storage` whose every call is recorded as `client`. An object's value is `make(key, value)` written
 * and `valueOf(object)` read back (default: a ConfigMap-like object with `data.v`).
 */
export function storageRegister(
  storage: Storage,
  rec: HistoryRecorder,
  client: string,
  make: (key: string, value: string) => KObject = (key, value) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: key.split('/').pop() }, data: { v: value } }),
  valueOf: (obj: Readonly<KObject>) => string = (obj) => String((obj['data'] as { v?: unknown } | undefined)?.v ?? ''),
): RegisterClient {
  const wrote = (r: { readonly value: Stored } | { readonly error: unknown }): Result => ('value' in r ? { type: 'ok', rv: r.value.rev } : classifyStorageError(r.error));
  return {
    create: (key, value) => rec.record(client, key, { type: 'create', value }, () => storage.create(key, make(key, value)), wrote),
    update: (key, value, expectRev) => rec.record(client, key, { type: 'update', value, expectRev }, () => storage.update(key, make(key, value), expectRev), wrote),
    delete: (key, expectRev) => rec.record(client, key, expectRev === undefined ? { type: 'delete' } : { type: 'delete', expectRev }, () => storage.delete(key, expectRev), wrote),
    get: (key) =>
      rec.record(client, key, { type: 'get' }, () => storage.get(key), (r) => {
        if ('error' in r) return { type: 'unknown', why: r.error instanceof Error ? r.error.message : String(r.error) };
        return r.value ? { type: 'ok', rv: r.value.rev, value: valueOf(r.value.object) } : { type: 'notFound' };
      }),
  };
}

/**
 * A Kubernetes API answer (HTTP status, and the Status reason of a failure) as a Result for a write: 2xx ok (the
 * caller gives the resourceVersion), 409 AlreadyExists or Conflict, 404, 504 (Timeout: the outcome unknown); 503
 * (the store unreachable: not sent) and other statuses are writes that did not happen. A request that got no
 * answer is unknown: the caller records it so.
 */
export function classifyHttpWrite(code: number, reason: string, rv: number | undefined, message = ''): Result {
  if (code >= 200 && code < 300 && rv !== undefined) return { type: 'ok', rv };
  if (code === 409) return reason === 'AlreadyExists' ? { type: 'exists' } : { type: 'conflict' };
  if (code === 404) return { type: 'notFound' };
  if (code === 504 || code === 0) return { type: 'unknown', why: `${code} ${reason} ${message}`.trim() };
  return { type: 'failed', why: `${code} ${reason} ${message}`.trim() };
}
