/**
 * `nodenet demo`'s flags (no root, no lab: lab/demo.test.ts has the demo's
 * own checks, test/demo.priv.test.ts runs the whole story). createLab is the
 * first thing the demo makes; here it throws a marker, so a test sees
 * whether the flags got the demo that far, and nothing is ever built.
 */
import t from 'tap';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { FakeRunner } from '../exec/runner.fake.js';
import type { Runner } from '../exec/runner.js';
import type { DemoDeps } from '../lab/demo.js';
import { DEMO_USAGE, demoCommand } from './demo-cmd.js';

const MARK = 'createLab reached';

function deps(runner: Runner, labs: string[], out: string[], ipvsExists?: (p: string) => boolean): DemoDeps {
  return {
    runner,
    createLab: async (prefix) => {
      labs.push(prefix);
      throw new Error(MARK);
    },
    readNetwork: async () => {
      throw new Error('not reached');
    },
    stdout: (s) => void out.push(s),
    ...(ipvsExists ? { ipvsExists } : {}),
  };
}

t.test('good flags call the demo: it goes on to make its lab', async (t) => {
  for (const argv of [[], ['--proxy-mode', 'iptables'], ['--proxy-mode', 'nftables'], ['--keep'], ['--proxy-mode=nftables', '--keep']]) {
    const labs: string[] = [];
    await t.rejects(demoCommand(argv, deps(new FakeRunner(), labs, [])), new RegExp(MARK), argv.join(' ') || '(no flags)');
    t.same(labs, ['demo']);
  }
});

t.test('--proxy-mode ipvs reaches the demo, which refuses it without IPVS', async (t) => {
  const runner = new FakeRunner().on((argv) => (argv.join(' ') === 'modprobe ip_vs' ? { stdout: '', stderr: 'modprobe: FATAL\n', exitCode: 1 } : undefined));
  const labs: string[] = [];
  await t.rejects(demoCommand(['--proxy-mode', 'ipvs'], deps(runner, labs, [], () => false)), { name: 'NodenetError', code: ErrorCode.NotAvailable });
  t.same(labs, []);
});

t.test('bad flags are usage errors; --help shows ipvs', async (t) => {
  const labs: string[] = [];
  for (const [argv, msg] of [
    [['--proxy-mode', 'userspace'], /^--proxy-mode must be iptables, nftables or ipvs, got "userspace"$/],
    [['extra'], /unexpected argument "extra"/],
    [['--', 'extra'], /unexpected argument "extra"/],
    [['--proxy-mode'], /--proxy-mode/],
  ] as const) {
    await t.rejects(demoCommand(argv, deps(new FakeRunner(), labs, [])), { name: 'FlagError', message: msg }, argv.join(' '));
  }
  t.same(labs, []);
  const out: string[] = [];
  t.equal(await demoCommand(['--help'], deps(new FakeRunner(), labs, out)), 0);
  t.equal(out.join(''), `${DEMO_USAGE}\n`);
  t.same(labs, [], '--help makes nothing');
  t.match(DEMO_USAGE, /--proxy-mode iptables\|nftables\|ipvs/);
  t.match(DEMO_USAGE, /ipvs needs a kernel with\nIPVS/);
});

t.test('demo ha: its own story and lab; flags of the other demo refused', async (t) => {
  const labs: string[] = [];
  const have = (missing: string[]) => new FakeRunner().on((argv) => (argv[0] === 'sh' && /^command -v /.test(argv[2] ?? '') ? { stdout: '', stderr: '', exitCode: missing.some((m) => argv[2] === `command -v ${m}`) ? 1 : 0 } : undefined));
  await t.rejects(demoCommand(['ha'], deps(have([]), labs, [])), new RegExp(MARK));
  t.same(labs, ['demoha'], 'the HA demo makes its lab');
  const none: string[] = [];
  await t.rejects(demoCommand(['ha'], deps(have(['haproxy', 'etcdctl']), none, [])), { name: 'NodenetError', message: /etcd-client, haproxy are not installed: apt-get install -y etcd-client haproxy/ });
  t.same(none, [], 'without etcd or HAProxy nothing is made');
  await t.rejects(demoCommand(['ha', '--keep'], deps(new FakeRunner(), [], [])), { name: 'FlagError', message: /demo ha takes no flags \(--keep\)/ });
  await t.rejects(demoCommand(['ha', 'more'], deps(new FakeRunner(), [], [])), { name: 'FlagError', message: /unexpected argument "ha"/ });
});
