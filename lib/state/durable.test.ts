import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDurableTemp, writeFileDurable, writeFileDurableAsync } from './durable.js';

t.test('both writers replace the file, leave no temp file, create the directory 0700, honour the mode', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-durable-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const f = join(dir, 'sub', 'state.json');
  writeFileDurable(f, 'one');
  t.equal(readFileSync(f, 'utf8'), 'one');
  t.equal(statSync(join(dir, 'sub')).mode & 0o777, 0o700);
  t.equal(statSync(f).mode & 0o777, 0o600);
  await writeFileDurableAsync(f, 'two', { mode: 0o644 });
  t.equal(readFileSync(f, 'utf8'), 'two');
  t.equal(statSync(f).mode & 0o777, 0o644);
  await Promise.all(Array.from({ length: 20 }, (_x, i) => writeFileDurableAsync(f, `v${i}`)));
  t.match(readFileSync(f, 'utf8'), /^v\d+$/, 'concurrent writers: one of them, whole');
  t.same(readdirSync(join(dir, 'sub')), ['state.json'], 'no temp file left');
  t.ok(isDurableTemp('.state.json.123.4.tmp'));
  t.notOk(isDurableTemp('state.json'));
});

t.test('a failed write removes its temp file and leaves the old content', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-durable-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const f = join(dir, 'x');
  writeFileDurable(f, 'old');
  // A directory in the way of the rename makes it fail after the temp file was written.
  const blocked = join(dir, 'blocked');
  writeFileDurable(join(blocked, 'inner'), 'x');
  await t.rejects(writeFileDurableAsync(blocked, 'new'));
  t.throws(() => writeFileDurable(blocked, 'new'));
  t.same(readdirSync(dir).sort(), ['blocked', 'x']);
  t.equal(readFileSync(f, 'utf8'), 'old');
});
