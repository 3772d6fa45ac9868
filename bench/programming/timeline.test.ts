import t from 'tap';
import { failedSyncs, freshPhases, parseLog, syncFor } from './timeline.js';

const at = (s: string) => Date.parse(`2026-12-01T15:54:${s}Z`);
const line = (o: Record<string, unknown>) => JSON.stringify({ level: 30, pid: 1, name: 'nodenet', ...o });

// What the agent (at debug) and the control plane write, trimmed to the fields read.
const AGENT = [
  line({ time: '2026-12-01T15:54:49.551Z', subsys: 'watch', msg: 'node registered' }),
  line({ time: '2026-12-01T15:54:49.823Z', podCIDR: '10.244.0.0/24', msg: 'pod CIDR from the Node object' }),
  line({ time: '2026-12-01T15:54:50.147Z', level: 20, subsys: 'proxy', msg: 'not syncing: waiting for the initial lists (Services pending, EndpointSlices pending)' }),
  line({ time: '2026-12-01T15:54:50.309Z', subsys: 'proxy-host', count: 1, msg: 'proxy started in nftables mode, node IPs 192.168.77.11' }),
  line({ time: '2026-12-01T15:54:50.707Z', level: 20, subsys: 'proxy/nftables', durationMs: 366, msg: 'nftables full sync: 1420 rules, 402 elements, 600 chains written, 331492 bytes' }),
  line({ time: '2026-12-01T15:54:50.708Z', subsys: 'proxy', scope: 'full', reason: 'first', durationMs: 397, count: 201, msg: 'proxy rules synced: 201 service ports, 400 endpoints' }),
  'Error: a stack trace line on stderr is not JSON',
  '{"time": "not a time", "msg": "skipped"}',
  line({ time: '2026-12-01T15:54:55.100Z', subsys: 'proxy', scope: 'partial', reason: 'partial', durationMs: 70, msg: 'proxy rules synced: 201 service ports, 400 endpoints, 1 changed Services' }),
  line({ time: '2026-12-01T15:54:56.000Z', level: 20, subsys: 'proxy/nftables', durationMs: 30, msg: 'nftables partial sync: 9 rules, 2 elements, 3 chains written, 900 bytes' }),
  line({ time: '2026-12-01T15:54:56.020Z', subsys: 'proxy', scope: 'partial', reason: 'partial', durationMs: 45, msg: 'proxy rules synced: 201 service ports, 400 endpoints, 1 changed Services' }),
].join('\n');

const req = (time: string, verb: string, path: string, user: string, durationMs: number) =>
  line({ time, subsys: 'controlplane/api', verb, path, user, code: 200, durationMs, msg: 'request' });
const SERVER = [
  req('2026-12-01T15:54:40.000Z', 'create', '/api/v1/namespaces/default/services', 'admin', 1),
  req('2026-12-01T15:54:49.500Z', 'create', '/api/v1/nodes', 'system:node:n1', 20),
  req('2026-12-01T15:54:50.150Z', 'list', '/api/v1/services', 'system:node:n1', 10),
  req('2026-12-01T15:54:50.170Z', 'list', '/apis/discovery.k8s.io/v1/endpointslices', 'system:node:n1', 25.5),
  // Watches are logged when they end (the agent stopped), with how long they were open.
  req('2026-12-01T15:54:59.000Z', 'watch', '/api/v1/nodes', 'system:node:n1', 9400),
  req('2026-12-01T15:54:59.000Z', 'watch', '/api/v1/services', 'system:node:n1', 8800),
  req('2026-12-01T15:54:59.010Z', 'watch', '/apis/discovery.k8s.io/v1/endpointslices', 'system:node:n1', 8790),
].join('\n');

t.test('parseLog keeps pino lines with a time and a message, and the fields the bench reads', async (t) => {
  const a = parseLog(AGENT);
  t.equal(a.length, 9, 'the stack line and the unparseable time are skipped');
  t.same(a[4], { time: at('50.707'), msg: 'nftables full sync: 1420 rules, 402 elements, 600 chains written, 331492 bytes', level: 20, subsys: 'proxy/nftables', durationMs: 366, scope: null, verb: null, path: null, user: null, err: null });
  t.equal(parseLog(SERVER)[2]!.verb, 'list');
  t.same(parseLog(''), []);
});

