import t from 'tap';
import { SpawnRunner, failureMessage, wrapNetns } from './runner.js';

const runner = new SpawnRunner();

t.test('a command that is not installed says so, by name', async (t) => {
  await t.rejects(runner.run(['nodenet-no-such-command', '-V']), { code: 'NN_ERR_EXEC', message: /^nodenet-no-such-command: command not found/ });
  const r = await runner.run(['nodenet-no-such-command'], { allowFailure: true });
  t.equal(r.exitCode, 127);
  t.match(r.stderr, /command not found/);
});

t.test('a command killed by a signal says which', async (t) => {
  await t.rejects(runner.run(['sh', '-c', 'kill -9 $$']), { message: /^sh -c kill -9 \$\$ was killed by SIGKILL/ });
  const r = await runner.run(['sh', '-c', 'kill -TERM $$'], { allowFailure: true });
  t.equal(r.signal, 'SIGTERM');
  t.not(r.exitCode, 0);
});

t.test('a timeout says so', async (t) => {
  await t.rejects(runner.run(['sleep', '5'], { timeoutMs: 50 }), { message: /sleep 5 timed out after 50 ms/ });
});

t.test('exit codes and stderr; stdin input', async (t) => {
  await t.rejects(runner.run(['sh', '-c', 'echo nope >&2; exit 3']), { message: 'sh -c echo nope >&2; exit 3 exited 3: nope' });
  t.equal((await runner.run(['cat'], { input: 'hello' })).stdout, 'hello');
});

t.test('failureMessage: a missing command under nsenter names the command, not nsenter', async (t) => {
  const argv = wrapNetns(['iptables-restore', '--noflush'], '/run/netns/x');
  t.match(failureMessage(argv, { exitCode: 127, stderr: 'nsenter: failed to execute iptables-restore: No such file or directory\n' }), /^iptables-restore: command not found/);
});

t.test('env adds to the agent own environment; big outputs arrive whole; unread input is no error', async (t) => {
  const r = await runner.run(['sh', '-c', 'echo "$NODENET_RUNNER_T:$PATH"'], { env: { NODENET_RUNNER_T: 'x' } });
  t.equal(r.stdout, `x:${process.env['PATH']}\n`, 'the variable is added, PATH kept');
  const big = await runner.run(['sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" a; echo e >&2']);
  t.equal(big.stdout.length, 3_000_000);
  t.equal(big.stderr, 'e\n');
  const r2 = await runner.run(['true'], { input: 'x'.repeat(4_000_000) });
  t.equal(r2.exitCode, 0, 'a command that exits without reading stdin');
  t.equal((await runner.run(['wc', '-c'], { input: 'y'.repeat(1_000_000) })).stdout.trim(), '1000000');
});
