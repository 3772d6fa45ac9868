import t from 'tap';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicWriter, timestampPrefix } from './atomic-writer.js';
import type { Payload } from './volumes.js';

const T0 = Date.parse('2030-01-02T03:04:05Z');
const payload = (o: Record<string, [string, number?]>): Payload => new Map(Object.entries(o).map(([k, [v, m]]) => [k, { data: Buffer.from(v), mode: m ?? 0o644 }]));

function dir(t: Tap.Test): string {
  const d = mkdtempSync(join(tmpdir(), 'nn-aw-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}
declare namespace Tap { type Test = import('tap').Test; }

t.test('the layout: a timestamped directory, ..data pointing at it, each top-level name a symlink through ..data', async (t) => {
  const d = dir(t);
  let now = T0;
  const randoms = [0.5, 0.25, 0.125, 0.0625];
  const w = new AtomicWriter(d, { now: () => now, random: () => randoms.shift() ?? 0.75 });
  t.ok(w.write(payload({ 'app.conf': ['a=1'], 'nested/deep/file': ['n', 0o400] })));
  const ts = readlinkSync(join(d, '..data'));
  t.equal(ts, `${timestampPrefix(T0)}2147483648`, '..2030_01_02_03_04_05.<random>');
  t.equal(timestampPrefix(T0), '..2030_01_02_03_04_05.');
  t.equal(readlinkSync(join(d, 'app.conf')), '..data/app.conf');
  t.equal(readlinkSync(join(d, 'nested')), '..data/nested', 'only the top-level name is a link');
  t.equal(readFileSync(join(d, 'nested/deep/file'), 'utf8'), 'n');
  t.equal(statSync(join(d, ts, 'nested/deep/file')).mode & 0o777, 0o400, 'the mode, whatever the umask');
  t.equal(statSync(join(d, ts)).mode & 0o777, 0o755);
  t.same(readdirSync(d).sort(), ['..data', ts, 'app.conf', 'nested'].sort());

  t.notOk(w.write(payload({ 'app.conf': ['a=1'], 'nested/deep/file': ['n', 0o400] })), 'the same content: nothing written');
  t.equal(readlinkSync(join(d, '..data')), ts);

  now = T0 + 61_000;
  t.ok(w.write(payload({ 'app.conf': ['a=2'], added: ['new'] })), 'a change: a new version');
  const ts2 = readlinkSync(join(d, '..data'));
  t.not(ts2, ts);
  t.match(ts2, /^\.\.2030_01_02_03_05_06\./);
  t.equal(readFileSync(join(d, 'app.conf'), 'utf8'), 'a=2', 'read through the same symlink');
  t.equal(readFileSync(join(d, 'added'), 'utf8'), 'new');
  t.notOk(existsSync(join(d, ts)), 'the old version removed');
  t.throws(() => lstatSync(join(d, 'nested')), 'a name gone from the payload is unlinked');
  t.same(readdirSync(d).sort(), ['..data', ts2, 'added', 'app.conf'].sort());

  t.ok(w.write(payload({ 'app.conf': ['a=2'] })), 'only a removal is a write too');
  t.notOk(existsSync(join(d, 'added')));
  t.ok(w.write(payload({})), 'an empty payload');
  t.same(readdirSync(d).filter((n) => !n.startsWith('..')), []);
});

t.test('bad paths are refused before anything is written', async (t) => {
  const d = dir(t);
  const w = new AtomicWriter(d, { now: () => T0 });
  for (const bad of ['/abs', 'a/../b', '..x', '']) t.throws(() => w.write(payload({ [bad]: ['x'] })), /invalid path/, JSON.stringify(bad));
  t.same(readdirSync(d), []);
});
