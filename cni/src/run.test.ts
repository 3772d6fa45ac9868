import t from 'tap';
import type { AgentReply, CallAgent } from './agent-reply.js';
import type { DeletionRecord } from './del-queue.js';
import { runShim, type ShimDeps } from './run.js';
import type { CniCallRequest, CniCommand, CniEnv } from './skel.js';

interface Sent { socket: string; command: CniCommand; request: CniCallRequest; timeoutMs: number }

/**
 * A fake agent that checks what the shim sends the way the real server's
 * decoding would: a complete request, an absolute socket, a positive deadline.
 */
function fakeAgent(reply: AgentReply | ((cmd: CniCommand) => AgentReply)): { call: CallAgent; sent: Sent[] } {
  const sent: Sent[] = [];
  const call: CallAgent = async (socket, command, request, timeoutMs) => {
    if (!socket.startsWith('/')) throw new Error(`fake agent: relative socket ${socket}`);
    if (!(timeoutMs > 0)) throw new Error(`fake agent: bad deadline ${timeoutMs}`);
    if (!(request.config instanceof Uint8Array) || request.config.length === 0) throw new Error('fake agent: empty config');
    if ((command === 'ADD' || command === 'CHECK' || command === 'DEL') && (!request.containerId || !request.ifName)) {
      throw new Error('fake agent: container call without container');
    }
    sent.push({ socket, command, request, timeoutMs });
    return typeof reply === 'function' ? reply(command) : reply;
  };
  return { call, sent };
}

interface Harness { deps: ShimDeps; out: () => string; err: () => string; queued: { dir: string; record: DeletionRecord }[]; stdinReads: () => number }

function harness(env: CniEnv, stdin: string, call: CallAgent, opts: { queueFails?: boolean; stdinFails?: boolean } = {}): Harness {
  const out: (string | Uint8Array)[] = [];
  const errs: string[] = [];
  const queued: { dir: string; record: DeletionRecord }[] = [];
  let reads = 0;
  const deps: ShimDeps = {
    env,
    readStdin: async () => {
      reads++;
      if (opts.stdinFails) throw new Error('EIO');
      return new TextEncoder().encode(stdin);
    },
    callAgent: call,
    queueDeletion: (dir, record) => {
      if (opts.queueFails) throw new Error('EROFS: read-only file system');
      queued.push({ dir, record });
      return `${dir}/${record.containerId}-${record.ifName}.json`;
    },
    now: () => new Date('2025-01-02T03:04:05.000Z'),
    stdout: (d) => out.push(d),
    stderr: (s) => errs.push(s),
  };
  return {
    deps,
    out: () => out.map((d) => (typeof d === 'string' ? d : new TextDecoder().decode(d))).join(''),
    err: () => errs.join(''),
    queued,
    stdinReads: () => reads,
  };
}

