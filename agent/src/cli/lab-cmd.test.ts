/**
 * `nodenet lab`'s flags (pure): up's defaults and checks, exec's target and
 * command, usage errors naming the flag.
 */
import t from 'tap';
import { parseFlags } from './flags.js';
import { labExecArgs, labName, labUpArgs } from './lab-cmd.js';

const UP = { name: { type: 'string' }, nodes: { type: 'string' }, 'proxy-mode': { type: 'string' }, overlay: { type: 'string' }, 'run-pods': { type: 'string' } } as const;

t.test('lab up: the full cluster by default', async (t) => {
  t.same(labUpArgs(parseFlags([], UP)), { name: 'default', nodes: 2, proxyMode: 'iptables', overlay: 'vxlan', runPods: true });
  t.same(labUpArgs(parseFlags(['--name', 'b2', '--nodes', '3', '--proxy-mode', 'nftables', '--overlay', 'none', '--run-pods', 'false'], UP)), { name: 'b2', nodes: 3, proxyMode: 'nftables', overlay: 'none', runPods: false });
});

t.test('lab up: bad flags are usage errors', async (t) => {
  const bad: [string[], RegExp][] = [
    [['--nodes', '0'], /--nodes "0"/],
    [['--nodes', 'two'], /--nodes "two"/],
    [['--nodes', '21'], /1\.\.20/],
    [['--proxy-mode', 'ipvs'], /--proxy-mode must be iptables or nftables/],
    [['--overlay', 'geneve'], /--overlay must be vxlan or none/],
    [['--run-pods', 'yes'], /--run-pods must be true or false/],
    [['--name', 'My-Lab'], /--name: lab name "My-Lab"/],
    [['extra'], /unexpected argument "extra"/],
  ];
  for (const [argv, msg] of bad) t.throws(() => labUpArgs(parseFlags(argv, UP)), { name: 'FlagError', message: msg }, argv.join(' '));
});

t.test('lab exec: one target, then the command after --', async (t) => {
  const spec = { name: { type: 'string' } } as const;
  t.same(labExecArgs(parseFlags(['--name', 'x', 'n1', '--', 'ip', '-br', 'addr'], spec)), { name: 'x', target: 'n1', cmd: ['ip', '-br', 'addr'] });
  t.same(labExecArgs(parseFlags(['default/web', '--', 'hostname'], spec)).name, 'default');
  t.throws(() => labExecArgs(parseFlags(['n1'], spec)), /a command after --/);
  t.throws(() => labExecArgs(parseFlags(['--', 'ls'], spec)), /needs a target/);
  t.throws(() => labExecArgs(parseFlags(['n1', 'ls', '--', 'x'], spec)), /one target, got "n1" "ls" \(is the -- missing\?\)/);
  t.equal(labName(parseFlags([], spec)), 'default');
});
