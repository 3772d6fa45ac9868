/**
 * The seeds' HA control plane in a lab, broken part by part with the lab's
 * own fault tools (lab/ha.ts, what `nodenet lab kill|stop|cont|partition|
 * heal|start` run): 3 etcd members and 2 API servers, each in a namespace
 * of its own, HAProxy in front, two agents that balance over the
 * `kubernetes` EndpointSlice themselves, and the real kubectl through
 * HAProxy. Each case says what must hold; nothing acknowledged may be lost.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lab, LabControlPlane, VNode } from '../agent/src/lab/lab.js';
import { newLab, NO_DNS } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { etcdLeader, haAct, leaseHolder, type HaLab } from '../agent/src/lab/ha.js';
import { etcdEndpoints, type HaTarget } from '../agent/src/lab/ha-plan.js';

let lab: Lab;
let cp: LabControlPlane;
let ha: HaLab;
const nodes: VNode[] = [];

t.before(async () => {
  lab = await newLab('ha');
  cp = await lab.startControlPlane({ nodes: ['n1', 'n2'], args: NO_DNS, ha: { etcdMembers: 3, apiServers: 2 } });
  ha = cp.haLab();
  for (const n of ['n1', 'n2']) {
    const node = await lab.addNode(n, { clusterCIDR: '10.244.0.0/16', config: { proxyMode: 'iptables', proxyMinSyncMs: 100 } });
    await node.startAgent();
    nodes.push(node);
  }
});
t.teardown(() => lab?.destroy());

async function kubectl(...args: string[]): Promise<string> {
  const r = await cp.kubectl(['--request-timeout=10s', ...args], true);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}
const act = (action: Parameters<typeof haAct>[1], target: HaTarget) => haAct(ha, action, target);
const sliceIPs = async () => (await kubectl('get', 'endpointslice', 'kubernetes', '-o', 'jsonpath={.endpoints[*].addresses[0]}')).split(' ').filter(Boolean);
const svcYaml = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name, labels: { t: 'ha' } }, spec: { ports: [{ port: 80, targetPort: 8080 }] } });

/** A `kubectl get --raw` watch from a resourceVersion, through HAProxy, streaming its events until it ends. */
function rawWatch(rv: string): { events: { type: string; name: string; rv: string; code?: number }[]; ended: Promise<number | null>; stop(): void } {
  const p = spawn('nsenter', [`--net=/var/run/netns/${lab.ul}`, '--', 'kubectl', '--kubeconfig', cp.kubeconfig, 'get', '--raw', `/api/v1/namespaces/default/services?watch=1&labelSelector=t%3Dha&resourceVersion=${rv}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: { type: string; name: string; rv: string; code?: number }[] = [];
  let buf = '';
  p.stdout.setEncoding('utf8');
  p.stdout.on('data', (c: string) => {
    buf += c;
    // kubectl --raw prints the stream's JSON objects one after another (possibly split over lines).
    for (;;) {
      const m = matchObject(buf);
      if (!m) break;
      buf = buf.slice(m.end);
      const e = JSON.parse(m.text) as { type: string; object: { metadata?: { name?: string; resourceVersion?: string }; code?: number } };
      events.push({ type: e.type, name: e.object.metadata?.name ?? '', rv: e.object.metadata?.resourceVersion ?? '', ...(e.object.code ? { code: e.object.code } : {}) });
    }
  });
  const ended = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
  return { events, ended, stop: () => p.kill('SIGKILL') };
}

/** The first complete top-level JSON object in s (braces balanced outside strings). */
function matchObject(s: string): { text: string; end: number } | null {
  const start = s.indexOf('{');
  if (start < 0) return null;
  let depth = 0;
  let inStr = false;
  for (let i = start; i < s.length; i++) {
    const c = s[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return { text: s.slice(start, i + 1), end: i + 1 };
  }
  return null;
}

t.test('the HA control plane: kubectl through HAProxy, every API server in the kubernetes EndpointSlice, the agents balancing over them', async (t) => {
  t.same(await sliceIPs(), ['192.168.77.241', '192.168.77.242'], 'both API servers, from their leases');
  await waitFor(async () => /n1\s+Ready/.test(await kubectl('get', 'nodes')) && /n2\s+Ready/.test(await kubectl('get', 'nodes')), 'both Nodes Ready', { timeoutMs: 30_000, intervalMs: 300 });
  await waitFor(() => readFileSync(nodes[0]!.logFile, 'utf8').includes('192.168.77.241:6443,192.168.77.242:6443'), 'n1\'s balancer following the slice', { timeoutMs: 15_000, intervalMs: 200 });
  t.pass('the agent balances over the API servers the slice lists');
  const leases = await kubectl('get', 'lease', '-n', 'kube-system');
  t.match(leases, /kube-controller-manager/);
  t.match(leases, /kube-scheduler/);
});

t.test('a ResourceQuota under creates racing through both API servers: exactly its hard count is stored (the charge is a compare-and-swap in etcd)', async (t) => {
  await kubectl('create', 'namespace', 'quota-ha');
  await kubectl('create', 'quota', 'three', '-n', 'quota-ha', '--hard=count/secrets=3');
  await waitFor(async () => /count\/secrets: 0\/3/.test(await kubectl('get', 'quota', '-n', 'quota-ha')), 'the quota counted', { timeoutMs: 15_000, intervalMs: 200 });
  // HAProxy balances round robin: the ten creates land on both API servers.
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => cp.kubectl(['--request-timeout=10s', 'create', 'secret', 'generic', `s${i}`, '-n', 'quota-ha', `--from-literal=k=${i}`], true)));
  t.equal(results.filter((r) => r.exitCode === 0).length, 3, 'three created');
  for (const r of results.filter((x) => x.exitCode !== 0)) t.match(r.stderr, /exceeded quota: three, requested: count\/secrets=1, used: count\/secrets=3, limited: count\/secrets=3/);
  t.equal((await kubectl('get', 'secrets', '-n', 'quota-ha', '-o', 'name')).trim().split('\n').length, 3, 'three stored');
  await kubectl('delete', 'namespace', 'quota-ha', '--wait=false');
});

t.test('an API server killed under watches: they resume on the other from their last resourceVersion (no 410, nothing missed or repeated); the agents carry on; the slice drops it within its TTL', async (t) => {
  const rv = JSON.parse(await kubectl('get', '--raw', '/api/v1/namespaces/default/services?labelSelector=t%3Dha')).metadata.resourceVersion as string;
  // Two watches through HAProxy; the server the first one is on (HAProxy's connection to it) is the one killed.
  // HAProxy's connections that last, per API server (min over five samples 300 ms apart, longer than its check
  // interval: health checks, short connections a loaded machine can stretch to hundreds of ms, drop out), before and
  // after the first watch opens. Other long connections through HAProxy (an agent's informer opened before it
  // followed the slice) are in both counts; the watch's server is the one that gains.
  const steady = async (): Promise<Map<number, number>> => {
    let min = await backends();
    for (let i = 0; i < 4; i++) {
      await sleep(300);
      const now = await backends();
      min = new Map([...min].map(([b, n]) => [b, Math.min(n, now.get(b) ?? 0)]));
    }
    return min;
  };
  const base = await steady();
  const w1 = rawWatch(rv);
  let victim = 0;
  await waitFor(async () => {
    const now = await steady();
    const gained = [...now].filter(([b, n]) => b > 0 && n > (base.get(b) ?? 0)).map(([b]) => b);
    victim = gained.length === 1 ? gained[0]! : 0;
    return victim > 0;
  }, 'the first watch\'s server', { timeoutMs: 20_000, intervalMs: 100 });
  const streams = [w1, rawWatch(rv)];
  const before = ['w1', 'w2', 'w3'];
  for (const n of before) await kubectlApply(n);
  await waitFor(() => streams.every((s) => s.events.length >= 3), 'both watches saw the first three', { timeoutMs: 15_000 });
  const killedAt = Date.now();
  t.match(await act('kill', { kind: 'api-server', index: victim }), new RegExp(`killed API server ${victim}`));
  const after = ['w4', 'w5', 'w6'];
  for (const n of after) await retry(() => kubectlApply(n));
  // Each stream that ended (its server died, or HAProxy cut it) is resumed from its last event's resourceVersion.
  const all: string[][] = [];
  let resumed = 0;
  for (const s of streams) {
    const seen = [...s.events];
    const state = await Promise.race([s.ended.then(() => 'ended'), sleep(3000).then(() => 'open')]);
    if (state === 'ended') {
      resumed++;
      const last = seen[seen.length - 1]!.rv;
      const again = rawWatch(last);
      await waitFor(() => again.events.length >= after.length || again.events.some((e) => e.type === 'ERROR'), 'the resumed watch', { timeoutMs: 20_000 });
      again.stop();
      seen.push(...again.events);
    } else {
      await waitFor(() => s.events.length >= 6, 'the surviving watch', { timeoutMs: 20_000 });
      seen.splice(0, seen.length, ...s.events);
    }
    s.stop();
    t.notOk(seen.some((e) => e.type === 'ERROR'), `no ERROR event (no 410): ${JSON.stringify(seen.filter((e) => e.type === 'ERROR'))}`);
    all.push(seen.map((e) => `${e.type} ${e.name}`));
  }
  t.ok(resumed >= 1, `${resumed} of 2 watches were on the killed server (the first one at least) and resumed on the other`);
  for (const s of all) t.same(s, [...before, ...after].map((n) => `ADDED ${n}`), 'every event exactly once, in order');
  // The agents' watches went on: a Service made after the kill is in n2's rules.
  const ip = (await kubectl('get', 'svc', 'w6', '-o', 'jsonpath={.spec.clusterIP}')).trim();
  // (No endpoints: its rule is the REJECT in the filter table.)
  await waitFor(async () => (await nodes[1]!.exec(['iptables-save'])).stdout.includes(`${ip}/32`), 'n2 programs a Service made after the kill', { timeoutMs: 20_000 });
  t.pass(`n2's proxy has ${ip}: its informers resumed through the other server`);
  await waitFor(async () => !(await sliceIPs()).includes(`192.168.77.24${victim}`), 'the slice drops the killed server', { timeoutMs: 30_000, intervalMs: 250 });
  t.pass(`the kubernetes EndpointSlice dropped 192.168.77.24${victim} ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill (TTL 15 s)`);
  t.match(await act('start', { kind: 'api-server', index: victim }), new RegExp(`started API server ${victim} \\(`));
  await waitFor(async () => (await sliceIPs()).length === 2, 'it is back in the slice', { timeoutMs: 15_000 });
  t.pass('started again, it is back in the slice');
});

/** How many established connections HAProxy holds to each API server now (its backend side, in the underlay namespace). */
async function backends(): Promise<Map<number, number>> {
  const r = await lab.runner.run(['ip', 'netns', 'exec', lab.ul, 'ss', '-Htn', 'state', 'established'], { allowFailure: true });
  const counts = new Map<number, number>();
  for (const m of r.stdout.matchAll(/192\.168\.77\.24(\d):6443/g)) counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
  return counts;
}

async function kubectlApply(name: string): Promise<void> {
  const r = await cp.kubectl(['--request-timeout=10s', 'apply', '-f', '-'], true, svcYaml(name));
  if (r.exitCode !== 0) throw new Error(`apply ${name}: ${r.stderr.trim()}`);
}

/** Retries a write whose failure says the control plane is between leaders or servers (at most 30 s). */
async function retry(fn: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(250);
    }
  }
}

