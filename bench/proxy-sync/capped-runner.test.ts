import t from 'tap';
import { FakeRunner } from '../../agent/src/exec/runner.fake.js';
import { CappedRunner } from './capped-runner.js';

t.test('every command gets the time left until the deadline as its timeout', async (t) => {
  let now = 1000;
  const inner = new FakeRunner().on(() => ({ stdout: 'ok', stderr: '', exitCode: 0 }));
  const r = new CappedRunner(inner, 61_000, () => now);
  await r.run(['nft', '-f', '-'], { input: 'x', netns: '/run/netns/nn-bps-1', timeoutMs: 120_000 });
  t.same(inner.calls[0]!.opts, { input: 'x', netns: '/run/netns/nn-bps-1', timeoutMs: 60_000 }, 'the executor default is replaced, other options kept');
  now = 60_999.5;
  t.equal(r.expired, false);
  await r.run(['iptables-nft-restore']);
  t.equal(inner.calls[1]!.opts.timeoutMs, 1);
  now = 61_000;
  t.equal(r.expired, true);
  await t.rejects(r.run(['nft', 'list', 'tables']), { code: 'NN_ERR_EXEC', message: /bench cap reached: not running nft list tables/ });
  t.equal(inner.calls.length, 2, 'nothing started past the deadline');
});
