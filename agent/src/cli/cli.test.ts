/**
 * The command line as people use it: every command answers -h/--help with
 * its usage (exit 0), a usage error exits 2 naming the argument, a failure
 * exits 1 with a message (no stack), --log-level is validated before
 * anything starts.
 */
import t from 'tap';
import { runCli, type CliDeps } from './cli.js';

function deps(over: Partial<CliDeps> = {}): CliDeps & { out: () => string; err: () => string; started: number } {
  let out = '';
  let err = '';
  const d = {
    runner: { run: async () => { throw new Error('nothing may run in this test'); } },
    startAgent: async () => { d.started++; return { stop: async () => undefined }; },
    startControlPlane: async () => { d.started++; return { url: 'https://127.0.0.1:6443', kubeconfig: '/d/admin.kubeconfig', stop: async () => undefined }; },
    removeProxyRules: async () => false,
    localAddresses: async () => [],
    readNetwork: async () => { throw new Error('no nodes here'); },
    labNodes: () => { throw new Error('no labs here'); },
    createLab: async () => { throw new Error('no labs here'); },
    cleanupLabs: async () => [],
    stdout: (s: string) => void (out += s),
    stderr: (s: string) => void (err += s),
    out: () => out,
    err: () => err,
    started: 0,
    ...over,
  };
  return d;
}

t.test('-h and --help on every command print its usage and exit 0', async (t) => {
  for (const argv of [['agent', '-h'], ['control-plane', '-h'], ['help', 'control-plane'], ['pod', '--help'], ['pod', 'ls', '-h'], ['trace', '--help'], ['proxy', 'status', '-h'], ['demo', '-h'], ['lab', '--help'], ['lab', 'cleanup', '-h'], ['lab', 'up', '-h'], ['serve', '-h'], ['version', '-h'], ['help', 'trace'], ['--help']]) {
    const d = deps();
    t.equal(await runCli(argv, d), 0, argv.join(' '));
    t.match(d.out(), /usage: nodenet/, `${argv.join(' ')}: usage printed`);
    t.equal(d.err(), '');
  }
});

t.test('usage errors exit 2 and name the argument', async (t) => {
  const cases: [string[], RegExp][] = [
    [['nope'], /unknown command "nope"/],
    [['agent', '--no-such-flag', 'x'], /unknown flag --no-such-flag/],
    [['pod', 'ls', '--json=false'], /flag --json takes no value/],
    [['pod', 'frobnicate'], /unknown pod subcommand "frobnicate"/],
    [['proxy', 'status', '-o', 'xml'], /-o "xml": expected table, json, yaml/],
    [['demo', '--proxy-mode', 'userspace'], /--proxy-mode must be iptables, nftables or ipvs/],
    [['lab', 'frob'], /unknown lab subcommand "frob"/],
    [['lab', 'up', '--nodes', '0'], /--nodes "0": a number of nodes/],
    [['lab', 'exec', 'n1'], /exec needs a command after --/],
    [['control-plane', '--listen', '6443'], /--listen "6443": expected ADDR:PORT/],
    [['control-plane', '--listen', 'example.com:6443'], /"example.com" is not an IP address/],
    [['control-plane', '--listen', '127.0.0.1:70000'], /port 70000 is out of range/],
    [['control-plane', '--history-seconds', '1'], /--history-seconds "1": a whole number of seconds, at least 10/],
    [['control-plane', '--log-level', 'loud'], /--log-level "loud": one of fatal/],
    [['control-plane', 'extra'], /unexpected argument "extra"/],
    [['help', 'nope'], /no command "nope"/],
  ];
  for (const [argv, msg] of cases) {
    const d = deps();
    t.equal(await runCli(argv, d), 2, argv.join(' '));
    t.match(d.err(), msg);
  }
});

t.test('a bad --log-level (or any invalid config) exits 1 with the field named, before the agent starts', async (t) => {
  const d = deps();
  t.equal(await runCli(['agent', '--log-level', 'verbose'], d), 1);
  t.match(d.err(), /^nodenet agent: config logLevel: must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"\n$/);
  t.equal(d.started, 0);
  const e = deps();
  t.equal(await runCli(['agent', '--proxy-mode', 'ipvs', '--ipvs-scheduler', 'fastest'], e), 1);
  t.match(e.err(), /config ipvsScheduler: must be one of the kernel's IPVS schedulers \(rr, wrr, lc/);
});

t.test('a command that fails for a reason exits 1 with its message', async (t) => {
  const d = deps();
  t.equal(await runCli(['proxy', 'status', '--run-dir', '/nonexistent-nodenet'], d), 1);
  t.match(d.err(), /^nodenet proxy: no \/nonexistent-nodenet\/proxy-status\.json: is the agent running/);
});

t.test('lab cleanup reports what it removed', async (t) => {
  const d = deps({ cleanupLabs: async () => ['namespace nn-x1-ul', 'lab directory /run/nodenet/lab/x1'] });
  t.equal(await runCli(['lab', 'cleanup'], d), 0);
  t.equal(d.out(), 'removed 2 leftover(s):\n  namespace nn-x1-ul\n  lab directory /run/nodenet/lab/x1\n');
});