t.test('freshPhases: spawn → first request → pod CIDR → lists received → proxy started → sync → status seen', async (t) => {
  const spawnAt = at('48.000');
  const seenAt = at('50.730');
  const p = freshPhases({ spawnAt, seenAt, agent: parseLog(AGENT), server: parseLog(SERVER), user: 'system:node:n1' });
  if ('missing' in p) throw new Error(p.missing.join('; '));
  t.equal(p.startupMs, 1480, 'the first request was received at 49.480 (logged at its end, 20 ms later)');
  t.equal(p.registrationMs, 343, 'to "pod CIDR from the Node object", not to "node registered"');
  t.equal(p.agentStartMs, 317, 'the Services list was received at 50.140, the slices at 50.1445: the earlier counts');
  t.equal(p.listMs, 169);
  t.equal(p.servedMs, 30, 'both lists served by 50.170');
  t.equal(p.deliverMs, 50, 'both watches requested by 50.220 (the slices\' at 59.010 - 8.790)');
  t.equal(p.watchOpenMs, 89, 'open at "proxy started", 50.309');
  t.equal(p.servedMs + p.deliverMs! + p.watchOpenMs!, p.listMs);
  t.equal(p.queueMs, 2, 'the sync started at 50.708 - 397 = 50.311');
  t.equal(p.failedSyncs, 0);
  t.equal(p.firstError, null);
  t.equal(p.syncMs, 397);
  t.equal(p.backendMs, 366, 'the backend line inside the sync');
  t.equal(p.rules, 1420, 'its rule count');
  t.equal(p.statusMs, 22);
  t.equal(p.totalMs, 2730);
  t.equal(p.startupMs + p.registrationMs + p.agentStartMs + p.listMs + p.queueMs + p.syncMs + p.statusMs, p.totalMs, 'the phases add up');
});

t.test('freshPhases: a failed first sync is counted in the queue, with its error', async (t) => {
  const failing = [
    line({ time: '2026-12-01T15:54:50.309Z', subsys: 'proxy-host', msg: 'proxy started in iptables mode, node IPs 192.168.77.11' }),
    line({ time: '2026-12-01T15:56:50.400Z', level: 50, subsys: 'proxy', err: { type: 'NodenetError', message: 'iptables-nft-restore --noflush -w timed out after 120000 ms and was killed' }, scope: 'full', msg: 'proxy sync failed; retrying in 1000 ms with a full sync' }),
    line({ time: '2026-12-01T15:58:40.000Z', subsys: 'proxy', scope: 'full', reason: 'after-failure', durationMs: 108_000, msg: 'proxy rules synced: 201 service ports, 400 endpoints' }),
  ].join('\n');
  const agent = parseLog(AGENT).filter((l) => !/proxy (started|rules synced)/.test(l.msg)).concat(parseLog(failing)).sort((a, b) => a.time - b.time);
  const end = Date.parse('2026-12-01T15:58:40.000Z');
  const p = freshPhases({ spawnAt: at('48.000'), seenAt: end + 50, agent, server: parseLog(SERVER), user: 'system:node:n1' });
  if ('missing' in p) throw new Error(p.missing.join('; '));
  t.equal(p.failedSyncs, 1);
  t.equal(p.firstError, 'iptables-nft-restore --noflush -w timed out after 120000 ms and was killed');
  t.equal(p.queueMs, end - 108_000 - at('50.309'), 'from "proxy started" to the start of the sync that succeeded (121.691 s)');
  t.equal(p.syncMs, 108_000);
  t.same(failedSyncs(agent, at('48.000')), { count: 1, firstError: 'iptables-nft-restore --noflush -w timed out after 120000 ms and was killed' });
  t.same(failedSyncs(agent, end), { count: 0, firstError: null }, 'none after the success');
});

t.test('freshPhases without the WATCH lines (the agent still running): the lists are not split', async (t) => {
  const server = parseLog(SERVER).filter((l) => l.verb !== 'watch');
  const p = freshPhases({ spawnAt: at('48.000'), seenAt: at('50.730'), agent: parseLog(AGENT), server, user: 'system:node:n1' });
  if ('missing' in p) throw new Error(p.missing.join('; '));
  t.equal(p.listMs, 169);
  t.equal(p.servedMs, 30);
  t.equal(p.deliverMs, null);
  t.equal(p.watchOpenMs, null);
});

t.test('freshPhases names what the logs lack; lines before the spawn do not count', async (t) => {
  const r = freshPhases({ spawnAt: at('55.000'), seenAt: at('57.000'), agent: parseLog(AGENT), server: parseLog(SERVER), user: 'system:node:n1' });
  t.ok('missing' in r);
  if (!('missing' in r)) return;
  t.match(r.missing, [/a request by system:node:n1/, /LISTs/, /pod CIDR/, /proxy started/, /full "proxy rules synced"/]);
  const other = freshPhases({ spawnAt: at('48.000'), seenAt: at('50.730'), agent: parseLog(AGENT), server: parseLog(SERVER), user: 'system:node:n2' });
  t.ok('missing' in other, 'another node\'s requests are not this one\'s');
});

t.test('syncFor: the last sync to end between the write and the status seen, with its backend line', async (t) => {
  const a = parseLog(AGENT);
  t.same(syncFor(a, at('55.500'), at('56.030')), { start: at('55.975'), end: at('56.020'), durationMs: 45, scope: 'partial', backendMs: 30, rules: 9 });
  t.same(syncFor(a, at('55.000'), at('55.200')), { start: at('55.030'), end: at('55.100'), durationMs: 70, scope: 'partial', backendMs: null, rules: null }, 'no backend line inside that sync');
  t.equal(syncFor(a, at('56.500'), at('57.000')), null, 'no sync in the window');
  t.equal(syncFor(a, at('56.021'), at('56.030'))?.end, at('56.020'), 'log times are whole ms: 1 ms of slack');
});