/** Writes Services one after another until stopped; each acknowledged one is recorded. */
function writer(prefix: string) {
  const acked: string[] = [];
  const refused: string[] = [];
  let stop = false;
  const done = (async () => {
    for (let n = 0; !stop; n++) {
      const r = await cp.kubectl(['--request-timeout=5s', 'create', 'service', 'clusterip', `${prefix}${n}`, '--tcp=80:80'], true);
      (r.exitCode === 0 ? acked : refused).push(r.exitCode === 0 ? `${prefix}${n}` : r.stderr.trim());
    }
  })();
  return { acked, refused, stop: async () => { stop = true; await done; } };
}

async function svcNames(prefix: string): Promise<Set<string>> {
  return new Set((await kubectl('get', 'svc', '-o', 'name')).split('\n').map((l) => l.replace('service/', '')).filter((n) => n.startsWith(prefix)));
}

t.test('the etcd leader killed under writes: they pause for an election and go on; nothing acknowledged is lost', async (t) => {
  const leader = await etcdLeader(ha);
  t.ok(leader > 0, `etcd member ${leader} leads`);
  const w = writer('el');
  await sleep(1500);
  const ackedBefore = w.acked.length;
  t.match(await act('kill', { kind: 'leader', of: 'etcd' }), new RegExp(`killed etcd member ${leader} \\(.*; the etcd leader\\)`));
  // Writes go on after the election: two more acknowledged (however slowly a loaded machine writes).
  await waitFor(() => w.acked.length >= ackedBefore + 2, 'two writes acknowledged after the kill', { timeoutMs: 60_000, intervalMs: 100 }).catch(() => undefined);
  await w.stop();
  const names = await svcNames('el');
  t.ok(ackedBefore >= 1 && w.acked.length >= ackedBefore + 2, `${ackedBefore} writes acknowledged before the kill, ${w.acked.length - ackedBefore} after it, ${w.refused.length} refused meanwhile`);
  t.same(w.acked.filter((n) => !names.has(n)), [], 'every acknowledged write is there');
  const next = await etcdLeader(ha);
  t.ok(next > 0 && next !== leader, `member ${next} leads now`);
  await act('start', { kind: 'etcd', index: leader });
});

