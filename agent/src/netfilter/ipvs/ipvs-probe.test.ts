/**
 * The IPVS probe behind `lab up` and `demo` in ipvs mode: /proc/net/ip_vs,
 * else `modprobe ip_vs` and a second look. On a fake runner and a fake
 * filesystem (no root), then once for real on this host, whose kernel has no
 * IPVS: there it must refuse.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { ErrorCode } from '../../../../lib/errors/errors.js';
import { FakeRunner } from '../../exec/runner.fake.js';
import { SpawnRunner } from '../../exec/runner.js';
import { IPVS_PROC_FILE, probeIpvs, requireIpvs } from './ipvs-probe.js';
import { NO_IPVS_MESSAGE } from './ipvs-types.js';

const NOT_FOUND = 'modprobe: FATAL: Module ip_vs not found in directory /lib/modules/6.18.0\n';

/** A runner that answers `modprobe ip_vs` only, with this exit code and stderr (and runs `onModprobe`). */
function modprobe(exitCode: number, stderr = '', onModprobe = () => undefined as void): FakeRunner {
  return new FakeRunner().on((argv) => {
    if (argv.join(' ') !== 'modprobe ip_vs') return undefined;
    onModprobe();
    return { stdout: '', stderr, exitCode };
  });
}

t.test('/proc/net/ip_vs there: IPVS, and modprobe is not run', async (t) => {
  const runner = modprobe(0);
  const looked: string[] = [];
  t.same(await probeIpvs({ runner, exists: (p) => (looked.push(p), true) }), { available: true, loaded: false });
  t.same(looked, [IPVS_PROC_FILE]);
  t.same(runner.calls, []);
  await requireIpvs('lab up --proxy-mode ipvs', { runner, exists: () => true });
});

t.test('absent, but modprobe ip_vs loads it: IPVS (loaded)', async (t) => {
  let loaded = false;
  const runner = modprobe(0, '', () => void (loaded = true));
  t.same(await probeIpvs({ runner, exists: () => loaded }), { available: true, loaded: true });
  t.same(runner.calls.map((c) => c.argv), [['modprobe', 'ip_vs']]);
  t.equal(runner.calls[0]!.opts.allowFailure, true, 'a failing modprobe is an answer, not an error');
});

t.test('absent and modprobe fails: no IPVS, saying what was looked at; requireIpvs refuses with NO_IPVS_MESSAGE', async (t) => {
  const runner = modprobe(1, NOT_FOUND);
  t.same(await probeIpvs({ runner, exists: () => false }), { available: false, detail: `no ${IPVS_PROC_FILE}, and modprobe ip_vs exited 1: ${NOT_FOUND.trim()}` });
  await t.rejects(requireIpvs('lab up --proxy-mode ipvs', { runner, exists: () => false }), {
    name: 'NodenetError',
    code: ErrorCode.NotAvailable,
    message: `lab up --proxy-mode ipvs: ${NO_IPVS_MESSAGE}; no ${IPVS_PROC_FILE}, and modprobe ip_vs exited 1: ${NOT_FOUND.trim()}`,
  });
});

t.test('absent, modprobe exits 0 yet nothing appears (no modules, busybox modprobe): no IPVS', async (t) => {
  t.same(await probeIpvs({ runner: modprobe(0), exists: () => false }), { available: false, detail: `no ${IPVS_PROC_FILE}, and modprobe ip_vs exited 0` });
});

t.test('absent and no modprobe at all: no IPVS, the runner\'s error in the detail', async (t) => {
  const runner = new FakeRunner(); // no handler: run() throws, as the real one does for a command that cannot start
  const r = await probeIpvs({ runner, exists: () => false });
  t.equal(r.available, false);
  t.match(r, { detail: /^no \/proc\/net\/ip_vs, and modprobe ip_vs could not run: FakeRunner: no handler for modprobe ip_vs$/ });
});

const HAS_IPVS = existsSync(IPVS_PROC_FILE) && `this kernel has IPVS (${IPVS_PROC_FILE} exists): the refusal cannot be checked here`;

t.test('this host, for real: the refusal on a kernel without /proc/net/ip_vs', { skip: HAS_IPVS }, async (t) => {
  const runner = new SpawnRunner();
  const r = await probeIpvs({ runner });
  if (r.available) {
    // modprobe ip_vs loaded the module (a kernel with IPVS as a module, run as root): the file is there now.
    t.ok(existsSync(IPVS_PROC_FILE), `modprobe ip_vs made ${IPVS_PROC_FILE} appear`);
    return;
  }
  t.match(r.detail, /^no \/proc\/net\/ip_vs, and modprobe ip_vs (exited \d+|could not run)/);
  await t.rejects(requireIpvs('demo --proxy-mode ipvs', { runner }), { code: ErrorCode.NotAvailable, message: /^demo --proxy-mode ipvs: this kernel has no IPVS \(modprobe ip_vs failed\): use iptables or nftables, or run in a VM \(test-vm\/\); no \/proc\/net\/ip_vs/ });
});
