/**
 * End to end: the nodenet-cni executable, run the way a container runtime
 * runs it (CNI_* environment, config on stdin, exit code, stdout), against a
 * real startCniServer with a FakeCniHandler on a temp unix socket.
 *
 * The executable is built here as scripts/build.mjs builds it (cc over
 * cni/*.c), into the test's temp dir rather than dist/. It runs with no PATH
 * at all: it needs no node and no other program.
 */
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../lib/log/log.js';
import { FakeCniHandler } from '../agent/src/cniserver/handler.fake.js';
import { replayDeletions, deletionQueueDirFor } from '../agent/src/cniserver/replay-deletions.js';
import { startCniServer, type CniServer } from '../agent/src/cniserver/server.js';
import { buildTestShim, runShim, type ShimRun } from './shim-harness.js';

const work = mkdtempSync(join(tmpdir(), 'nn-cni-e2e-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const built = buildTestShim(work);
const bin = built.bin;

t.test('cc -Wall -Wextra builds the shim without a warning', async (t) => {
  t.equal(built.warnings, '');
});

/** Runs the executable itself, as a runtime does. */
function runCni(env: Record<string, string>, stdin: string): Promise<ShimRun> {
  return runShim(bin, env, stdin);
}

const podEnv = (cmd: string, id = 'e2e0001', extra: Record<string, string> = {}): Record<string, string> => ({
  CNI_COMMAND: cmd, CNI_CONTAINERID: id, CNI_NETNS: `/var/run/netns/nn-e2e-${id}`, CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0', ...extra,
});
const netEnv = (cmd: string): Record<string, string> => ({ CNI_COMMAND: cmd, CNI_PATH: '/opt/cni/bin' });

let n = 0;
async function agent(t: { teardown(fn: () => unknown): void }, handler = new FakeCniHandler()): Promise<{ socket: string; server: CniServer; handler: FakeCniHandler }> {
  const socket = join(work, `agent-${n++}`, 'cni.sock');
  const server = await startCniServer({ socketPath: socket, handler, log: silentLogger() });
  t.teardown(() => server.close());
  return { socket, server, handler };
}
const conf = (socket: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0', isGateway: true, agentSocket: socket, ipam: { type: 'host-local' }, ...extra });

t.test('VERSION needs no agent', async (t) => {
  const r = await runCni({ CNI_COMMAND: 'VERSION' }, '');
  t.equal(r.code, 0);
  t.same(JSON.parse(r.stdout), { cniVersion: '1.1.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
});

t.test('ADD prints exactly the handler result; CHECK and DEL succeed silently', async (t) => {
  const { socket, handler } = await agent(t);
  const add = await runCni(podEnv('ADD'), conf(socket));
  t.equal(add.code, 0, add.stderr);
  const result = JSON.parse(add.stdout);
  t.same(result, {
    cniVersion: '1.0.0',
    interfaces: [{ name: 'cbr0', mac: '0a:58:0a:f4:01:01' }, { name: 'eth0', mac: '0a:58:0a:f4:01:02', sandbox: '/var/run/netns/nn-e2e-e2e0001' }],
    ips: [{ interface: 1, address: '10.244.1.2/24', gateway: '10.244.1.1' }],
    routes: [{ dst: '0.0.0.0/0', gw: '10.244.1.1' }],
  });
  const req = handler.calls[0]!.req;
  t.same([req.containerId, req.netns, req.ifName, req.args, req.path], ['e2e0001', '/var/run/netns/nn-e2e-e2e0001', 'eth0', 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0', '/opt/cni/bin']);
  t.equal(Buffer.from(req.config).toString(), conf(socket), 'config bytes forwarded verbatim');

  const check = await runCni(podEnv('CHECK'), conf(socket, { prevResult: result }));
  t.same([check.code, check.stdout], [0, ''], check.stderr);
  const del = await runCni(podEnv('DEL'), conf(socket, { prevResult: result }));
  t.same([del.code, del.stdout], [0, '']);
  t.equal(handler.attachments.size, 0);
});

t.test('the result comes out in the requested version (0.3.1: ip "version")', async (t) => {
  const { socket } = await agent(t);
  const add = await runCni(podEnv('ADD', 'e2e0002'), conf(socket, { cniVersion: '0.3.1' }));
  t.equal(add.code, 0);
  const r = JSON.parse(add.stdout);
  t.equal(r.cniVersion, '0.3.1');
  t.same(r.ips, [{ version: '4', interface: 1, address: '10.244.1.2/24', gateway: '10.244.1.1' }]);
});

t.test('an in-band agent error comes out as the spec error JSON with exit 1', async (t) => {
  const { socket, handler } = await agent(t);
  const bad = await runCni(podEnv('ADD'), conf(socket, { cniVersion: '0.4.0', hairpinMode: 'yes' }));
  t.equal(bad.code, 1);
  t.same(JSON.parse(bad.stdout), { cniVersion: '0.4.0', code: 7, msg: 'hairpinMode: must be true or false (a boolean), got "yes"', details: 'hairpinMode' });
  const ok = await runCni(podEnv('ADD'), conf(socket));
  t.equal(ok.code, 0);
  const twice = await runCni(podEnv('ADD'), conf(socket));
  t.equal(twice.code, 1);
  t.same(JSON.parse(twice.stdout), { cniVersion: '1.0.0', code: 999, msg: 'attachment nodenet/e2e0001/eth0 already exists' });
  const check = await runCni(podEnv('CHECK', 'unknown1'), conf(socket, { prevResult: JSON.parse(ok.stdout) }));
  t.same([check.code, JSON.parse(check.stdout).code], [1, 3]);
  handler.ready = false;
  const status = await runCni(netEnv('STATUS'), conf(socket, { cniVersion: '1.1.0' }));
  t.same([status.code, JSON.parse(status.stdout)], [1, { cniVersion: '1.1.0', code: 50, msg: 'agent is not ready' }]);
});

t.test('what the skel rejects never reaches the agent', async (t) => {
  const { socket, handler } = await agent(t);
  const noNetns = await runCni({ ...podEnv('ADD'), CNI_NETNS: '' }, conf(socket));
  t.same([noNetns.code, JSON.parse(noNetns.stdout).code], [1, 4]);
  const oldCheck = await runCni(podEnv('CHECK'), conf(socket, { cniVersion: '0.3.1' }));
  t.same([oldCheck.code, JSON.parse(oldCheck.stdout).msg], [1, 'config version does not allow CHECK']);
  const garbage = await runCni(podEnv('ADD'), '{"cniVersion":');
  t.same([garbage.code, JSON.parse(garbage.stdout).code], [1, 6]);
  t.equal(handler.calls.length, 0);
});

t.test('STATUS and GC against a live agent', async (t) => {
  const { socket, handler } = await agent(t);
  await runCni(podEnv('ADD', 'keep1'), conf(socket, { cniVersion: '1.1.0' }));
  await runCni(podEnv('ADD', 'gone1'), conf(socket, { cniVersion: '1.1.0' }));
  const st = await runCni(netEnv('STATUS'), conf(socket, { cniVersion: '1.1.0' }));
  t.same([st.code, st.stdout], [0, '']);
  const gc = await runCni(netEnv('GC'), conf(socket, { cniVersion: '1.1.0', 'cni.dev/valid-attachments': [{ containerID: 'keep1', ifname: 'eth0' }] }));
  t.same([gc.code, gc.stdout], [0, ''], gc.stderr);
  t.same([...handler.attachments.keys()], ['nodenet/keep1/eth0']);
});

t.test('agent down: ADD and GC are 11, STATUS is 50, DEL is queued and replayed when the agent is back', async (t) => {
  const { socket, server } = await agent(t);
  await server.close();
  t.notOk(existsSync(socket));

  const add = await runCni(podEnv('ADD', 'down01'), conf(socket));
  t.equal(add.code, 1);
  const addErr = JSON.parse(add.stdout);
  t.same([addErr.cniVersion, addErr.code], ['1.0.0', 11]);
  t.match(addErr.msg, /not reachable/);
  t.match(addErr.details, /ENOENT/);
  const gc = await runCni(netEnv('GC'), conf(socket, { cniVersion: '1.1.0' }));
  t.same([gc.code, JSON.parse(gc.stdout).code], [1, 11]);
  const status = await runCni(netEnv('STATUS'), conf(socket, { cniVersion: '1.1.0' }));
  t.same([status.code, JSON.parse(status.stdout).code], [1, 50]);

  const delConf = conf(socket, { prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.244.1.9/24' }] } });
  const del = await runCni(podEnv('DEL', 'down01'), delConf);
  t.same([del.code, del.stdout], [0, ''], 'DEL succeeds with nothing on stdout');
  t.match(del.stderr, /DEL queued/);
  const qdir = deletionQueueDirFor(socket);
  t.same(readdirSync(qdir), ['down01-eth0.json']);
  const rec = JSON.parse(readFileSync(join(qdir, 'down01-eth0.json'), 'utf8'));
  t.same({ ...rec, queuedAt: typeof rec.queuedAt }, {
    version: 1, command: 'DEL', containerId: 'down01', netns: '/var/run/netns/nn-e2e-down01', ifName: 'eth0',
    args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0', path: '/opt/cni/bin', config: delConf, queuedAt: 'string',
  });

  // The agent comes back on the same socket and replays the queue.
  const handler = new FakeCniHandler();
  const back = await startCniServer({ socketPath: socket, handler, log: silentLogger() });
  t.teardown(() => back.close());
  t.same(await replayDeletions(qdir, handler, silentLogger()), { replayed: 1, failed: 0, invalid: 0 });
  t.same(handler.calls.map((c) => [c.cmd, c.req.containerId, Buffer.from(c.req.config).toString()]), [['del', 'down01', delConf]]);
  t.same(readdirSync(qdir), []);
  const add2 = await runCni(podEnv('ADD', 'down01'), conf(socket));
  t.equal(add2.code, 0, 'and ADD works again');
});

t.test('an agent that never started: DEL creates the queue directory', async (t) => {
  const socket = join(work, 'never', 'started', 'cni.sock');
  const del = await runCni({ ...podEnv('DEL', 'nev01'), CNI_NETNS: '' }, conf(socket));
  t.equal(del.code, 0, del.stdout);
  t.same(readdirSync(join(work, 'never', 'started', 'del-queue')), ['nev01-eth0.json']);
});

t.test('a hung agent: ADD fails with 11 after agentTimeoutMs', async (t) => {
  const handler = new FakeCniHandler();
  handler.add = () => new Promise(() => {});
  const { socket } = await agent(t, handler);
  const started = Date.now();
  const add = await runCni(podEnv('ADD'), conf(socket, { agentTimeoutMs: 300 }));
  const took = Date.now() - started;
  t.equal(add.code, 1);
  const e = JSON.parse(add.stdout);
  t.equal(e.code, 11);
  t.match(e.msg, /did not answer within 300 ms/);
  t.ok(took >= 300 && took < 5000, `took ${took} ms`);
});
