import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { deletionQueueDir, type DeletionRecord } from '../../../proto/cni/v1/contract.js';
import { writeDeletionRecord } from '../testing/cni-client.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { FakeCniHandler } from './handler.fake.js';
import { DeletionReplayer, deletionQueueDirFor, parseRecord, replayDeletions } from './replay-deletions.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { setTimeout as sleep } from 'node:timers/promises';

function memLog(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { log: pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }), lines };
}
function tmp(t: { teardown(fn: () => void): void }): string {
  const d = mkdtempSync(join(tmpdir(), 'nn-replay-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}
const config = (id: string): string => JSON.stringify({ cniVersion: '1.0.0', name: 'nodenet', type: 'nodenet-cni', note: id });
const record = (containerId: string, ifName = 'eth0'): DeletionRecord => ({
  version: 1, command: 'DEL', containerId, netns: `/var/run/netns/${containerId}`, ifName, args: 'K8S_POD_NAME=x', path: '/opt/cni/bin',
  config: config(containerId), queuedAt: '2025-01-01T00:00:00.000Z',
});

t.test('the agent looks for the queue where the contract puts it (the shim writes there: cni/shim.test.ts)', async (t) => {
  t.equal(deletionQueueDirFor('/run/nodenet/cni.sock'), '/run/nodenet/del-queue');
  t.equal(deletionQueueDirFor('/x/y/a.sock'), deletionQueueDir('/x/y/a.sock'));
});

t.test('a missing queue directory is nothing to do', async (t) => {
  t.same(await replayDeletions(join(tmp(t), 'absent'), new FakeCniHandler(), memLog().log), { replayed: 0, failed: 0, invalid: 0 });
});

t.test('queued DELs are replayed in name order with the request intact, and removed', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  for (const id of ['ccc', 'aaa', 'bbb']) writeDeletionRecord(dir, record(id));
  const handler = new FakeCniHandler();
  const { log, lines } = memLog();
  t.same(await replayDeletions(dir, handler, log), { replayed: 3, failed: 0, invalid: 0 });
  t.same(handler.calls.map((c) => c.req.containerId), ['aaa', 'bbb', 'ccc']);
  const first = handler.calls[0]!.req;
  t.same({ ...first, config: Buffer.from(first.config).toString() }, {
    containerId: 'aaa', netns: '/var/run/netns/aaa', ifName: 'eth0', args: 'K8S_POD_NAME=x', path: '/opt/cni/bin', config: config('aaa'),
  });
  t.same(readdirSync(dir), []);
  t.equal(lines.filter((l) => l['msg'] === 'replayed queued DEL').length, 3);
  t.equal(lines[0]!['subsys'], 'cniserver/replay');
});

t.test('a failing DEL keeps its record for the next replay', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  writeDeletionRecord(dir, record('aaa'));
  writeDeletionRecord(dir, record('bbb'));
  const handler = new FakeCniHandler();
  handler.failNext('del', new NodenetError(ErrorCode.Netlink, 'netlink: EBUSY'));
  const { log, lines } = memLog();
  t.same(await replayDeletions(dir, handler, log), { replayed: 1, failed: 1, invalid: 0 });
  t.same(readdirSync(dir), ['aaa-eth0.json']);
  const warn = lines.find((l) => l['msg'] === 'queued DEL failed; kept for the next replay');
  t.equal(warn?.['containerID'], 'aaa');
  t.equal(warn?.['level'], 40);
  t.same(await replayDeletions(dir, handler, log), { replayed: 1, failed: 0, invalid: 0 });
  t.same(readdirSync(dir), []);
});

t.test('a DEL the agent rejects as invalid config also stays (it is logged, not lost)', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  writeDeletionRecord(dir, { ...record('aaa'), config: JSON.stringify({ cniVersion: '1.0.0', name: 'nodenet', type: 't', mtu: 'x' }) });
  t.same(await replayDeletions(dir, new FakeCniHandler(), memLog().log), { replayed: 0, failed: 1, invalid: 0 });
  t.ok(existsSync(join(dir, 'aaa-eth0.json')));
});

t.test('unparseable records are set aside as .invalid; temp files age out; other files are ignored', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  mkdirSync(dir);
  writeFileSync(join(dir, 'junk-eth0.json'), '{not json');
  writeFileSync(join(dir, 'old-eth0.json'), JSON.stringify({ ...record('old'), version: 2 }));
  writeFileSync(join(dir, 'nocfg-eth0.json'), JSON.stringify({ ...record('nocfg'), config: undefined }));
  writeFileSync(join(dir, '.fresh-eth0.json.123.tmp'), '{');
  writeFileSync(join(dir, 'README'), 'not a record');
  writeDeletionRecord(dir, record('good'));
  const handler = new FakeCniHandler();
  const { log, lines } = memLog();
  t.same(await replayDeletions(dir, handler, log), { replayed: 1, failed: 0, invalid: 3 });
  t.same(readdirSync(dir).sort(), ['.fresh-eth0.json.123.tmp', 'README', 'junk-eth0.json.invalid', 'nocfg-eth0.json.invalid', 'old-eth0.json.invalid']);
  t.equal(lines.filter((l) => l['level'] === 50).length, 3, 'each invalid record logged as an error');
  // Two hours later the orphaned temp file is removed.
  t.same(await replayDeletions(dir, handler, log, { now: () => Date.now() + 2 * 3600_000 }), { replayed: 0, failed: 0, invalid: 0 });
  t.notOk(existsSync(join(dir, '.fresh-eth0.json.123.tmp')));
});