const conf = (extra: Record<string, unknown> = {}): string => JSON.stringify({ cniVersion: '1.0.0', name: 'nodenet', type: 'nodenet-cni', ...extra });
const env = (cmd: string, extra: Record<string, string> = {}): CniEnv =>
  cmd === 'STATUS' || cmd === 'GC'
    ? { CNI_COMMAND: cmd, CNI_PATH: '/opt/cni/bin', ...extra }
    : { CNI_COMMAND: cmd, CNI_CONTAINERID: 'ctr1', CNI_NETNS: '/var/run/netns/nn-a', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin', ...extra };
const never: CallAgent = async () => {
  throw new Error('the agent must not be called');
};
const RESULT = '{"cniVersion":"1.0.0","ips":[{"address":"10.244.1.5/24"}]}';

t.test('VERSION: answered locally, stdin not read', async (t) => {
  const h = harness({ CNI_COMMAND: 'VERSION' }, '', never);
  t.equal(await runShim(h.deps), 0);
  t.equal(JSON.parse(h.out()).cniVersion, '1.1.0');
  t.equal(h.stdinReads(), 0);
});

t.test('skel errors never reach the agent; no CNI_COMMAND also prints an about line on stderr', async (t) => {
  const h = harness({}, conf(), never);
  t.equal(await runShim(h.deps), 1);
  t.equal(JSON.parse(h.out()).code, 4);
  t.match(h.err(), /supported: 0\.3\.0, 0\.3\.1, 0\.4\.0, 1\.0\.0, 1\.1\.0/);
  const bad = harness(env('ADD'), '{nope', never);
  t.equal(await runShim(bad.deps), 1);
  t.equal(JSON.parse(bad.out()).code, 6);
});

t.test('stdin that cannot be read is code 5', async (t) => {
  const h = harness(env('ADD'), conf(), never, { stdinFails: true });
  t.equal(await runShim(h.deps), 1);
  t.same(JSON.parse(h.out()), { cniVersion: '1.1.0', code: 5, msg: 'error reading from stdin: EIO' });
});

t.test('ADD: the result bytes are printed as is; defaults for socket and deadline', async (t) => {
  const agent = fakeAgent({ kind: 'ok', result: new TextEncoder().encode(RESULT) });
  const h = harness(env('ADD', { CNI_ARGS: 'A=1' }), conf(), agent.call);
  t.equal(await runShim(h.deps), 0);
  t.equal(h.out(), RESULT);
  t.equal(h.err(), '');
  t.equal(agent.sent.length, 1);
  const s = agent.sent[0]!;
  t.same([s.socket, s.command, s.timeoutMs], ['/run/nodenet/cni.sock', 'ADD', 30000]);
  t.same({ ...s.request, config: new TextDecoder().decode(s.request.config) }, {
    containerId: 'ctr1', netns: '/var/run/netns/nn-a', ifName: 'eth0', args: 'A=1', path: '/opt/cni/bin', config: conf(),
  });
});

t.test('agentSocket and agentTimeoutMs from the config are used, and validated (code 7)', async (t) => {
  const agent = fakeAgent({ kind: 'ok', result: new Uint8Array() });
  const h = harness(env('CHECK'), conf({ agentSocket: '/run/nn-t/a.sock', agentTimeoutMs: 1234 }), agent.call);
  t.equal(await runShim(h.deps), 0);
  t.same([agent.sent[0]!.socket, agent.sent[0]!.timeoutMs], ['/run/nn-t/a.sock', 1234]);
  for (const [extra, msg] of [
    [{ agentSocket: 'rel.sock' }, /^agentSocket/],
    [{ agentSocket: 5 }, /^agentSocket/],
    [{ agentTimeoutMs: -1 }, /^agentTimeoutMs/],
    [{ agentTimeoutMs: '5s' }, /^agentTimeoutMs/],
  ] as const) {
    const b = harness(env('ADD'), conf(extra), never);
    t.equal(await runShim(b.deps), 1);
    const e = JSON.parse(b.out());
    t.equal(e.code, 7);
    t.match(e.msg, msg);
    t.equal(e.cniVersion, '1.0.0');
  }
});

t.test('default deadlines per command', async (t) => {
  for (const [cmd, ms] of [['DEL', 30000], ['CHECK', 30000], ['STATUS', 10000], ['GC', 60000]] as const) {
    const agent = fakeAgent({ kind: 'ok', result: new Uint8Array() });
    const h = harness(env(cmd), conf({ cniVersion: '1.1.0' }), agent.call);
    t.equal(await runShim(h.deps), 0, cmd);
    t.equal(h.out(), '', `${cmd} prints nothing on success`);
    t.equal(agent.sent[0]!.timeoutMs, ms, cmd);
  }
});

t.test('an empty ADD result is an internal error', async (t) => {
  const h = harness(env('ADD'), conf(), fakeAgent({ kind: 'ok', result: new Uint8Array() }).call);
  t.equal(await runShim(h.deps), 1);
  t.equal(JSON.parse(h.out()).code, 999);
});

t.test('an in-band CNI error is printed as is, in the config version; code 0 becomes 999', async (t) => {
  const h = harness(env('ADD'), conf({ cniVersion: '0.4.0' }), fakeAgent({ kind: 'cni-error', code: 7, msg: 'mtu: must be an integer', details: 'mtu' }).call);
  t.equal(await runShim(h.deps), 1);
  t.same(JSON.parse(h.out()), { cniVersion: '0.4.0', code: 7, msg: 'mtu: must be an integer', details: 'mtu' });
  const z = harness(env('DEL'), conf(), fakeAgent({ kind: 'cni-error', code: 0, msg: 'x', details: '' }).call);
  t.equal(await runShim(z.deps), 1);
  t.equal(JSON.parse(z.out()).code, 999);
});

t.test('a transport failure other than unreachable/timeout is 999 with the detail', async (t) => {
  const h = harness(env('ADD'), conf(), fakeAgent({ kind: 'failed', detail: 'grpc UNIMPLEMENTED: unknown method' }).call);
  t.equal(await runShim(h.deps), 1);
  t.same(JSON.parse(h.out()), { cniVersion: '1.0.0', code: 999, msg: 'call to the nodenet agent failed', details: 'grpc UNIMPLEMENTED: unknown method' });
});

t.test('agent unreachable: ADD, CHECK, GC are 11; STATUS is 50; nothing is queued', async (t) => {
  for (const [cmd, code] of [['ADD', 11], ['CHECK', 11], ['GC', 11], ['STATUS', 50]] as const) {
    const h = harness(env(cmd), conf({ cniVersion: '1.1.0' }), fakeAgent({ kind: 'unreachable', detail: 'grpc UNAVAILABLE: connect ENOENT' }).call);
    t.equal(await runShim(h.deps), 1, cmd);
    const e = JSON.parse(h.out());
    t.same([e.code, e.cniVersion, e.details], [code, '1.1.0', 'grpc UNAVAILABLE: connect ENOENT'], cmd);
    t.match(e.msg, /is not reachable at \/run\/nodenet\/cni\.sock/, cmd);
    t.equal(h.queued.length, 0, cmd);
  }
});

t.test('agent unreachable or too slow: DEL is queued next to the socket and succeeds', async (t) => {
  for (const reply of [{ kind: 'unreachable', detail: 'grpc UNAVAILABLE: ECONNREFUSED' }, { kind: 'timeout', detail: 'grpc DEADLINE_EXCEEDED' }] as const) {
    const cfg = conf({ agentSocket: '/run/nn-q/agent/cni.sock', prevResult: { cniVersion: '1.0.0' } });
    const h = harness(env('DEL', { CNI_ARGS: 'K8S_POD_NAME=p' }), cfg, fakeAgent(reply).call);
    t.equal(await runShim(h.deps), 0, reply.kind);
    t.equal(h.out(), '', 'nothing on stdout');
    t.match(h.err(), /DEL queued in \/run\/nn-q\/agent\/del-queue\/ctr1-eth0\.json/);
    t.same(h.queued, [{
      dir: '/run/nn-q/agent/del-queue',
      record: {
        version: 1, command: 'DEL', containerId: 'ctr1', netns: '/var/run/netns/nn-a', ifName: 'eth0', args: 'K8S_POD_NAME=p',
        path: '/opt/cni/bin', config: cfg, queuedAt: '2025-01-02T03:04:05.000Z',
      },
    }]);
  }
});

t.test('DEL that cannot be queued either is 11', async (t) => {
  const h = harness(env('DEL'), conf(), fakeAgent({ kind: 'unreachable', detail: 'ENOENT' }).call, { queueFails: true });
  t.equal(await runShim(h.deps), 1);
  const e = JSON.parse(h.out());
  t.equal(e.code, 11);
  t.match(e.details, /EROFS/);
});

t.test('timeout: ADD is 11 naming the deadline, STATUS is 50', async (t) => {
  const h = harness(env('ADD'), conf({ agentTimeoutMs: 250 }), fakeAgent({ kind: 'timeout', detail: 'grpc DEADLINE_EXCEEDED' }).call);
  t.equal(await runShim(h.deps), 1);
  const e = JSON.parse(h.out());
  t.equal(e.code, 11);
  t.match(e.msg, /did not answer within 250 ms/);
  const s = harness(env('STATUS'), conf({ cniVersion: '1.1.0' }), fakeAgent({ kind: 'timeout', detail: 'x' }).call);
  t.equal(await runShim(s.deps), 1);
  t.equal(JSON.parse(s.out()).code, 50);
});

t.test('a throwing transport still yields the error JSON (999), never a crash', async (t) => {
  const h = harness(env('ADD'), conf(), async () => {
    throw new Error('boom');
  });
  t.equal(await runShim(h.deps), 1);
  t.same(JSON.parse(h.out()), { cniVersion: '1.1.0', code: 999, msg: 'boom' });
});
