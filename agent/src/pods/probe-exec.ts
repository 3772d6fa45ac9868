/**
 * pods/probe-exec: running one probe, as the kubelet's prober does.
 * - tcpSocket: a TCP connect to host (default the Pod's IP) and port within
 *   timeoutSeconds; the agent runs in the node's namespace, which routes to
 *   its Pods over the bridge.
 * - httpGet: a GET (HTTPS without certificate checks, as the kubelet's);
 *   a status in 200-399 is a success; redirects are not followed.
 * - exec: the command inside the container: the Pod's namespaces and the
 *   run's own mount namespace (its volumes, its /etc/hosts), in its working
 *   directory, with its environment (nsenter), detached; exit 0 is a
 *   success; on a timeout its whole process group is killed and the probe
 *   failed.
 * Every probe resolves to { ok, message } and never throws.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { joinCommand, type SandboxRef } from '../netns/pause-holder.js';
import type { ProbeAction } from './pod-spec.js';

export interface ProbeOutcome {
  readonly ok: boolean;
  readonly message: string;
}

export interface ProbeTarget {
  readonly podIP: string;
  readonly sandbox: SandboxRef;
  readonly timeoutMs: number;
  readonly env: Readonly<Record<string, string>>;
  /** The container's supervisor (host pid): its mount namespace is the container's. */
  readonly pid?: number;
  readonly workingDir?: string | null;
}

export function runProbe(action: ProbeAction, o: ProbeTarget): Promise<ProbeOutcome> {
  switch (action.kind) {
    case 'tcpSocket': return tcpProbe(action.host || o.podIP, action.port, o.timeoutMs);
    case 'httpGet': return httpProbe(action, action.host || o.podIP, o.timeoutMs);
    case 'exec': return execProbe(o, action.command);
  }
}

/** nsenter argv into the container: the sandbox's namespaces, the run's mount namespace, its working directory. */
export function containerCommand(o: Pick<ProbeTarget, 'sandbox' | 'pid' | 'workingDir'>, command: readonly string[]): string[] {
  const base = joinCommand(o.sandbox, command);
  if (o.pid === undefined) return base;
  const cut = base.indexOf('--');
  const opts = base.slice(1, cut).filter((a) => !a.startsWith('--mount=') && !a.startsWith('--wd='));
  return [base[0]!, ...opts, `--mount=/proc/${o.pid}/ns/mnt`, ...(o.workingDir ? [`--wd=${o.workingDir}`] : []), ...base.slice(cut)];
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (r: ProbeOutcome) => {
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ ok: false, message: `dial tcp ${host}:${port}: i/o timeout` }), timeoutMs);
    s.once('connect', () => done({ ok: true, message: '' }));
    s.once('error', (e) => done({ ok: false, message: `dial tcp ${host}:${port}: ${e.message}` }));
  });
}

function httpProbe(a: Extract<ProbeAction, { kind: 'httpGet' }>, host: string, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const url = `${a.scheme.toLowerCase()}://${host}:${a.port}${a.path.startsWith('/') ? a.path : `/${a.path}`}`;
    const headers: Record<string, string> = { 'User-Agent': 'kube-probe/1.32', Accept: '*/*' };
    for (const h of a.headers) headers[h.name] = h.value;
    const req = (a.scheme === 'HTTPS' ? httpsRequest : httpRequest)(url, { method: 'GET', headers, rejectUnauthorized: false, timeout: timeoutMs }, (res) => {
      res.resume();
      const code = res.statusCode ?? 0;
      resolve(code >= 200 && code < 400 ? { ok: true, message: '' } : { ok: false, message: `HTTP probe failed with statuscode: ${code}` });
    });
    req.on('timeout', () => req.destroy(new Error(`Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`)));
    req.on('error', (e) => resolve({ ok: false, message: e.message.startsWith('Get ') ? e.message : `Get "${url}": ${e.message}` }));
    req.end();
  });
}

function execProbe(o: ProbeTarget, command: readonly string[]): Promise<ProbeOutcome> {
  const { timeoutMs, env } = o;
  return new Promise((resolve) => {
    const [cmd, ...args] = containerCommand(o, command);
    const p = spawn(cmd!, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...env } });
    let out = '';
    const take = (d: Buffer) => { if (out.length < 10_000) out += d.toString(); };
    p.stdout!.on('data', take);
    p.stderr!.on('data', take);
    const timer = setTimeout(() => {
      try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ }
      resolve({ ok: false, message: `command ${JSON.stringify(command.join(' '))} timed out` });
    }, timeoutMs);
    p.on('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, message: e.message });
    });
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve(code === 0 ? { ok: true, message: '' } : { ok: false, message: `command ${JSON.stringify(command.join(' '))} exited with ${code ?? 'a signal'}: ${out.trim().slice(0, 500)}` });
    });
  });
}