t.test('an etcd member partitioned (its link down): writes go on with the other two; healed, it catches up', async (t) => {
  await waitFor(async () => (await etcdLeader(ha)) > 0, 'a leader', { timeoutMs: 20_000 });
  const leader = await etcdLeader(ha);
  t.match(await act('partition', { kind: 'leader', of: 'etcd' }), /underlay port .* is down/);
  const w = writer('pt');
  await sleep(12_000);
  await w.stop();
  t.ok(w.acked.length > 0, `${w.acked.length} writes acknowledged while member ${leader} was cut off`);
  const names = await svcNames('pt');
  t.same(w.acked.filter((n) => !names.has(n)), [], 'every acknowledged write is there');
  t.match(await act('heal', { kind: 'etcd', index: leader }), /is up/);
  // Healed, the member catches up: every member reports the same revision.
  await waitFor(async () => {
    const r = await lab.runner.run(['nsenter', `--net=/var/run/netns/${lab.ul}`, '--', 'etcdctl', `--endpoints=${etcdEndpoints(3)}`, 'endpoint', 'status', '-w', 'json'], { allowFailure: true });
    const revs = [...r.stdout.matchAll(/"revision":(\d+)/g)].map((m) => m[1]);
    return revs.length === 3 && new Set(revs).size === 1;
  }, 'the three members at one revision', { timeoutMs: 20_000, intervalMs: 300 });
  t.pass('the healed member caught up');
});

