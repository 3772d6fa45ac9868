/**
 * `nodenet demo`'s flags and its up-front IPVS refusal (no root, no lab:
 * test/demo.priv.test.ts runs the whole story). createLab is the first
 * thing the demo makes; here it throws a marker, so a test sees whether the
 * demo got that far, and nothing is ever built.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { FakeRunner } from '../exec/runner.fake.js';
import { SpawnRunner, type Runner } from '../exec/runner.js';
import { IPVS_PROC_FILE } from '../netfilter/ipvs/ipvs-probe.js';
import { NO_IPVS_MESSAGE } from '../netfilter/ipvs/ipvs-types.js';
import { DEMO_USAGE, demoCommand, type DemoDeps } from './demo-cmd.js';

const MARK = 'createLab reached';
const NOT_FOUND = 'modprobe: FATAL: Module ip_vs not found in directory /lib/modules/6.18.0\n';

function deps(runner: Runner, labs: string[], out: string[], ipvsExists?: (p: string) => boolean): DemoDeps {
  return {
    runner,
    createLab: async (prefix) => {
      labs.push(prefix);
      throw new Error(MARK);
    },
    localAddresses: async () => [],
    readNetwork: async () => {
      throw new Error('not reached');
    },
    stdout: (s) => void out.push(s),
    ...(ipvsExists ? { ipvsExists } : {}),
  };
}

const modprobe = (exitCode: number, stderr: string) =>
  new FakeRunner().on((argv) => (argv.join(' ') === 'modprobe ip_vs' ? { stdout: '', stderr, exitCode } : undefined));

t.test('--proxy-mode ipvs without IPVS: refused before the lab is made', async (t) => {
  const runner = modprobe(1, NOT_FOUND);
  const labs: string[] = [];
  const out: string[] = [];
  await t.rejects(demoCommand(['--proxy-mode', 'ipvs'], deps(runner, labs, out, () => false)), {
    name: 'NodenetError',
    code: ErrorCode.NotAvailable,
    message: `demo --proxy-mode ipvs: ${NO_IPVS_MESSAGE}; no /proc/net/ip_vs, and modprobe ip_vs exited 1: ${NOT_FOUND.trim()}`,
  });
  t.same(labs, [], 'no lab');
  t.same(out, [], 'nothing printed: the story did not start');
  t.same(runner.calls.map((c) => c.argv.join(' ')), ['modprobe ip_vs']);
});

t.test('--proxy-mode ipvs with IPVS: the demo goes on to make its lab', async (t) => {
  const runner = modprobe(1, NOT_FOUND);
  const labs: string[] = [];
  await t.rejects(demoCommand(['--proxy-mode', 'ipvs', '--keep'], deps(runner, labs, [], () => true)), new RegExp(MARK));
  t.same(labs, ['demo']);
  t.same(runner.calls, [], '/proc/net/ip_vs was there: no modprobe');
});

t.test('iptables (the default) and nftables: no IPVS probe', async (t) => {
  for (const argv of [[], ['--proxy-mode', 'iptables'], ['--proxy-mode', 'nftables']]) {
    const runner = new FakeRunner();
    const labs: string[] = [];
    let looked = false;
    await t.rejects(demoCommand(argv, deps(runner, labs, [], () => (looked = true))), new RegExp(MARK), argv.join(' ') || '(no flags)');
    t.same(labs, ['demo']);
    t.equal(looked, false);
    t.same(runner.calls, []);
  }
});

t.test('bad flags are usage errors; --help shows ipvs', async (t) => {
  const labs: string[] = [];
  for (const [argv, msg] of [
    [['--proxy-mode', 'userspace'], /^--proxy-mode must be iptables, nftables or ipvs, got "userspace"$/],
    [['extra'], /unexpected argument "extra"/],
    [['--proxy-mode'], /--proxy-mode/],
  ] as const) {
    await t.rejects(demoCommand(argv, deps(new FakeRunner(), labs, [])), { name: 'FlagError', message: msg }, argv.join(' '));
  }
  t.same(labs, []);
  const out: string[] = [];
  t.equal(await demoCommand(['--help'], deps(new FakeRunner(), labs, out)), 0);
  t.equal(out.join(''), `${DEMO_USAGE}\n`);
  t.match(DEMO_USAGE, /--proxy-mode iptables\|nftables\|ipvs/);
  t.match(DEMO_USAGE, /ipvs needs a kernel with\nIPVS/);
});

const HAS_IPVS = existsSync(IPVS_PROC_FILE) && `this kernel has IPVS (${IPVS_PROC_FILE} exists): the refusal cannot be checked here`;

t.test('--proxy-mode ipvs on this host, for real: refused (this kernel has no IPVS)', { skip: HAS_IPVS }, async (t) => {
  const real = new SpawnRunner();
  const runner: Runner = {
    run: async (argv, opts) => {
      if (argv[0] !== 'modprobe') throw new Error(`the demo went on to ${argv.join(' ')}`);
      return real.run(argv, opts);
    },
  };
  const labs: string[] = [];
  await t.rejects(demoCommand(['--proxy-mode', 'ipvs'], deps(runner, labs, [])), { code: ErrorCode.NotAvailable, message: /^demo --proxy-mode ipvs: this kernel has no IPVS/ });
  t.same(labs, []);
});