t.test('parseRecord rejects what the shim never writes', async (t) => {
  const good = record('a');
  t.equal(parseRecord(JSON.stringify(good)).containerId, 'a');
  for (const bad of [[], { ...good, command: 'ADD' }, { ...good, containerId: '' }, { ...good, ifName: 5 }, { ...good, version: '1' }]) {
    t.throws(() => parseRecord(JSON.stringify(bad)), JSON.stringify(bad));
  }
});

t.test('DeletionReplayer: a record written after the start-up pass is replayed when the watch fires, with the agent up', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  writeDeletionRecord(dir, record('before'));
  const handler = new FakeCniHandler();
  const clock = new FakeClock();
  let fire: () => void = () => undefined;
  const r = new DeletionReplayer({ dir, handler, log: memLog().log, clock, watch: (_d, onChange) => { fire = onChange; return { close: () => { fire = () => undefined; } }; } });
  t.same(await r.start(), { replayed: 1, failed: 0, invalid: 0 }, 'the start-up pass');
  writeDeletionRecord(dir, record('after'));
  fire();
  await r.whenIdle();
  t.same(handler.calls.map((c) => c.req.containerId), ['before', 'after']);
  t.same(readdirSync(dir), []);
  await r.stop();
});

t.test('DeletionReplayer: the periodic rescan catches what no watch reported, and retries a failed DEL', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  const handler = new FakeCniHandler();
  const clock = new FakeClock();
  const r = new DeletionReplayer({ dir, handler, log: memLog().log, clock, rescanMs: 5000, watch: () => ({ close() {} }) });
  await r.start();
  writeDeletionRecord(dir, record('quiet'));
  handler.failNext('del', new NodenetError(ErrorCode.Netlink, 'netlink: EBUSY'));
  await clock.advance(5000);
  await r.whenIdle();
  t.same(readdirSync(dir), ['quiet-eth0.json'], 'the first try failed and kept the record');
  await clock.advance(5000);
  await r.whenIdle();
  t.same(readdirSync(dir), [], 'the next rescan replayed it');
  t.equal(r.totals().failed, 1);
  t.equal(r.totals().replayed, 1);
  await r.stop();
  writeDeletionRecord(dir, record('late'));
  await clock.advance(60_000);
  t.same(readdirSync(dir), ['late-eth0.json'], 'nothing runs after stop()');
});

t.test('DeletionReplayer: requests during a pass coalesce into one more pass', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  let release: () => void = () => undefined;
  let slowStarted: () => void = () => undefined;
  const started = new Promise<void>((res) => { slowStarted = res; });
  const calls: string[] = [];
  const handler = {
    del: async (req: { containerId: string }) => {
      calls.push(req.containerId);
      if (req.containerId === 'slow') {
        slowStarted();
        await new Promise<void>((res) => { release = res; });
      }
    },
  };
  const r = new DeletionReplayer({ dir, handler: handler as never, log: memLog().log, clock: new FakeClock(), watch: () => ({ close() {} }) });
  await r.start();
  writeDeletionRecord(dir, record('slow'));
  r.request();
  await started;
  writeDeletionRecord(dir, record('x1'));
  r.request();
  writeDeletionRecord(dir, record('x2'));
  r.request();
  release();
  await r.whenIdle();
  t.same(calls, ['slow', 'x1', 'x2'], 'one pass for the slow record, one more for both later ones');
  t.equal(r.totals().passes, 3, 'start-up, the slow pass, one coalesced pass');
  await r.stop();
});

t.test('DeletionReplayer with the real fs.watch', async (t) => {
  const dir = join(tmp(t), 'del-queue');
  const handler = new FakeCniHandler();
  const r = new DeletionReplayer({ dir, handler, log: memLog().log, clock: new FakeClock() });
  await r.start();
  writeDeletionRecord(dir, record('watched'));
  for (let i = 0; i < 200 && existsSync(join(dir, 'watched-eth0.json')); i++) await sleep(10);
  await r.whenIdle();
  t.notOk(existsSync(join(dir, 'watched-eth0.json')), 'replayed without any rescan (the fake clock never moved)');
  t.same(handler.calls.map((c) => c.req.containerId), ['watched']);
  await r.stop();
});