t.test('quorum lost (2 of 3 members down): writes fail with a clear error, never a false success; restored, writes go on', async (t) => {
  const lead = await etcdLeader(ha);
  const others = [1, 2, 3].filter((i) => i !== lead);
  for (const i of others) await act('kill', { kind: 'etcd', index: i });
  const r = await cp.kubectl(['--request-timeout=15s', 'create', 'service', 'clusterip', 'noquorum', '--tcp=80:80'], true);
  t.not(r.exitCode, 0, 'the write is refused');
  t.match(r.stderr, /etcd|unavailable|timed out|timeout/i, `a clear error: ${r.stderr.trim()}`);
  for (const i of others) await act('start', { kind: 'etcd', index: i });
  await retry(async () => { await kubectl('create', 'service', 'clusterip', 'quorumback', '--tcp=80:80'); });
  t.match(await kubectl('get', 'svc', 'quorumback', '-o', 'name'), /service\/quorumback/, 'quorum back: writes go on');
});

t.test('the controller manager\'s leader killed: a standby leads within about the lease, and reconciles a Deployment scaled meanwhile', async (t) => {
  await kubectl('create', 'deployment', 'web', '--image=nodenet/host', '--replicas=1', '--', 'sleep', '1000');
  await waitFor(async () => /web-/.test(await kubectl('get', 'rs', '-l', 'app=web', '-o', 'name')), 'the ReplicaSet', { timeoutMs: 20_000 });
  const before = await leaseHolder(ha, 'kube-controller-manager');
  t.ok(before.server > 0, `API server ${before.server} leads the controllers`);
  const killedAt = Date.now();
  t.match(await act('kill', { kind: 'leader', of: 'controller-manager' }), /the controller-manager leader/);
  await retry(async () => { await kubectl('scale', 'deployment', 'web', '--replicas=3'); });
  await waitFor(async () => { const h = await leaseHolder(ha, 'kube-controller-manager'); return h.server > 0 && h.server !== before.server; }, 'another leader', { timeoutMs: 40_000, intervalMs: 250 });
  const tookS = (Date.now() - killedAt) / 1000;
  await waitFor(async () => (await kubectl('get', 'rs', '-l', 'app=web', '-o', 'jsonpath={.items[0].spec.replicas}')).trim() === '3', 'the new leader scales the ReplicaSet', { timeoutMs: 20_000, intervalMs: 250 });
  t.pass(`a standby took the lease ${tookS.toFixed(1)} s after the kill (lease 15 s, retry 2 s) and reconciled the scale`);
  await act('start', { kind: 'api-server', index: before.server });
});

