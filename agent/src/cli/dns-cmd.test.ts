/**
 * `nodenet dns`: its flags (pure), and the command itself against a real control plane on loopback (no root): the
 * real dig asks it for the cluster's names, a Service created with the real kubectl is answered within the
 * second, /ready is 200 once the lists arrived and 503 "Shutting down" during the lameduck, a name outside the
 * cluster with no upstream is SERVFAIL at once, and SIGTERM ends it with 0.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { startControlPlane } from '../../../controlplane/control-plane.js';
import { silentLogger } from '../../../lib/log/log.js';
import { waitFor } from '../testing/wait.js';
import { dnsCommand, dnsOptionsFromArgs, parseHostPort } from './dns-cmd.js';

t.test('flags: defaults as CoreDNS deployed by kubeadm, and bad values refused by name', async (t) => {
  const d = dnsOptionsFromArgs([]);
  t.same([d.kubeconfig, d.listen, d.domain, d.upstreams, d.resolvConf, d.ttl, d.lameduckMs, d.metricsPort, d.healthPort, d.readyPort],
    ['in-cluster', { host: '0.0.0.0', port: 53 }, 'cluster.local', null, '/etc/resolv.conf', 5, 5000, 9153, 8080, 8181]);
  const o = dnsOptionsFromArgs(['--listen', '127.0.0.1:5353', '--upstream', '10.0.0.2, 10.0.0.3:5300', '--cluster-domain', 'Corp.Example.', '--ttl', '30']);
  t.same([o.listen, o.upstreams, o.domain, o.ttl], [{ host: '127.0.0.1', port: 5353 }, [{ host: '10.0.0.2', port: 53 }, { host: '10.0.0.3', port: 5300 }], 'corp.example', 30]);
  t.same(dnsOptionsFromArgs(['--upstream', '']).upstreams, [], 'an empty list: no upstream');
  t.same(parseHostPort('listen', '[::1]:53', null), { host: '::1', port: 53 });
  t.throws(() => dnsOptionsFromArgs(['--listen', 'localhost:53']), /--listen "localhost:53": expected IP:PORT/);
  t.throws(() => dnsOptionsFromArgs(['--upstream', '10.0.0.1', '--resolv-conf', '/x']), /give one/);
  t.throws(() => dnsOptionsFromArgs(['--cluster-domain', 'a_b']), /--cluster-domain "a_b": expected a DNS name/);
  t.throws(() => dnsOptionsFromArgs(['--ttl=-1']), /--ttl "-1"/);
  t.throws(() => dnsOptionsFromArgs(['--metrics-port', '70000']), /--metrics-port "70000"/);
  t.throws(() => dnsOptionsFromArgs(['extra']), /unexpected argument "extra"/);
});

const freePort = () => new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});

t.test('against a real control plane: dig answered, a new Service within the second, /ready, SERVFAIL with no upstream, SIGTERM', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-dns-cmd-'));
  const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir, disable: ['coredns'] });
  t.teardown(async () => {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const readyPort = await freePort();
  const out: string[] = [];
  let term: () => void = () => undefined;
  const done = dnsCommand(['--kubeconfig', cp.kubeconfig, '--listen', '127.0.0.1:0', '--upstream', '', '--metrics-port', '0', '--health-port', '0', '--ready-port', String(readyPort), '--lameduck-ms', '500'], {
    stdout: (s) => out.push(s), log: silentLogger(), onSignal: (fn) => { term = fn; return () => undefined; },
  });
  await waitFor(() => out.length > 0, 'the serving line');
  const port = Number(/udp=127\.0\.0\.1:(\d+)/.exec(out[0]!)?.[1]);
  t.match(out[0], /upstream=none/);
  const ready = async () => { try { const r = await fetch(`http://127.0.0.1:${readyPort}/ready`); return `${r.status} ${await r.text()}`; } catch (e) { return String(e); } };
  await waitFor(async () => (await ready()) === '200 OK', '/ready 200 once the lists arrived');
  const dig = async (...args: string[]) => (await execa('dig', ['@127.0.0.1', '-p', String(port), '+time=2', '+tries=1', ...args], { reject: false })).stdout;
  t.equal((await dig('+short', 'kubernetes.default.svc.cluster.local')).trim(), '10.96.0.1', 'the kubernetes Service');
  t.equal((await dig('+short', '+tcp', 'kubernetes.default.svc.cluster.local')).trim(), '10.96.0.1', 'over TCP too');
  await execa('kubectl', ['--kubeconfig', cp.kubeconfig, 'create', 'service', 'clusterip', 'fresh', '--tcp=80:8080']);
  const ip = (await execa('kubectl', ['--kubeconfig', cp.kubeconfig, 'get', 'svc', 'fresh', '-o', 'jsonpath={.spec.clusterIP}'])).stdout.trim();
  await waitFor(async () => (await dig('+short', 'fresh.default.svc.cluster.local')).trim() === ip, 'the new Service answered', { timeoutMs: 5000, intervalMs: 20 });
  t.pass(`fresh.default.svc.cluster.local -> ${ip}`);
  const ext = await dig('www.example.com');
  t.match(ext, /status: SERVFAIL/, 'outside the cluster with no upstream: SERVFAIL');
  t.ok(Number(/Query time: (\d+) msec/.exec(ext)?.[1]) < 2000, 'at once, not after a timeout');
  term();
  await waitFor(async () => (await ready()) === '503 Shutting down', '/ready 503 during the lameduck', { timeoutMs: 400, intervalMs: 20 });
  t.equal((await dig('+short', 'kubernetes.default.svc.cluster.local')).trim(), '10.96.0.1', 'still answering during the lameduck');
  t.equal(await done, 0, 'exit 0');
});
