/**
 * The part of tap's API the shared suites use (test/services-suite.ts), for
 * running them inside a VM: the runner's esbuild aliases `tap` to this file
 * when it bundles the guest side. tap itself would load hundreds of files
 * over 9p and a TypeScript loader in an emulated CPU; this is one bundle.
 *
 * A suite module registers on the default export synchronously (before,
 * test, teardown), as on tap's root test. Several suites can run side by
 * side in one process: `collect(name, register)` points the default export
 * at a new Harness while `register` runs, and the Harness's `run()` runs its
 * subtests in order. Subtests get their own Test (as in tap, their callbacks
 * use that, never the root), so they never touch the default export.
 *
 * Semantics as tap's for what is here: `same` is deep equality; `match`
 * takes a RegExp (tested against the value as a string), a string (a
 * substring) or an object pattern (each of its fields matched in turn).
 */
import { isDeepStrictEqual, inspect } from 'node:util';

type Fn = () => unknown;

function matches(value: unknown, pattern: unknown): boolean {
  if (pattern instanceof RegExp) return pattern.test(String(value));
  if (typeof pattern === 'string') return String(value).includes(pattern);
  if (pattern !== null && typeof pattern === 'object') {
    if (value === null || typeof value !== 'object') return false;
    return Object.entries(pattern).every(([k, p]) => matches((value as Record<string, unknown>)[k], p));
  }
  return value == pattern; // tap's match is loose for scalars
}

const show = (v: unknown): string => inspect(v, { depth: 4, breakLength: 160 }).slice(0, 600);

/** One (sub)test: its assertions and teardowns. */
export class Test {
  passed = 0;
  readonly failures: string[] = [];
  private readonly teardowns: Fn[] = [];

  constructor(readonly name: string) {}

  private check(ok: boolean, msg: string | undefined, why: () => string): boolean {
    if (ok) this.passed++;
    else this.failures.push(`${msg ?? 'assertion'}: ${why()}`);
    return ok;
  }

  ok(v: unknown, msg?: string): boolean { return this.check(Boolean(v), msg, () => `expected truthy, got ${show(v)}`); }
  notOk(v: unknown, msg?: string): boolean { return this.check(!v, msg, () => `expected falsy, got ${show(v)}`); }
  pass(msg?: string): boolean { return this.check(true, msg, () => ''); }
  fail(msg?: string): boolean { return this.check(false, msg, () => 'failed'); }
  equal(a: unknown, b: unknown, msg?: string): boolean { return this.check(a === b, msg, () => `${show(a)} !== ${show(b)}`); }
  not(a: unknown, b: unknown, msg?: string): boolean { return this.check(a !== b, msg, () => `${show(a)} === ${show(b)}`); }
  same(a: unknown, b: unknown, msg?: string): boolean { return this.check(isDeepStrictEqual(a, b), msg, () => `${show(a)} is not ${show(b)}`); }
  match(v: unknown, p: unknown, msg?: string): boolean { return this.check(matches(v, p), msg, () => `${show(v)} does not match ${show(p)}`); }
  notMatch(v: unknown, p: unknown, msg?: string): boolean { return this.check(!matches(v, p), msg, () => `${show(v)} matches ${show(p)}`); }
  teardown(fn: Fn): void { this.teardowns.push(fn); }
  comment(...args: unknown[]): void { process.stdout.write(`# ${args.map(String).join(' ')}\n`); }

  /** Runs the teardowns, last first; a failing one is a failure of this test. */
  async finish(): Promise<void> {
    for (const fn of this.teardowns.reverse()) {
      try { await fn(); } catch (e) { this.failures.push(`teardown: ${e instanceof Error ? e.message : String(e)}`); }
    }
  }
}

export interface HarnessResult { readonly name: string; readonly passed: number; readonly failed: number; readonly tests: number; readonly failures: readonly string[] }

/** A root test: before hooks, subtests in order, teardowns. */
export class Harness extends Test {
  private readonly befores: Fn[] = [];
  private readonly subtests: { name: string; fn: (t: Test) => unknown }[] = [];

  constructor(name: string, private readonly log: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {
    super(name);
  }

  before(fn: Fn): void { this.befores.push(fn); }
  test(name: string, fn: (t: Test) => unknown): void { this.subtests.push({ name, fn }); }

  async run(): Promise<HarnessResult> {
    const all: string[] = [];
    let passed = 0;
    let failedTests = 0;
    let setupFailed = false;
    try {
      for (const fn of this.befores) await fn();
    } catch (e) {
      setupFailed = true;
      all.push(`before: ${e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e)}`);
      this.log(`not ok - ${this.name}: before: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!setupFailed) {
      for (const [i, st] of this.subtests.entries()) {
        const sub = new Test(st.name);
        const t0 = Date.now();
        try {
          await st.fn(sub);
        } catch (e) {
          sub.failures.push(`threw: ${e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e)}`);
        }
        await sub.finish();
        passed += sub.passed;
        const secs = ((Date.now() - t0) / 1000).toFixed(1);
        if (sub.failures.length === 0) {
          this.log(`ok ${i + 1} - ${st.name} (${sub.passed} assertions, ${secs} s)`);
        } else {
          failedTests++;
          this.log(`not ok ${i + 1} - ${st.name} (${secs} s)`);
          for (const f of sub.failures) this.log(`    ${f.split('\n').join('\n    ')}`);
          all.push(...sub.failures.map((f) => `${st.name}: ${f}`));
        }
      }
    }
    await this.finish();
    all.push(...this.failures);
    return { name: this.name, passed: passed + this.passed, failed: all.length, tests: this.subtests.length, failures: all };
  }
}

let current: Harness | null = null;

/** Runs `register` (a suite's module-level calls) against a new Harness, and returns it to run. */
export function collect(name: string, register: () => void, log?: (line: string) => void): Harness {
  const h = new Harness(name, log);
  const before = current;
  current = h;
  try {
    register();
  } finally {
    current = before;
  }
  return h;
}

function root(): Harness {
  if (!current) throw new Error('tap-lite: a suite registered outside collect()');
  return current;
}

/** tap's default export, as far as the suites use it at module level. */
const t = {
  before: (fn: Fn) => root().before(fn),
  test: (name: string, fn: (t: Test) => unknown) => root().test(name, fn),
  teardown: (fn: Fn) => root().teardown(fn),
  comment: (...args: unknown[]) => root().comment(...args),
};
export default t;