t.test('the controller manager\'s leader paused past its lease, then resumed: it steps down and writes nothing', async (t) => {
  const before = await leaseHolder(ha, 'kube-controller-manager');
  t.ok(before.server > 0);
  const log = `${ha.runRoot}/api${before.server}.log`;
  const logBefore = readFileSync(log, 'utf8').length;
  await act('stop', { kind: 'api-server', index: before.server });
  await waitFor(async () => { const h = await leaseHolder(ha, 'kube-controller-manager'); return h.server > 0 && h.server !== before.server; }, 'a standby takes the lease', { timeoutMs: 40_000, intervalMs: 250 });
  const next = (await leaseHolder(ha, 'kube-controller-manager')).server;
  await retry(async () => { await kubectl('scale', 'deployment', 'web', '--replicas=2'); });
  await waitFor(async () => (await kubectl('get', 'rs', '-l', 'app=web', '-o', 'jsonpath={.items[0].spec.replicas}')).trim() === '2', 'the new leader reconciles', { timeoutMs: 20_000 });
  await act('cont', { kind: 'api-server', index: before.server });
  await waitFor(() => /stopped leading/.test(readFileSync(log, 'utf8').slice(logBefore)), 'the resumed one says it stopped leading', { timeoutMs: 15_000 });
  await sleep(3000);
  t.equal((await leaseHolder(ha, 'kube-controller-manager')).server, next, 'the lease stays with the new leader');
  t.equal((await kubectl('get', 'rs', '-l', 'app=web', '-o', 'jsonpath={.items[0].spec.replicas}')).trim(), '2', 'nothing stale was written: the ReplicaSet keeps the new leader\'s scale');
  // (Its scheduler may lead again: that Lease, free when it wakes if the other replica has not taken it yet, is
  // another election.)
  const again = readFileSync(log, 'utf8').slice(logBefore).split('\n').filter((l) => l.includes('"became leader"') && l.includes('kube-system/kube-controller-manager'));
  t.same(again, [], 'it did not lead the controller manager again');
});
