import t from 'tap';
import { FakeRunner } from '../../agent/src/exec/runner.fake.js';
import { TimingRunner } from './timing-runner.js';

t.test('records each command with its duration and exit code; take() drains', async (t) => {
  let now = 0;
  const inner = new FakeRunner()
    .on((argv) => (argv[0] === 'nft' ? ((now += 25), { stdout: '', stderr: '', exitCode: 0 }) : undefined))
    .on((argv) => (argv[0] === 'iptables-nft' ? ((now += 7), { stdout: '', stderr: 'x', exitCode: 1 }) : undefined));
  const r = new TimingRunner(inner, () => now);
  await r.run(['nft', '-j', 'list', 'tables', 'ip'], { netns: '/run/netns/nn-bps-1' });
  await r.run(['iptables-nft', '-w', '-t', 'nat', '-S', 'KUBE-PROXY-CANARY', 'extra', 'args'], { allowFailure: true });
  await t.rejects(r.run(['iptables-nft', '-S']), { code: 'NN_ERR_EXEC' });
  t.same(r.take(), [
    { cmd: 'nft -j list tables ip', startMs: 0, ms: 25, exitCode: 0 },
    { cmd: 'iptables-nft -w -t nat -S KUBE-PROXY-CANARY', startMs: 25, ms: 7, exitCode: 1 },
    { cmd: 'iptables-nft -S', startMs: 32, ms: 7, exitCode: null },
  ]);
  t.same(r.take(), [], 'drained');
  t.same(inner.calls[0]!.opts, { netns: '/run/netns/nn-bps-1' }, 'options passed through');
});
